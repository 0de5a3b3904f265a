package agentauth_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/idempotency/redisstore"
	"github.com/agentcap/agentcap/internal/benchcpu"
)

// benchIdempotent is BenchmarkVerifiedExecute with an Idempotency-Key on
// every request, each key new: every call claims its key, runs, and
// stores its answer (the replay of a stored answer is cheaper).
func benchIdempotent(b *testing.B, store idempotency.Store) {
	guard, err := idempotency.New(idempotency.Config{Store: store})
	if err != nil {
		b.Fatal(err)
	}
	w := newBenchWorld(b, func(cfg *httpx.Config[agentauth.Caller[string]]) {
		cfg.LongRunning.Idempotency = guard
	})
	tokens := w.tokens(b.N)
	bearer := make([]string, len(tokens))
	keys := make([]string, len(tokens))
	run := fmt.Sprintf("%p", guard)
	for i, t := range tokens {
		bearer[i] = "Bearer " + t
		keys[i] = fmt.Sprintf("bench-%s-%d", run, i)
	}
	auth, key := []string{""}, []string{""}
	body := []byte(benchBody)
	rd := bytes.NewReader(body)
	req := httptest.NewRequest(http.MethodPost, "/capability/execute", nil)
	req.Header.Set("Content-Type", "application/json")
	rw := &benchWriter{header: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	defer benchcpu.Report(b)()
	for i := range b.N {
		rd.Reset(body)
		req.Body = io.NopCloser(rd)
		auth[0], key[0] = bearer[i], keys[i]
		req.Header["Authorization"] = auth
		req.Header["Idempotency-Key"] = key
		rw.reset()
		w.handler.ServeHTTP(rw, req)
		if rw.code != http.StatusOK {
			b.Fatalf("status %d: %s", rw.code, rw.body.Bytes())
		}
	}
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
	benchIdempotent(b, redisstore.New(c, "agentcap_bench:"))
}
