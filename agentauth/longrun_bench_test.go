package agentauth_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/redisstore"
)

// benchIdempotent is BenchmarkVerifiedExecute with an Idempotency-Key on
// every request, each key new: every call claims its key, runs, and
// stores its answer (the replay of a stored answer is cheaper).
func benchIdempotent(b *testing.B, store idempotency.Store) {
	// One agent sends every key: b.N of them, beyond the default bound
	// of a caller's keys.
	guard, err := idempotency.New(idempotency.Config{Store: store, MaxKeysPerScope: -1})
	if err != nil {
		b.Fatal(err)
	}
	w := newBenchWorld(b, func(cfg *httpx.Config) {
		cfg.LongRunning.Idempotency = guard
	})
	keys := make([]string, b.N)
	run := fmt.Sprintf("%p", guard)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench-%s-%d", run, i)
	}
	runVerified(b, w, keys, nil)
}

// BenchmarkVerifiedExecuteIdempotentMemory: the idempotency keys in
// memory.
func BenchmarkVerifiedExecuteIdempotentMemory(b *testing.B) {
	benchIdempotent(b, idempotency.NewMemoryStore())
}

// BenchmarkVerifiedExecuteIdempotentRedis: the idempotency keys in the
// Redis server at AGENTCAP_REDIS_ADDR (skipped without it).
func BenchmarkVerifiedExecuteIdempotentRedis(b *testing.B) {
	addr := os.Getenv("AGENTCAP_REDIS_ADDR")
	if addr == "" {
		b.Skip("AGENTCAP_REDIS_ADDR is not set")
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	st, err := redisstore.New(context.Background(), c, redisstore.Config{Prefix: "agentcap_bench:"})
	if err != nil {
		b.Fatal(err)
	}
	benchIdempotent(b, st.Idempotency())
}
