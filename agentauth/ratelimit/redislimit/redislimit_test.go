package redislimit_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/agentauth/ratelimit/internal/limittest"
	"github.com/agentcap/agentcap/agentauth/ratelimit/redislimit"
	"github.com/agentcap/agentcap/internal/servicetest"
)

// redisClient connects to the Redis server named by AGENTCAP_REDIS_ADDR
// (a loopback address such as 127.0.0.1:6379). Without it the test is
// skipped, except under CI, where these tests must run. It returns the
// client and a key prefix unique to this test, whose keys are deleted
// when the test ends.
func redisClient(t testing.TB) (*redis.Client, string) {
	t.Helper()
	addr := os.Getenv("AGENTCAP_REDIS_ADDR")
	if addr == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("AGENTCAP_REDIS_ADDR is not set; CI must run the Redis rate limit tests against a loopback redis-server")
		}
		t.Skip("AGENTCAP_REDIS_ADDR is not set; start redis-server on loopback and set it to run these tests")
	}
	client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, PoolSize: 64})
	ctx := context.Background()
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		t.Fatalf("redis at %s: %v", addr, err)
	}
	prefix := fmt.Sprintf("agentcap-test:%d:%d:%s:", os.Getpid(), time.Now().UnixNano(), t.Name())
	t.Cleanup(func() {
		defer client.Close()
		var keys []string
		iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if len(keys) > 0 {
			if err := client.Del(ctx, keys...).Err(); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	return client, prefix
}

// newLimiter returns a Limiter on client under prefix.
func newLimiter(t testing.TB, client redis.UniversalClient, prefix string) *redislimit.Limiter {
	t.Helper()
	l, err := redislimit.New(context.Background(), client, redislimit.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLimiter(t *testing.T) {
	limittest.Run(t, func(t *testing.T, clock *limittest.Clock) ratelimit.Limiter {
		client, prefix := redisClient(t)
		return newLimiter(t, client, prefix).WithClock(clock.Now)
	})
}

// TestLimiterServerClock uses Redis's own clock, as production does.
func TestLimiterServerClock(t *testing.T) {
	client, prefix := redisClient(t)
	l := newLimiter(t, client, prefix)
	ctx := context.Background()
	limit := ratelimit.Limit{N: 2, Window: time.Hour}
	for i, want := range []bool{true, true, false} {
		d, err := l.Allow(ctx, "k", limit)
		if err != nil || d.Allowed != want {
			t.Fatalf("request %d: %+v, %v; want allowed=%v", i, d, err, want)
		}
		if !want && (d.RetryAfter <= 29*time.Minute || d.RetryAfter > 30*time.Minute) {
			t.Errorf("RetryAfter = %v, want just under 30m", d.RetryAfter)
		}
	}
	// The key expires with its bucket: never later than the window.
	pttl, err := client.PTTL(ctx, prefix+"k").Result()
	if err != nil || pttl <= 59*time.Minute || pttl > time.Hour {
		t.Errorf("PTTL = %v, %v; want just under 1h", pttl, err)
	}
	// A short window comes back by itself.
	short := ratelimit.Limit{N: 1, Window: 50 * time.Millisecond}
	if d, err := l.Allow(ctx, "short", short); err != nil || !d.Allowed {
		t.Fatalf("short: %+v, %v", d, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, err := l.Allow(ctx, "short", short)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the short window did not reopen within 5s")
		}
		time.Sleep(d.RetryAfter)
	}
}

// TestLimiterSharedAcrossInstances: two limiters (two application
// instances) on one Redis share one budget.
func TestLimiterSharedAcrossInstances(t *testing.T) {
	client, prefix := redisClient(t)
	other := redis.NewClient(&redis.Options{Addr: os.Getenv("AGENTCAP_REDIS_ADDR")})
	defer other.Close()
	a, b := newLimiter(t, client, prefix), newLimiter(t, other, prefix)
	ctx := context.Background()
	limit := ratelimit.PerMinute(1)
	if d, err := a.Allow(ctx, "agent:agt_1", limit); err != nil || !d.Allowed {
		t.Fatalf("instance a: %+v, %v", d, err)
	}
	if d, err := b.Allow(ctx, "agent:agt_1", limit); err != nil || d.Allowed {
		t.Fatalf("instance b: %+v, %v; want refused", d, err)
	}
}

func TestLimiterErrors(t *testing.T) {
	client, prefix := redisClient(t)
	l := newLimiter(t, client, prefix)
	if _, err := l.Allow(context.Background(), "k", ratelimit.Limit{N: 1000, Window: 999 * time.Microsecond}); err == nil {
		t.Error("a sub-microsecond period was accepted")
	}
	// A key holding something else is an error, not a decision.
	if err := client.HSet(context.Background(), prefix+"hash", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if d, err := l.Allow(context.Background(), "hash", ratelimit.PerMinute(1)); err == nil {
		t.Errorf("wrong key type: %+v, want an error", d)
	}
	// An unreachable server is an error, not a decision.
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer down.Close()
	unreachable, err := redislimit.New(context.Background(), down, redislimit.Config{Prefix: prefix, AcceptEviction: true})
	if err != nil {
		t.Fatal(err)
	}
	d, err := unreachable.Allow(context.Background(), "k", ratelimit.PerMinute(1))
	if err == nil || d.Allowed || !strings.HasPrefix(err.Error(), "redislimit:") {
		t.Errorf("unreachable: %+v, %v", d, err)
	}
}

func BenchmarkLimiter(b *testing.B) {
	client, prefix := redisClient(b)
	l := newLimiter(b, client, prefix)
	ctx := context.Background()
	limit := ratelimit.Limit{N: 1 << 30, Window: time.Hour}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Allow(ctx, "bench", limit); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNewRefusesEvictingRedis: on a Redis whose maxmemory-policy evicts,
// or which will not say (CONFIG GET refused), New refuses to start unless
// the application accepts the risk.
func TestNewRefusesEvictingRedis(t *testing.T) {
	addr := servicetest.RedisServer(t, "--maxmemory-policy", "allkeys-lru")
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	_, err := redislimit.New(ctx, client, redislimit.Config{Prefix: "l:"})
	if err == nil || !strings.Contains(err.Error(), "maxmemory-policy is allkeys-lru") {
		t.Fatalf("New on allkeys-lru: %v; want a refusal naming the policy", err)
	}
	if _, err := redislimit.New(ctx, client, redislimit.Config{Prefix: "l:", AcceptEviction: true}); err != nil {
		t.Fatalf("New accepting eviction: %v", err)
	}
	if err := client.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	limited := redis.NewClient(&redis.Options{Addr: addr, Username: "app", Password: "pw"})
	defer limited.Close()
	if _, err := redislimit.New(ctx, limited, redislimit.Config{Prefix: "l:"}); err == nil || !strings.Contains(err.Error(), "cannot read Redis's maxmemory-policy") {
		t.Fatalf("New without CONFIG: %v; want a refusal saying the policy cannot be read", err)
	}
}
