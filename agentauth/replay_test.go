package agentauth_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcap/agentcap/agentauth"
)

func TestMemoryReplayCache(t *testing.T) {
	clock := &vfClock{t: vfNow}
	c := agentauth.NewMemoryReplayCache(0).WithClock(clock.Now)
	ctx := context.Background()
	steps := []struct {
		advance time.Duration
		key     string
		ttl     time.Duration
		fresh   bool
	}{
		{0, "a", time.Minute, true},
		{0, "a", time.Minute, false},
		{0, "b", time.Minute, true},
		{59 * time.Second, "a", time.Minute, false},
		{time.Second, "a", time.Minute, true}, // exactly at expiry the old entry is gone
		{0, "a", time.Minute, false},
		{0, "c", time.Second, true},
		{time.Second, "c", time.Second, true},
	}
	for i, s := range steps {
		clock.Add(s.advance)
		fresh, err := c.CheckAndSet(ctx, s.key, s.ttl)
		if err != nil || fresh != s.fresh {
			t.Fatalf("step %d (%s): fresh = %v, err = %v; want %v", i, s.key, fresh, err, s.fresh)
		}
	}
	for _, ttl := range []time.Duration{0, -time.Second} {
		if fresh, err := c.CheckAndSet(ctx, "x", ttl); err == nil || fresh {
			t.Errorf("ttl %v: fresh = %v, err = %v; want an error", ttl, fresh, err)
		}
	}
}

// TestMemoryReplayCacheBound fills the cache, shows that it fails closed
// rather than evicting, and that it recovers once entries expire.
func TestMemoryReplayCacheBound(t *testing.T) {
	const max = 100
	clock := &vfClock{t: vfNow}
	c := agentauth.NewMemoryReplayCache(max).WithClock(clock.Now)
	ctx := context.Background()
	for i := range max {
		if fresh, err := c.CheckAndSet(ctx, fmt.Sprintf("k%d", i), time.Minute); !fresh || err != nil {
			t.Fatalf("insert %d: fresh = %v, err = %v", i, fresh, err)
		}
		clock.Add(time.Millisecond)
	}
	if c.Len() != max {
		t.Fatalf("Len = %d, want %d", c.Len(), max)
	}
	fresh, err := c.CheckAndSet(ctx, "overflow", time.Minute)
	if fresh || !errors.Is(err, agentauth.ErrReplayCacheFull) {
		t.Fatalf("insert beyond the bound: fresh = %v, err = %v; want ErrReplayCacheFull", fresh, err)
	}
	// A recorded key is still reported as replayed, not as an error.
	if fresh, err := c.CheckAndSet(ctx, "k0", time.Minute); fresh || err != nil {
		t.Fatalf("known key while full: fresh = %v, err = %v", fresh, err)
	}
	if c.Len() != max {
		t.Fatalf("Len = %d after refused inserts, want %d", c.Len(), max)
	}
	// The first ten entries expire; exactly ten new ones fit.
	clock.Add(time.Minute - 91*time.Millisecond)
	for i := range 10 {
		if fresh, err := c.CheckAndSet(ctx, fmt.Sprintf("new%d", i), time.Minute); !fresh || err != nil {
			t.Fatalf("insert after expiry %d: fresh = %v, err = %v", i, fresh, err)
		}
	}
	if _, err := c.CheckAndSet(ctx, "new10", time.Minute); !errors.Is(err, agentauth.ErrReplayCacheFull) {
		t.Fatalf("eleventh insert: err = %v, want ErrReplayCacheFull", err)
	}
	// Unexpired entries were kept: k10 is still replayed.
	if fresh, err := c.CheckAndSet(ctx, "k10", time.Minute); fresh || err != nil {
		t.Fatalf("k10: fresh = %v, err = %v; want replayed", fresh, err)
	}
	// Everything expires; the whole bound is available again.
	clock.Add(2 * time.Minute)
	for i := range max {
		if fresh, err := c.CheckAndSet(ctx, fmt.Sprintf("k%d", i), time.Minute); !fresh || err != nil {
			t.Fatalf("insert %d after full expiry: fresh = %v, err = %v", i, fresh, err)
		}
	}
	if _, err := c.CheckAndSet(ctx, "overflow", time.Minute); !errors.Is(err, agentauth.ErrReplayCacheFull) {
		t.Fatalf("insert beyond the bound after refill: err = %v, want ErrReplayCacheFull", err)
	}
}

func TestMemoryReplayCacheConcurrentSameKey(t *testing.T) {
	c := agentauth.NewMemoryReplayCache(0)
	for round := range 20 {
		key := fmt.Sprintf("key-%d", round)
		const n = 16
		var wins atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				fresh, err := c.CheckAndSet(context.Background(), key, time.Minute)
				if err != nil {
					t.Error(err)
				}
				if fresh {
					wins.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d goroutines won the same key, want 1", round, wins.Load())
		}
	}
}

// TestMemoryReplayCacheConcurrentBound races many inserters against a
// small bound: exactly the bound succeeds, the rest fail closed.
func TestMemoryReplayCacheConcurrentBound(t *testing.T) {
	const max, workers, perWorker = 500, 8, 200
	c := agentauth.NewMemoryReplayCache(max)
	var ok, full atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				fresh, err := c.CheckAndSet(context.Background(), fmt.Sprintf("%d/%d", w, i), time.Hour)
				switch {
				case errors.Is(err, agentauth.ErrReplayCacheFull):
					full.Add(1)
				case err != nil || !fresh:
					t.Errorf("fresh = %v, err = %v", fresh, err)
				default:
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if ok.Load() != max || full.Load() != workers*perWorker-max || c.Len() != max {
		t.Fatalf("ok = %d, full = %d, Len = %d; want %d, %d, %d", ok.Load(), full.Load(), c.Len(), max, workers*perWorker-max, max)
	}
}

// TestMemoryReplayCacheEntryBytes checks the documented per-entry memory
// figure against the heap actually used.
func TestMemoryReplayCacheEntryBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 20 MB")
	}
	const n = 1 << 18
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := agentauth.NewMemoryReplayCache(n)
	for i := range n {
		if _, err := c.CheckAndSet(context.Background(), fmt.Sprintf("agentauth:jti:agt_%d:%040d", i, i), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%.1f bytes per entry", per)
	if per > agentauth.ReplayCacheEntryBytes {
		t.Fatalf("%.1f bytes per entry, documented at most %d", per, agentauth.ReplayCacheEntryBytes)
	}
	runtime.KeepAlive(c)
}

// BenchmarkMemoryReplayCache measures the steady state: each call moves
// the clock by a millisecond, so about 70 000 entries are live and every
// insert also sweeps what expired.
func BenchmarkMemoryReplayCache(b *testing.B) {
	var seq atomic.Int64
	c := agentauth.NewMemoryReplayCache(0).WithClock(func() time.Time {
		return vfNow.Add(time.Duration(seq.Load()) * time.Millisecond)
	})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key := make([]byte, 0, 64)
		for pb.Next() {
			key = fmt.Appendf(key[:0], "agentauth:jti:agt_bench:%d", seq.Add(1))
			if _, err := c.CheckAndSet(ctx, string(key), 70*time.Second); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestReplayKey(t *testing.T) {
	tests := []struct {
		prefix, id, jti, want string
	}{
		{agentauth.ReplayKeyPrefix, "agt_1", "j1", "agentauth:jti:agt_1:j1"},
		{agentauth.ReplayKeyPrefix, "agt_1", "a:b", "agentauth:jti:agt_1:a:b"},
		{agentauth.ReplayKeyPrefix, "a:b", "c", "agentauth:jti:a%3Ab:c"},
		{agentauth.ReplayKeyPrefix, "50%", "c", "agentauth:jti:50%25:c"},
		{agentauth.ReplayKeyPrefix, "%3A", "", "agentauth:jti:%253A:"},
		{"p:", "", "j", "p::j"},
		{"", "::", "", "%3A%3A:"},
	}
	for _, tt := range tests {
		if got := agentauth.ReplayKey(tt.prefix, tt.id, tt.jti); got != tt.want {
			t.Errorf("ReplayKey(%q, %q, %q) = %q, want %q", tt.prefix, tt.id, tt.jti, got, tt.want)
		}
	}
}

// replayCollisions are (agent id, jti) pairs whose plain join
// ReplayKeyPrefix + id + ":" + jti is the same key.
var replayCollisions = [][2][2]string{
	{{"a:b", "c"}, {"a", "b:c"}},
	{{"agt_1:", "x"}, {"agt_1", ":x"}},
	{{"h:o:s:t", ""}, {"h", "o:s:t:"}},
}

// TestReplayKeyNoCollision shows that pairs which collide when joined
// plainly are told apart by ReplayKey, and so by a MemoryReplayCache: a
// token of one agent does not use up the id of another's.
func TestReplayKeyNoCollision(t *testing.T) {
	for _, pair := range replayCollisions {
		a, b := pair[0], pair[1]
		if plainA, plainB := agentauth.ReplayKeyPrefix+a[0]+":"+a[1], agentauth.ReplayKeyPrefix+b[0]+":"+b[1]; plainA != plainB {
			t.Fatalf("%q and %q do not collide when joined plainly", a, b)
		}
		ka, kb := agentauth.ReplayKey(agentauth.ReplayKeyPrefix, a[0], a[1]), agentauth.ReplayKey(agentauth.ReplayKeyPrefix, b[0], b[1])
		if ka == kb {
			t.Fatalf("%q and %q share the key %q", a, b, ka)
		}
		c := agentauth.NewMemoryReplayCache(0)
		for _, k := range []string{ka, kb} {
			if fresh, err := c.CheckAndSet(context.Background(), k, time.Minute); !fresh || err != nil {
				t.Fatalf("%q: fresh = %v, err = %v; want a fresh key", k, fresh, err)
			}
		}
		if fresh, _ := c.CheckAndSet(context.Background(), ka, time.Minute); fresh {
			t.Fatalf("%q: recorded key reported fresh", ka)
		}
	}
}

// FuzzReplayKey checks that ReplayKey is one-to-one: the id and jti can
// be read back from the key, so no two pairs share one.
func FuzzReplayKey(f *testing.F) {
	for _, pair := range replayCollisions {
		f.Add(pair[0][0], pair[0][1], pair[1][0], pair[1][1])
	}
	f.Add("agt_1", "j1", "agt_1", "j1")
	f.Add("%3A", "x", ":", "x")
	f.Fuzz(func(t *testing.T, id1, jti1, id2, jti2 string) {
		k1 := agentauth.ReplayKey(agentauth.ReplayKeyPrefix, id1, jti1)
		k2 := agentauth.ReplayKey(agentauth.ReplayKeyPrefix, id2, jti2)
		if (k1 == k2) != (id1 == id2 && jti1 == jti2) {
			t.Fatalf("(%q, %q) -> %q and (%q, %q) -> %q", id1, jti1, k1, id2, jti2, k2)
		}
		rest, ok := strings.CutPrefix(k1, agentauth.ReplayKeyPrefix)
		if !ok {
			t.Fatalf("%q lacks the prefix", k1)
		}
		escaped, jti, ok := strings.Cut(rest, ":")
		if !ok || jti != jti1 {
			t.Fatalf("%q: jti %q, want %q", k1, jti, jti1)
		}
		id, err := url.PathUnescape(escaped)
		if err != nil || id != id1 {
			t.Fatalf("%q: id %q (%v), want %q", k1, id, err, id1)
		}
		if !strings.ContainsAny(id1, ":%") && k1 != agentauth.ReplayKeyPrefix+id1+":"+jti1 {
			t.Fatalf("%q: an id without ':' or '%%' is not written as it is", k1)
		}
	})
}

func BenchmarkReplayKey(b *testing.B) {
	for _, id := range []string{"agt_k7x9m2", "urn:agent:k7x9m2"} {
		b.Run(id, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = agentauth.ReplayKey(agentauth.ReplayKeyPrefix, id, "0f8e2a4c-5b1d-4e7a-9c3f-2d6b8a1e4f70")
			}
		})
	}
}

func ExampleNewMemoryReplayCache() {
	c := agentauth.NewMemoryReplayCache(0)
	ctx := context.Background()
	first, _ := c.CheckAndSet(ctx, "agentauth:jti:agt_1:j1", time.Minute)
	again, _ := c.CheckAndSet(ctx, "agentauth:jti:agt_1:j1", time.Minute)
	fmt.Println(first, again)
	// Output: true false
}

func ExampleReplayKey() {
	fmt.Println(agentauth.ReplayKey(agentauth.ReplayKeyPrefix, "agt_1", "j1"))
	// An id holding the separator cannot be confused with another pair.
	fmt.Println(agentauth.ReplayKey(agentauth.ReplayKeyPrefix, "a:b", "c"))
	fmt.Println(agentauth.ReplayKey(agentauth.ReplayKeyPrefix, "a", "b:c"))
	// Output:
	// agentauth:jti:agt_1:j1
	// agentauth:jti:a%3Ab:c
	// agentauth:jti:a:b:c
}
