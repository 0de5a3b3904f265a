package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcap/agentcap/agentauth/ratelimit"
)

// newLimiterFunc makes the limiter under test.
type newLimiterFunc = func(t *testing.T, now func() time.Time) ratelimit.Limiter

// limiterClock is a settable clock, safe for concurrent use.
type limiterClock struct {
	mu sync.Mutex
	t  time.Time
}

// newLimiterClock returns a clock at a fixed instant.
func newLimiterClock() *limiterClock {
	return &limiterClock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *limiterClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *limiterClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Limiter runs the suite of a ratelimit.Limiter. newLimiter returns a
// limiter reading the present from now, whose keys no other test shares.
func Limiter(t *testing.T, newLimiter func(t *testing.T, now func() time.Time) ratelimit.Limiter) {
	t.Run("BurstThenSpacing", func(t *testing.T) { testBurst(t, newLimiter) })
	t.Run("KeysAreIndependent", func(t *testing.T) { testKeys(t, newLimiter) })
	t.Run("NeverMoreThanNPerWindow", func(t *testing.T) { testWindow(t, newLimiter) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, newLimiter) })
	t.Run("InvalidLimits", func(t *testing.T) { testInvalid(t, newLimiter) })
}

var limiterCtx = context.Background()

func testBurst(t *testing.T, newLimiter newLimiterFunc) {
	clock := newLimiterClock()
	l := newLimiter(t, clock.Now)
	limit := ratelimit.Limit{N: 3, Window: 3 * time.Second}
	for i, step := range []struct {
		advance time.Duration
		want    ratelimit.Decision
	}{
		{0, ratelimit.Decision{Allowed: true, Remaining: 2, ResetAfter: time.Second}},
		{0, ratelimit.Decision{Allowed: true, Remaining: 1, ResetAfter: 2 * time.Second}},
		{0, ratelimit.Decision{Allowed: true, Remaining: 0, ResetAfter: 3 * time.Second}},
		{0, ratelimit.Decision{RetryAfter: time.Second, ResetAfter: 3 * time.Second}},
		// A refused request is not counted.
		{400 * time.Millisecond, ratelimit.Decision{RetryAfter: 600 * time.Millisecond, ResetAfter: 2600 * time.Millisecond}},
		{600 * time.Millisecond, ratelimit.Decision{Allowed: true, Remaining: 0, ResetAfter: 3 * time.Second}},
		{0, ratelimit.Decision{RetryAfter: time.Second, ResetAfter: 3 * time.Second}},
		// After a whole window at rest, the whole burst again.
		{3 * time.Second, ratelimit.Decision{Allowed: true, Remaining: 2, ResetAfter: time.Second}},
		{time.Hour, ratelimit.Decision{Allowed: true, Remaining: 2, ResetAfter: time.Second}},
	} {
		clock.Advance(step.advance)
		got, err := l.Allow(limiterCtx, "burst", limit)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got != step.want {
			t.Errorf("step %d: %+v, want %+v", i, got, step.want)
		}
	}
}

func testKeys(t *testing.T, newLimiter newLimiterFunc) {
	clock := newLimiterClock()
	l := newLimiter(t, clock.Now)
	limit := ratelimit.PerMinute(1)
	for _, key := range []string{ratelimit.Key(ratelimit.DimAgent, "a"), ratelimit.Key(ratelimit.DimAgent, "b"), ratelimit.Key(ratelimit.DimHost, "a")} {
		if d, err := l.Allow(limiterCtx, key, limit); err != nil || !d.Allowed {
			t.Errorf("%s first: %+v, %v", key, d, err)
		}
		if d, err := l.Allow(limiterCtx, key, limit); err != nil || d.Allowed || d.RetryAfter != time.Minute {
			t.Errorf("%s second: %+v, %v", key, d, err)
		}
	}
}

// testWindow sends requests at irregular times and checks that no span t
// ever saw more than N + t/(Window/N) allowed, and that a steady client at
// the limit's rate is never refused.
func testWindow(t *testing.T, newLimiter newLimiterFunc) {
	clock := newLimiterClock()
	l := newLimiter(t, clock.Now)
	limit := ratelimit.Limit{N: 5, Window: time.Second}
	var allowed []time.Time
	x := uint32(1)
	for range 400 {
		x = x*1664525 + 1013904223 // deterministic irregular gaps
		clock.Advance(time.Duration(x>>22) * time.Millisecond / 4)
		d, err := l.Allow(limiterCtx, "window", limit)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			allowed = append(allowed, clock.Now())
		}
	}
	if len(allowed) < 50 {
		t.Fatalf("only %d allowed: the test did not exercise the limit", len(allowed))
	}
	period := limit.Window / time.Duration(limit.N)
	for i := range allowed {
		for j := i; j < len(allowed); j++ {
			span := allowed[j].Sub(allowed[i])
			if n, most := j-i+1, limit.N+int(span/period); n > most {
				t.Fatalf("%d requests allowed within %v; at most %d may pass", n, span, most)
			}
		}
	}
	for i := range 50 {
		clock.Advance(limit.Window / time.Duration(limit.N))
		if d, err := l.Allow(limiterCtx, "steady", limit); err != nil || !d.Allowed {
			t.Fatalf("steady request %d: %+v, %v", i, d, err)
		}
	}
}

func testConcurrent(t *testing.T, newLimiter newLimiterFunc) {
	clock := newLimiterClock()
	l := newLimiter(t, clock.Now)
	limit := ratelimit.PerMinute(10)
	for round := range 3 {
		key := fmt.Sprintf("race-%d", round)
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, err := l.Allow(limiterCtx, key, limit)
				if err != nil {
					t.Error(err)
				}
				if d.Allowed {
					wins.Add(1)
				}
			}()
		}
		wg.Wait()
		if n := wins.Load(); n != 10 {
			t.Errorf("round %d: %d allowed, want exactly 10", round, n)
		}
	}
}

func testInvalid(t *testing.T, newLimiter newLimiterFunc) {
	l := newLimiter(t, newLimiterClock().Now)
	for _, limit := range []ratelimit.Limit{{}, {N: 0, Window: time.Second}, {N: -1, Window: time.Second}, {N: 1}, {N: 1, Window: -time.Second}, {N: 10, Window: 5}} {
		if d, err := l.Allow(limiterCtx, "k", limit); err == nil || d.Allowed {
			t.Errorf("limit %v: %+v, %v; want an error", limit, d, err)
		}
	}
}
