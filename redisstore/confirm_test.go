package redisstore_test

import (
	"testing"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/redisstore"
	"github.com/agentcap/agentcap/storetest"
)

func TestConfirmConformance(t *testing.T) {
	prefixes := map[confirm.Store]string{}
	storetest.Confirm(t, storetest.ConfirmFactory{
		New: func(t *testing.T) confirm.Store {
			c, prefix := servicetest.Redis(t)
			s := newStore(t, c, redisstore.Config{Prefix: prefix}).Confirm()
			prefixes[s] = prefix
			return s
		},
		// A second client on the same server and prefix: another instance.
		Reopen: func(t *testing.T, s confirm.Store) confirm.Store {
			c, _ := servicetest.Redis(t)
			return newStore(t, c, redisstore.Config{Prefix: prefixes[s]}).Confirm()
		},
	})
}
