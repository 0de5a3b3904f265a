package redisstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/redisstore"
	"github.com/agentcap/agentcap/storetest"
)

// newLimiter returns the rate limiter of a Store on client under prefix,
// and the prefix of the limiter's keys.
func newLimiter(t testing.TB, client redis.UniversalClient, prefix string) (*redisstore.Limiter, string) {
	t.Helper()
	return newStore(t, client, redisstore.Config{Prefix: prefix}).Limiter(), prefix + "limit:"
}

func TestLimiter(t *testing.T) {
	storetest.Limiter(t, func(t *testing.T, now func() time.Time) ratelimit.Limiter {
		client, base := servicetest.Redis(t)
		l, _ := newLimiter(t, client, base)
		return l.WithClock(now)
	})
}

// TestLimiterServerClock uses Redis's own clock, as production does.
func TestLimiterServerClock(t *testing.T) {
	client, base := servicetest.Redis(t)
	l, prefix := newLimiter(t, client, base)
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
	client, base := servicetest.Redis(t)
	other, _ := servicetest.Redis(t)
	a, _ := newLimiter(t, client, base)
	b, _ := newLimiter(t, other, base)
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
	client, base := servicetest.Redis(t)
	l, prefix := newLimiter(t, client, base)
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
	unreachable, err := redisstore.New(context.Background(), down, redisstore.Config{Prefix: base, AcceptEviction: true})
	if err != nil {
		t.Fatal(err)
	}
	d, err := unreachable.Limiter().Allow(context.Background(), "k", ratelimit.PerMinute(1))
	if err == nil || d.Allowed || !strings.HasPrefix(err.Error(), "redisstore:") {
		t.Errorf("unreachable: %+v, %v", d, err)
	}
}

func BenchmarkLimiter(b *testing.B) {
	client, base := servicetest.Redis(b)
	l, _ := newLimiter(b, client, base)
	ctx := context.Background()
	limit := ratelimit.Limit{N: 1 << 30, Window: time.Hour}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Allow(ctx, "bench", limit); err != nil {
			b.Fatal(err)
		}
	}
}
