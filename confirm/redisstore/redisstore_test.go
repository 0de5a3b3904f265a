package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/confirm/confirmtest"
	"github.com/agentcap/agentcap/confirm/redisstore"
	"github.com/agentcap/agentcap/internal/servicetest"
)

func TestConformance(t *testing.T) {
	prefixes := map[confirm.Store]string{}
	confirmtest.Run(t, confirmtest.Factory{
		New: func(t *testing.T) confirm.Store {
			c, prefix := servicetest.Redis(t)
			s := redisstore.New(c, prefix)
			prefixes[s] = prefix
			return s
		},
		// A second client on the same server and prefix: another instance.
		Reopen: func(t *testing.T, s confirm.Store) confirm.Store {
			c, _ := servicetest.Redis(t)
			return redisstore.New(redis.UniversalClient(c), prefixes[s])
		},
	})
}
