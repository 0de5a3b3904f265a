package redisstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/confirm/redisstore"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/storetest"
)

func TestConformance(t *testing.T) {
	prefixes := map[confirm.Store]string{}
	storetest.Confirm(t, storetest.ConfirmFactory{
		New: func(t *testing.T) confirm.Store {
			c, prefix := servicetest.Redis(t)
			s, err := redisstore.New(context.Background(), c, redisstore.Config{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			prefixes[s] = prefix
			return s
		},
		// A second client on the same server and prefix: another instance.
		Reopen: func(t *testing.T, s confirm.Store) confirm.Store {
			c, _ := servicetest.Redis(t)
			r, err := redisstore.New(context.Background(), redis.UniversalClient(c), redisstore.Config{Prefix: prefixes[s]})
			if err != nil {
				t.Fatal(err)
			}
			return r
		},
	})
}

// TestNewRefusesEvictingRedis: on a Redis whose maxmemory-policy evicts,
// or which will not say (CONFIG GET refused), New refuses to start unless
// the application accepts the risk.
func TestNewRefusesEvictingRedis(t *testing.T) {
	addr := servicetest.RedisServer(t, "--maxmemory-policy", "volatile-ttl")
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	_, err := redisstore.New(ctx, client, redisstore.Config{Prefix: "s:"})
	if err == nil || !strings.Contains(err.Error(), "maxmemory-policy is volatile-ttl") {
		t.Fatalf("New on volatile-ttl: %v; want a refusal naming the policy", err)
	}
	if _, err := redisstore.New(ctx, client, redisstore.Config{Prefix: "s:", AcceptEviction: true}); err != nil {
		t.Fatalf("New accepting eviction: %v", err)
	}
	if err := client.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	limited := redis.NewClient(&redis.Options{Addr: addr, Username: "app", Password: "pw"})
	defer limited.Close()
	if _, err := redisstore.New(ctx, limited, redisstore.Config{Prefix: "s:"}); err == nil || !strings.Contains(err.Error(), "cannot read Redis's maxmemory-policy") {
		t.Fatalf("New without CONFIG: %v; want a refusal saying the policy cannot be read", err)
	}
}
