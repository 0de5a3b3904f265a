package ttlmap

import (
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"
)

// TestShardsShareNoCacheLine checks that a shard's fields fit in one
// 64-byte cache line and are followed by a line of padding, so that no
// two shards' fields share a line however the map is aligned.
func TestShardsShareNoCacheLine(t *testing.T) {
	var s shard[string]
	// stale is the last field before the padding.
	used := unsafe.Offsetof(s.stale) + unsafe.Sizeof(s.stale)
	for _, size := range []uintptr{unsafe.Sizeof(s), unsafe.Sizeof(shard[[2]uint64]{})} {
		if used > 64 || size != 128 {
			t.Errorf("shard of %d bytes with %d bytes of fields; want 128 with at most 64", size, used)
		}
	}
}

// TestHeapInvariants checks after random operations that every entry of
// a shard's map is in its heap exactly once, under a deadline no later
// than the map's, that stale counts at least the entries under an older
// deadline, that the heap is ordered, and that count is the sum of the
// shard sizes.
func TestHeapInvariants(t *testing.T) {
	for _, doubling := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(7, 11))
		ns := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
		m := New(Config[int]{Max: 400, Hash: func(k int) uint64 { return uint64(k) % 3 }, SweepOnDoubling: doubling})
		m.SetClock(func() time.Time { return time.Unix(0, ns) })
		for i := range 30000 {
			ns += int64(rng.IntN(5)) * int64(time.Millisecond)
			next := ns + int64(rng.IntN(300)-50)*int64(time.Millisecond)
			m.Update(rng.IntN(1000), func(now, d int64) int64 { return next })
			if i%100 == 0 {
				checkInvariants(t, m)
			}
		}
		checkInvariants(t, m)
	}
}

func checkInvariants(t *testing.T, m *Map[int]) {
	t.Helper()
	total := 0
	for i := range m.shards {
		s := &m.shards[i]
		if len(s.heap) != len(s.deadlines) {
			t.Fatalf("shard %d: %d heap entries, %d map entries", i, len(s.heap), len(s.deadlines))
		}
		seen := map[int]bool{}
		stale := 0
		for j, e := range s.heap {
			d, ok := s.deadlines[e.key]
			if !ok || seen[e.key] {
				t.Fatalf("shard %d: heap entry %d (key %d) is not in the map or is there twice", i, j, e.key)
			}
			seen[e.key] = true
			if e.deadline > d {
				t.Fatalf("shard %d: key %d is in the heap at %d, after its deadline %d", i, e.key, e.deadline, d)
			}
			if e.deadline < d {
				stale++
			}
			if j > 0 && s.heap[(j-1)/2].deadline > e.deadline {
				t.Fatalf("shard %d: heap out of order at %d", i, j)
			}
		}
		if stale > s.stale {
			t.Fatalf("shard %d: %d stale heap entries, stale = %d", i, stale, s.stale)
		}
		total += len(s.deadlines)
	}
	if int64(total) != m.count.Load() {
		t.Fatalf("count = %d, shards hold %d", m.count.Load(), total)
	}
}
