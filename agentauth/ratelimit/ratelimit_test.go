package ratelimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/storetest"
)

func TestMemory(t *testing.T) {
	storetest.Limiter(t, func(t *testing.T, now func() time.Time) ratelimit.Limiter {
		return ratelimit.NewMemory(0).WithClock(now)
	})
}

func TestMemoryBound(t *testing.T) {
	clock := newClock()
	m := ratelimit.NewMemory(4).WithClock(clock.Now)
	ctx := context.Background()
	limit := ratelimit.Limit{N: 2, Window: time.Minute}
	for i := range 4 {
		if d, err := m.Allow(ctx, fmt.Sprint("k", i), limit); err != nil || !d.Allowed {
			t.Fatalf("key %d: %+v, %v", i, d, err)
		}
	}
	if _, err := m.Allow(ctx, "k4", limit); !errors.Is(err, ratelimit.ErrFull) {
		t.Fatalf("fifth key: %v, want ErrFull", err)
	}
	// Known keys still get decisions when full.
	if d, err := m.Allow(ctx, "k0", limit); err != nil || !d.Allowed {
		t.Errorf("known key when full: %+v, %v", d, err)
	}
	// k0 is busier than the others: after half a window the others are
	// at rest and make room.
	clock.Advance(30 * time.Second)
	if d, err := m.Allow(ctx, "k4", limit); err != nil || !d.Allowed {
		t.Fatalf("after rest: %+v, %v", d, err)
	}
	if n := m.Len(); n != 2 {
		t.Errorf("Len = %d, want 2 (k0 and k4)", n)
	}
}

// TestMemorySweepsLazily: many short-lived keys do not accumulate.
func TestMemorySweepsLazily(t *testing.T) {
	clock := newClock()
	m := ratelimit.NewMemory(0).WithClock(clock.Now)
	limit := ratelimit.Limit{N: 1, Window: time.Millisecond}
	for i := range 20_000 {
		if _, err := m.Allow(context.Background(), fmt.Sprint(i), limit); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Millisecond)
	}
	// Each shard is swept when it doubles; at most about 2*64 keys per
	// shard survive between sweeps.
	if n := m.Len(); n > 64*2*64 {
		t.Errorf("Len = %d after 20000 keys at rest", n)
	}
}

func TestMemoryConcurrentBound(t *testing.T) {
	m := ratelimit.NewMemory(100)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				_, err := m.Allow(context.Background(), fmt.Sprintf("%d-%d", g, i), ratelimit.PerHour(5))
				switch {
				case err == nil:
					mu.Lock()
					admitted++
					mu.Unlock()
				case !errors.Is(err, ratelimit.ErrFull):
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if admitted != 100 || m.Len() != 100 {
		t.Errorf("admitted %d keys, Len %d; want exactly the bound, 100", admitted, m.Len())
	}
}

func TestMemoryCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ratelimit.NewMemory(0).Allow(ctx, "k", ratelimit.PerMinute(1)); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}

type fakeLimiter struct {
	calls []string
	deny  string
}

func (f *fakeLimiter) Allow(_ context.Context, key string, l ratelimit.Limit) (ratelimit.Decision, error) {
	f.calls = append(f.calls, key)
	if key == f.deny {
		return ratelimit.Decision{RetryAfter: time.Second}, nil
	}
	if key == "broken" {
		return ratelimit.Decision{}, errors.New("down")
	}
	return ratelimit.Decision{Allowed: true, Remaining: l.N - 1, ResetAfter: l.Window}, nil
}

func TestAllowAll(t *testing.T) {
	rules := []ratelimit.Rule{
		{Key: "agent", Limit: ratelimit.PerMinute(60)},
		{Key: "host", Limit: ratelimit.PerMinute(300)},
		{Key: "capability", Limit: ratelimit.PerHour(10)},
	}
	for _, tc := range []struct {
		name      string
		deny      string
		want      ratelimit.Decision
		wantCalls []string
		wantErr   bool
	}{
		{"all allow", "", ratelimit.Decision{Allowed: true, Remaining: 9, ResetAfter: time.Hour}, []string{"agent", "host", "capability"}, false},
		{"second refuses", "host", ratelimit.Decision{RetryAfter: time.Second}, []string{"agent", "host"}, false},
	} {
		f := &fakeLimiter{deny: tc.deny}
		got, err := ratelimit.AllowAll(context.Background(), f, rules...)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
		if diff := cmp.Diff(tc.wantCalls, f.calls); diff != "" {
			t.Errorf("%s: calls (-want +got):\n%s", tc.name, diff)
		}
	}
	if _, err := ratelimit.AllowAll(context.Background(), &fakeLimiter{}, ratelimit.Rule{Key: "broken", Limit: ratelimit.PerMinute(1)}); err == nil {
		t.Error("a limiter error was swallowed")
	}
	if _, err := ratelimit.AllowAll(context.Background(), &fakeLimiter{}); err == nil {
		t.Error("no rules: want an error")
	}
}

func TestKey(t *testing.T) {
	for _, tc := range []struct {
		dim   string
		parts []string
		want  string
	}{
		{ratelimit.DimAgent, []string{"agt_1"}, "agent:agt_1"},
		{ratelimit.DimCapability, []string{"transfer", "agt_1"}, "capability:transfer:agt_1"},
		{ratelimit.DimCapability, []string{"a:b", "c"}, "capability:a%3Ab:c"},
		{ratelimit.DimCapability, []string{"a", "b:c"}, "capability:a:b%3Ac"},
		{ratelimit.DimUser, []string{"100%"}, "user:100%25"},
		{ratelimit.DimUser, []string{"%3A"}, "user:%253A"},
		{ratelimit.DimHost, nil, "host"},
		{ratelimit.DimHost, []string{""}, "host:"},
	} {
		if got := ratelimit.Key(tc.dim, tc.parts...); got != tc.want {
			t.Errorf("Key(%q, %q) = %q, want %q", tc.dim, tc.parts, got, tc.want)
		}
	}
}

func TestIPKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"192.0.2.7", "ip:192.0.2.7"},
		{"192.0.2.7:51234", "ip:192.0.2.7"},
		{"::ffff:192.0.2.7", "ip:192.0.2.7"},
		{"[::ffff:192.0.2.7]:80", "ip:192.0.2.7"},
		{"2001:db8:1:2:3:4:5:6", "ip:2001%3Adb8%3A1%3A2%3A%3A/64"},
		{"[2001:db8:1:2:ffff::1]:443", "ip:2001%3Adb8%3A1%3A2%3A%3A/64"},
		{"fe80::1%eth0", "ip:fe80%3A%3A/64"},
		{"[::1]:8080", "ip:%3A%3A/64"},
	} {
		got, err := ratelimit.IPKey(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("IPKey(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "example.com:80", "300.1.1.1", ":80", "[::1", "1.2.3.4:80:90", "[1.2.3.4]"} {
		if got, err := ratelimit.IPKey(bad); err == nil {
			t.Errorf("IPKey(%q) = %q, want an error", bad, got)
		}
	}
}

func FuzzIPKey(f *testing.F) {
	for _, s := range []string{"192.0.2.7", "[::1]:80", "2001:db8::1", "::ffff:1.2.3.4", "fe80::1%eth0", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		key, err := ratelimit.IPKey(addr)
		if err != nil {
			return
		}
		if !strings.HasPrefix(key, "ip:") || strings.Count(key, ":") != 1 {
			t.Fatalf("IPKey(%q) = %q: not one escaped part", addr, key)
		}
		// The key is stable: the address it names maps to itself.
		again, err := ratelimit.IPKey(strings.TrimSuffix(unescape(key[3:]), "/64"))
		if err != nil || again != key {
			t.Fatalf("IPKey(%q) = %q, but its address gives %q, %v", addr, key, again, err)
		}
	})
}

func unescape(s string) string {
	return strings.NewReplacer("%3A", ":", "%25", "%").Replace(s)
}

// FuzzKey: distinct parts never give one key.
func FuzzKey(f *testing.F) {
	f.Add("a:b", "c", "a", "b:c")
	f.Add("%3A", "", ":", "")
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		k1, k2 := ratelimit.Key("capability", a, b), ratelimit.Key("capability", c, d)
		if (k1 == k2) != (a == c && b == d) {
			t.Fatalf("Key(%q, %q) = %q and Key(%q, %q) = %q", a, b, k1, c, d, k2)
		}
		parts := strings.Split(k1, ":")
		if len(parts) != 3 || unescape(parts[1]) != a || unescape(parts[2]) != b {
			t.Fatalf("Key(%q, %q) = %q does not split back", a, b, k1)
		}
	})
}

func TestError(t *testing.T) {
	for _, tc := range []struct {
		retry time.Duration
		secs  int
	}{
		{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {time.Second + 1, 2}, {30 * time.Second, 30}, {90*time.Second - time.Millisecond, 90},
	} {
		d := ratelimit.Decision{RetryAfter: tc.retry}
		if got := ratelimit.RetryAfterSeconds(d); got != tc.secs {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", tc.retry, got, tc.secs)
		}
		e := ratelimit.Error(d, "")
		if e.HTTPStatus() != http.StatusTooManyRequests || e.Code != agentcap.CodeRateLimited || e.Message == "" ||
			e.Fields[ratelimit.RetryAfterField] != tc.secs || e.RetryAfter != time.Duration(tc.secs)*time.Second {
			t.Errorf("Error(%v) = %+v", tc.retry, e)
		}
		h := http.Header{}
		ratelimit.SetRetryAfter(h, d)
		if got := h.Get("Retry-After"); got != fmt.Sprint(tc.secs) {
			t.Errorf("Retry-After = %q, want %d", got, tc.secs)
		}
	}
	e := ratelimit.Error(ratelimit.Decision{RetryAfter: 5 * time.Second}, "Agent agt_1 exceeded 60 requests/minute")
	body, err := json.Marshal(e.Fields)
	if err != nil || string(body) != `{"retry_after":5}` || e.Message != "Agent agt_1 exceeded 60 requests/minute" {
		t.Errorf("fields %s, message %q", body, e.Message)
	}
	h := http.Header{}
	ratelimit.SetRetryAfter(h, ratelimit.Decision{Allowed: true})
	if len(h) != 0 {
		t.Errorf("an allowed decision set %v", h)
	}
}

func TestLimitString(t *testing.T) {
	if got := ratelimit.PerMinute(60).String(); got != "60/1m0s" {
		t.Errorf("String = %q", got)
	}
	if err := ratelimit.PerHour(10).Validate(); err != nil {
		t.Error(err)
	}
}

func BenchmarkMemoryAllowOneKey(b *testing.B) {
	m := ratelimit.NewMemory(0)
	ctx := context.Background()
	limit := ratelimit.Limit{N: 1 << 20, Window: time.Second}
	key := ratelimit.Key(ratelimit.DimAgent, "agt_bench")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Allow(ctx, key, limit); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMemoryAllowParallel(b *testing.B) {
	m := ratelimit.NewMemory(0)
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = ratelimit.Key(ratelimit.DimAgent, fmt.Sprint("agt_", i))
	}
	limit := ratelimit.PerMinute(1 << 20)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		i := 0
		for pb.Next() {
			if _, err := m.Allow(ctx, keys[i%len(keys)], limit); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

func BenchmarkKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = ratelimit.Key(ratelimit.DimCapability, "transfer_money", "agt_k7x9m2")
	}
}

// clock is a settable clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
