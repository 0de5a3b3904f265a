package ttlmap_test

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcap/agentcap/agentauth/internal/ttlmap"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// clock is a settable clock, safe for concurrent use.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(t0.UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Set(d time.Duration)     { c.ns.Store(t0.Add(d).UnixNano()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }
func at(d time.Duration) int64           { return t0.Add(d).UnixNano() }
func stringHash(seed maphash.Seed) func(string) uint64 {
	return func(k string) uint64 { return maphash.String(seed, k) }
}

// oneShard puts every key in the same shard, so that a test can tell
// which entries an insert's sweep reaches.
func oneShard(string) uint64 { return 0 }

// numberHash puts key "i" in shard i (mod the shard count).
func numberHash(k string) uint64 {
	n, err := strconv.ParseUint(k, 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

func newMap(t testing.TB, cfg ttlmap.Config[string]) (*ttlmap.Map[string], *clock) {
	t.Helper()
	if cfg.Hash == nil {
		cfg.Hash = stringHash(maphash.MakeSeed())
	}
	m := ttlmap.New(cfg)
	c := newClock()
	m.SetClock(c.Now)
	return m, c
}

// get returns key's deadline, or math.MinInt64 when it is absent, without
// changing it.
func get(m *ttlmap.Map[string], key string) int64 {
	var got int64
	m.Update(key, func(_, deadline int64) int64 { got = deadline; return deadline })
	return got
}

// set proposes deadline for key and returns the deadline Update showed.
func set(t testing.TB, m *ttlmap.Map[string], key string, deadline int64) int64 {
	t.Helper()
	var got int64
	if !m.Update(key, func(_, old int64) int64 { got = old; return deadline }) {
		t.Fatalf("Update(%q) reported a full map", key)
	}
	return got
}

const absent int64 = math.MinInt64

func TestUpdate(t *testing.T) {
	m, c := newMap(t, ttlmap.Config[string]{Max: 10})
	steps := []struct {
		name string
		at   time.Duration
		key  string
		next int64 // proposed; 0 proposes the deadline shown
		want int64 // the deadline f is shown
	}{
		{"new key", 0, "a", at(10 * time.Second), absent},
		{"read", 0, "a", 0, at(10 * time.Second)},
		{"keys are independent", 0, "b", 0, absent},
		{"lowering is ignored", 5 * time.Second, "a", at(8 * time.Second), at(10 * time.Second)},
		{"still the old deadline", 5 * time.Second, "a", 0, at(10 * time.Second)},
		{"raise", 5 * time.Second, "a", at(20 * time.Second), at(10 * time.Second)},
		{"raised survives its old deadline", 15 * time.Second, "a", 0, at(20 * time.Second)},
		{"absent exactly at the deadline", 20 * time.Second, "a", 0, absent},
		{"a past deadline stores nothing", 20 * time.Second, "a", at(19 * time.Second), absent},
		{"the present stores nothing", 20 * time.Second, "a", at(20 * time.Second), absent},
		{"nothing was stored", 20 * time.Second, "a", 0, absent},
		{"an expired key comes back", 20 * time.Second, "a", at(21 * time.Second), absent},
		{"and is live", 20*time.Second + 999*time.Millisecond, "a", 0, at(21 * time.Second)},
	}
	for _, s := range steps {
		c.Set(s.at)
		var now, shown int64
		ok := m.Update(s.key, func(n, deadline int64) int64 {
			now, shown = n, deadline
			if s.next == 0 {
				return deadline
			}
			return s.next
		})
		if !ok {
			t.Fatalf("%s: Update reported a full map", s.name)
		}
		if now != at(s.at) {
			t.Errorf("%s: f was given now = %d, want the clock's %d", s.name, now, at(s.at))
		}
		if shown != s.want {
			t.Errorf("%s: f was shown %d, want %d", s.name, shown, s.want)
		}
	}
	if m.Len() != 1 {
		t.Errorf("Len = %d, want 1: a was reused in place, b never stored", m.Len())
	}
	if m.Max() != 10 {
		t.Errorf("Max = %d, want 10", m.Max())
	}
}

// TestSweepEveryInsert checks that, without SweepOnDoubling, an insert
// removes every expired entry of its shard and nothing else.
func TestSweepEveryInsert(t *testing.T) {
	m, c := newMap(t, ttlmap.Config[string]{Max: 1000, Hash: oneShard})
	for i := range 100 {
		set(t, m, fmt.Sprint("k", i), at(time.Duration(i+1)*time.Second))
	}
	set(t, m, "a", at(10*time.Second))
	set(t, m, "a", at(time.Hour)) // raised; its heap entry still says 10s
	c.Set(50*time.Second + time.Millisecond)
	if m.Len() != 101 {
		t.Fatalf("Len = %d before any insert, want 101: nothing is removed until an insert", m.Len())
	}
	// Reads and raises do not sweep.
	get(m, "k99")
	set(t, m, "k99", at(2*time.Hour))
	if m.Len() != 101 {
		t.Fatalf("Len = %d after a read and a raise, want 101", m.Len())
	}
	set(t, m, "new", at(time.Hour))
	// k0..k49 expired (deadlines 1s..50s); a was raised and stays.
	if m.Len() != 52 {
		t.Fatalf("Len = %d after an insert, want 52 (k50..k99, a, new)", m.Len())
	}
	if got := get(m, "a"); got != at(time.Hour) {
		t.Errorf("raised key: deadline %d, want %d", got, at(time.Hour))
	}
	c.Set(time.Hour)
	set(t, m, "late", at(3*time.Hour))
	if m.Len() != 2 {
		t.Fatalf("Len = %d after everything but k99 expired, want 2 (k99, late)", m.Len())
	}
}

// TestSweepOnDoubling checks that with SweepOnDoubling a shard is swept
// only by an insert that doubles it since its last sweep, at 64 entries
// at the least.
func TestSweepOnDoubling(t *testing.T) {
	m, c := newMap(t, ttlmap.Config[string]{Max: 1000, Hash: oneShard, SweepOnDoubling: true})
	for i := range 63 {
		set(t, m, fmt.Sprint("k", i), at(time.Second))
	}
	c.Set(time.Second)
	set(t, m, "x0", at(time.Hour)) // the 64th entry: the first sweep
	if m.Len() != 1 {
		t.Fatalf("Len = %d after the 64th insert, want 1", m.Len())
	}
	for i := range 63 {
		set(t, m, fmt.Sprint("y", i), at(2*time.Second))
	}
	c.Set(2 * time.Second)
	set(t, m, "x1", at(time.Hour))
	if m.Len() != 65 {
		t.Fatalf("Len = %d: swept before 64 entries", m.Len())
	}
	// The y keys expired but stay; reading one shows it absent, and
	// raising it reuses its entry.
	if got := get(m, "y0"); got != absent {
		t.Fatalf("expired key: deadline %d, want absent", got)
	}
	set(t, m, "y0", at(time.Hour))
	if m.Len() != 65 {
		t.Fatalf("Len = %d after raising an expired key, want 65", m.Len())
	}
	for i := range 63 {
		set(t, m, fmt.Sprint("z", i), at(time.Hour))
	}
	// 128 entries: the sweep removed y1..y62.
	if m.Len() != 128-62 {
		t.Fatalf("Len = %d after the shard doubled, want %d", m.Len(), 128-62)
	}
}

// TestBound fills a map, shows that it fails closed rather than evicting,
// that f sees the key again after the sweep, and that expired entries in
// other shards make room.
func TestBound(t *testing.T) {
	for _, doubling := range []bool{false, true} {
		t.Run(fmt.Sprint("SweepOnDoubling=", doubling), func(t *testing.T) {
			m, c := newMap(t, ttlmap.Config[string]{Max: 3, Hash: numberHash, SweepOnDoubling: doubling})
			set(t, m, "0", at(10*time.Second))
			set(t, m, "1", at(20*time.Second))
			set(t, m, "2", at(30*time.Second))
			calls := 0
			if m.Update("9", func(_, d int64) int64 { calls++; return at(time.Hour) }) {
				t.Fatal("an insert into a full map succeeded")
			}
			if calls != 2 {
				t.Errorf("f called %d times on a full map, want 2 (once more after the sweep)", calls)
			}
			if m.Len() != 3 {
				t.Fatalf("Len = %d after a refused insert, want 3", m.Len())
			}
			// Known keys still work, raises included.
			if got := set(t, m, "0", at(15*time.Second)); got != at(10*time.Second) {
				t.Fatalf("known key when full: shown %d", got)
			}
			// A refusal that asks for nothing is not a failure.
			if !m.Update("9", func(_, d int64) int64 { return d }) {
				t.Fatal("a read of an absent key in a full map failed")
			}
			// Key 0 expires in shard 0; key 9 lives in shard 9.
			c.Set(15 * time.Second)
			if got := set(t, m, "9", at(time.Hour)); got != absent {
				t.Fatalf("insert after expiry: shown %d", got)
			}
			if m.Len() != 3 {
				t.Fatalf("Len = %d, want 3", m.Len())
			}
			// Everything but 9 expires: the whole bound is usable again,
			// and the first insert swept every shard.
			c.Set(30 * time.Second)
			set(t, m, "4", at(time.Hour))
			if m.Len() != 2 {
				t.Fatalf("Len = %d, want 2 (9 and 4)", m.Len())
			}
			set(t, m, "5", at(time.Hour))
			if m.Update("6", func(_, d int64) int64 { return at(time.Hour) }) {
				t.Fatal("fourth live key accepted")
			}
		})
	}
}

// TestModel runs random operations against a map and a plain Go map that
// keeps every key forever, and checks that they agree on what f is shown
// and on when a full map refuses.
func TestModel(t *testing.T) {
	for _, tc := range []struct {
		max      int
		doubling bool
	}{{8, false}, {8, true}, {300, false}, {300, true}} {
		t.Run(fmt.Sprintf("max=%d/doubling=%v", tc.max, tc.doubling), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.max)))
			m, c := newMap(t, ttlmap.Config[string]{Max: tc.max, SweepOnDoubling: tc.doubling})
			model := map[string]int64{}
			live := func(now int64) int {
				n := 0
				for _, d := range model {
					if d > now {
						n++
					}
				}
				return n
			}
			for i := range 20000 {
				c.Advance(time.Duration(rng.IntN(20)) * time.Millisecond)
				now := c.Now().UnixNano()
				key := strconv.Itoa(rng.IntN(500))
				want := absent
				if d, ok := model[key]; ok && d > now {
					want = d
				}
				next := now + int64(rng.IntN(2000)-200)*int64(time.Millisecond)
				var shown int64
				ok := m.Update(key, func(n, d int64) int64 { shown = d; return next })
				if shown != want {
					t.Fatalf("op %d on %s: shown %d, want %d", i, key, shown, want)
				}
				stores := next > now && next > want
				full := want == absent && stores && live(now) >= tc.max
				if ok == full {
					t.Fatalf("op %d on %s: ok = %v with %d live entries of %d", i, key, ok, live(now), tc.max)
				}
				if ok && stores {
					model[key] = next
				}
				if n := m.Len(); n < live(now) || n > tc.max {
					t.Fatalf("op %d: Len = %d with %d live entries, bound %d", i, n, live(now), tc.max)
				}
			}
		})
	}
}

func TestConcurrentSameKey(t *testing.T) {
	m, _ := newMap(t, ttlmap.Config[string]{Max: 100})
	for round := range 50 {
		key := fmt.Sprint("key-", round)
		const n = 16
		var wins atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range n {
			wg.Go(func() {
				<-start
				var fresh bool
				ok := m.Update(key, func(now, d int64) int64 {
					if fresh = d <= now; fresh {
						return now + int64(time.Hour)
					}
					return d
				})
				if !ok {
					t.Error("full")
				}
				if fresh {
					wins.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d goroutines found the key absent, want 1", round, wins.Load())
		}
	}
}

// TestConcurrentBound races inserters against a small bound while the
// clock moves, so that sweeps of other shards run concurrently with
// inserts: at no time do more than Max entries live.
func TestConcurrentBound(t *testing.T) {
	const max, workers, perWorker = 200, 8, 500
	m, c := newMap(t, ttlmap.Config[string]{Max: max})
	var ok, full atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				if m.Update(fmt.Sprintf("%d/%d", w, i), func(now, _ int64) int64 { return now + int64(time.Hour) }) {
					ok.Add(1)
				} else {
					full.Add(1)
				}
				if n := m.Len(); n > max {
					t.Errorf("Len = %d, above the bound", n)
				}
			}
		})
	}
	wg.Wait()
	if ok.Load() != max || full.Load() != workers*perWorker-max || m.Len() != max {
		t.Fatalf("ok = %d, full = %d, Len = %d; want %d, %d, %d", ok.Load(), full.Load(), m.Len(), max, workers*perWorker-max, max)
	}
	// Everything expires; concurrent inserters share the freed bound.
	c.Advance(time.Hour)
	ok.Store(0)
	for w := range workers {
		wg.Go(func() {
			for i := range max / workers {
				if m.Update(fmt.Sprintf("again %d/%d", w, i), func(now, _ int64) int64 { return now + int64(time.Hour) }) {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if ok.Load() != max || m.Len() != max {
		t.Fatalf("after expiry: %d inserts succeeded, Len = %d; want %d", ok.Load(), m.Len(), max)
	}
}

// TestPanicReleasesLock shows that a panicking f leaves the map usable.
func TestPanicReleasesLock(t *testing.T) {
	m, _ := newMap(t, ttlmap.Config[string]{Max: 10, Hash: oneShard})
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic")
			}
		}()
		m.Update("a", func(int64, int64) int64 { panic("boom") })
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		set(t, m, "b", math.MaxInt64)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the shard's lock is still held")
	}
	if m.Len() != 1 {
		t.Errorf("Len = %d, want 1", m.Len())
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for name, cfg := range map[string]ttlmap.Config[string]{
		"zero max":     {Hash: oneShard},
		"negative max": {Max: -1, Hash: oneShard},
		"no hash":      {Max: 1},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: New did not panic", name)
				}
			}()
			ttlmap.New(cfg)
		}()
	}
}

func TestDefaultClock(t *testing.T) {
	m := ttlmap.New(ttlmap.Config[string]{Max: 1, Hash: oneShard})
	m.SetClock(nil) // keeps time.Now
	before := time.Now().UnixNano()
	var now int64
	m.Update("a", func(n, d int64) int64 { now = n; return d })
	if after := time.Now().UnixNano(); now < before || now > after {
		t.Errorf("now = %d, not between %d and %d", now, before, after)
	}
}

// BenchmarkUpdate measures the steady state of a replay cache: every call
// inserts a new key and moves the clock by a millisecond, so about 70 000
// entries live and every insert also removes what expired.
func BenchmarkUpdate(b *testing.B) {
	for _, doubling := range []bool{false, true} {
		b.Run(fmt.Sprint("SweepOnDoubling=", doubling), func(b *testing.B) {
			var seq atomic.Int64
			m := ttlmap.New(ttlmap.Config[uint64]{Max: 1 << 20, Hash: func(k uint64) uint64 { return k * 0x9e3779b97f4a7c15 }, SweepOnDoubling: doubling})
			m.SetClock(func() time.Time { return t0.Add(time.Duration(seq.Load()) * time.Millisecond) })
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					ok := m.Update(uint64(seq.Add(1)), func(now, _ int64) int64 { return now + int64(70*time.Second) })
					if !ok {
						b.Error("full")
						return
					}
				}
			})
		})
	}
}

// BenchmarkUpdateReturning measures keys that come back after they
// expire, as rate-limit keys do: 64 Ki keys in turn, each live for half
// the time it takes to come back.
func BenchmarkUpdateReturning(b *testing.B) {
	const keys = 1 << 16
	for _, doubling := range []bool{false, true} {
		b.Run(fmt.Sprint("SweepOnDoubling=", doubling), func(b *testing.B) {
			var seq atomic.Int64
			m := ttlmap.New(ttlmap.Config[uint64]{Max: 1 << 20, Hash: func(k uint64) uint64 { return k * 0x9e3779b97f4a7c15 }, SweepOnDoubling: doubling})
			m.SetClock(func() time.Time { return t0.Add(time.Duration(seq.Load())) })
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m.Update(uint64(seq.Add(1)%keys), func(now, d int64) int64 { return max(d, now) + keys/2 })
				}
			})
		})
	}
}

func ExampleMap_Update() {
	m := ttlmap.New(ttlmap.Config[string]{Max: 1000, Hash: func(k string) uint64 { return uint64(len(k)) }})
	// Check-and-set: record a token id for a minute unless it is
	// recorded. A full map is an error, never a fresh id.
	checkAndSet := func(id string) (fresh bool, err error) {
		ok := m.Update(id, func(now, deadline int64) int64 {
			if fresh = deadline <= now; fresh {
				return now + int64(time.Minute)
			}
			return deadline
		})
		if !ok {
			return false, errors.New("full")
		}
		return fresh, nil
	}
	for _, id := range []string{"j1", "j1", "j2"} {
		fmt.Println(checkAndSet(id))
	}
	// Output:
	// true <nil>
	// false <nil>
	// true <nil>
}
