// Package ttlmap is a bounded map from keys to deadlines, safe for
// concurrent use, that forgets a key once its deadline has passed. It is
// the shared mechanism of the in-memory replay cache (a token id is
// remembered until the token expires) and the in-memory rate limiter (a
// key is remembered until its bucket is full again).
//
// The map is split into shards, each with its own lock, so that callers
// working on different keys rarely wait for each other. A key's deadline
// is read and changed under its shard's lock in one Update call, which is
// what makes check-and-set atomic.
//
// Memory is bounded by a number of entries. When the map holds that many
// and a new key needs room, Update reports failure instead of evicting a
// live entry: forgetting a live replay-cache entry would let a token be
// replayed, and forgetting a busy rate-limit key would hand it a fresh
// burst. Callers fail closed on that report.
//
// Expired entries are removed lazily, by inserts: an insert sweeps its
// shard (every insert, or with Config.SweepOnDoubling only one that has
// doubled the shard since its last sweep), and an insert into a full map
// sweeps every shard before it gives up. No goroutine runs in the
// background and nothing needs closing.
//
// Each shard keeps a min-heap of (deadline, key) beside its map, so that
// a sweep visits the expired entries only, never the whole shard. A
// deadline only ever rises, and raising one leaves the heap alone, so the
// heap may hold a key under an older, smaller deadline than the map: a
// sweep that meets such an entry moves it down to the key's current
// deadline instead of removing it. Every entry is in the heap exactly
// once.
package ttlmap

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// shardCount is the number of shards. Sixty-four keeps lock contention
// low on any realistic core count while the per-map overhead stays a few
// kilobytes.
const shardCount = 64

// minSweepLen is the shard size below which an insert never sweeps under
// Config.SweepOnDoubling.
const minSweepLen = 64

// Config configures a Map.
type Config[K comparable] struct {
	// Max bounds the number of entries, expired entries not yet removed
	// included. It must be positive.
	Max int
	// Hash spreads keys over shards. It need not resist collisions, but
	// it must give equal keys equal hashes.
	Hash func(K) uint64
	// SweepOnDoubling makes an insert sweep its shard only when the
	// shard has doubled since its last sweep (and holds at least 64
	// entries), instead of on every insert. It suits keys that often come
	// back soon after they expire, such as rate-limit keys: such a key is
	// then mostly raised in place rather than removed and inserted again,
	// for at most twice the memory. Keys that never come back, such as
	// token ids, are best removed on every insert.
	SweepOnDoubling bool
}

// Map maps keys to deadlines, in Unix nanoseconds of its clock. A key
// whose deadline is at or before the current time is absent. The zero
// value is not usable; create maps with New.
type Map[K comparable] struct {
	max      int64
	count    atomic.Int64 // entries held, live or expired and not yet removed
	hash     func(K) uint64
	now      func() time.Time
	doubling bool
	_        [64]byte // keeps count, written by inserts, off the first shard's line
	shards   [shardCount]shard[K]
}

type entry[K comparable] struct {
	key      K
	deadline int64
}

type shard[K comparable] struct {
	mu        sync.Mutex
	deadlines map[K]int64
	heap      []entry[K] // min-heap by deadline; heap deadline <= map deadline
	sweepAt   int        // the size from which an insert sweeps the shard
	// stale is at least the number of heap entries under an older
	// deadline than the map's. While it is zero, a sweep removes what the
	// heap says expired without asking the map, which replay caches,
	// whose deadlines are never raised, rely on for speed.
	stale int
	// The padding makes a shard two cache lines long, so that whatever
	// the map's alignment, the line of one shard's lock and counters is
	// never the line of another's: every Update writes them.
	_ [72]byte
}

// New returns an empty map. It panics if cfg.Max is not positive or
// cfg.Hash is nil: callers pass constants and their own functions, so
// either is a programming error.
func New[K comparable](cfg Config[K]) *Map[K] {
	if cfg.Max <= 0 || cfg.Hash == nil {
		panic("ttlmap: Config needs a positive Max and a Hash")
	}
	m := &Map[K]{max: int64(cfg.Max), hash: cfg.Hash, now: time.Now, doubling: cfg.SweepOnDoubling}
	for i := range m.shards {
		s := &m.shards[i]
		s.deadlines = make(map[K]int64)
		s.resetSweepAt(m.doubling)
	}
	return m
}

// SetClock makes m read the time from now instead of time.Now. It must be
// called before m is first used.
func (m *Map[K]) SetClock(now func() time.Time) {
	if now != nil {
		m.now = now
	}
}

// Len returns the number of entries held, including expired entries not
// yet removed.
func (m *Map[K]) Len() int { return int(m.count.Load()) }

// Max returns Config.Max.
func (m *Map[K]) Max() int { return int(m.max) }

// Update reads the clock, then, under the lock of key's shard, calls f
// with the time and key's deadline and stores the deadline f returns
// when it is later than that time and than the deadline f was given. f
// gets math.MinInt64 for an absent key (never stored, or expired).
// Returning the deadline given, or any time not in the future, changes
// nothing.
//
// Update returns false, having stored nothing, when key is absent, f asks
// to store it, and m holds its maximum number of entries even after
// removing every expired one. f may then have been called twice: the
// second time after all shards were swept, which releases the lock of
// key's shard, so that f sees the key's state afresh. f must therefore
// only compute, and record its result where the caller reads it after
// Update returns.
func (m *Map[K]) Update(key K, f func(now, deadline int64) int64) bool {
	s := &m.shards[m.hash(key)%shardCount]
	// The clock is read before the lock, which it would otherwise hold
	// longer. A caller that waited for the lock then works with a time a
	// little in the past, as if it had come first.
	now := m.now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	for swept := false; ; swept = true {
		old, found := s.deadlines[key]
		if old <= now {
			// An expired entry not yet removed is absent, but its slot of
			// the bound is still taken and can be reused.
			old = math.MinInt64
		}
		next := f(now, old)
		switch {
		case next <= now || next <= old:
			return true
		case found:
			s.deadlines[key] = next
			s.stale++
			return true
		case m.reserve():
			s.deadlines[key] = next
			s.push(entry[K]{key: key, deadline: next})
			// Sweeping after the insert rather than before means that an
			// insert into a full map always goes through sweepAll, which
			// frees the slots of every shard at once.
			if len(s.deadlines) >= s.sweepAt {
				m.sweep(s, now)
			}
			return true
		case swept:
			return false
		}
		// Other shards may hold expired entries. Sweeping them takes their
		// locks, which must not be taken while holding this one.
		s.mu.Unlock()
		m.sweepAll(now)
		s.mu.Lock()
	}
}

// reserve takes one slot of the bound, or reports that none is left.
func (m *Map[K]) reserve() bool {
	for {
		n := m.count.Load()
		if n >= m.max {
			return false
		}
		if m.count.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (m *Map[K]) sweepAll(now int64) {
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		m.sweep(s, now)
		s.mu.Unlock()
	}
}

// sweep removes the entries of s whose deadline is at or before now.
// s.mu must be held.
func (m *Map[K]) sweep(s *shard[K], now int64) {
	removed := 0
	for len(s.heap) > 0 && s.heap[0].deadline <= now {
		top := &s.heap[0]
		if s.stale > 0 {
			if d := s.deadlines[top.key]; d > now {
				// The key's deadline rose since it entered the heap.
				top.deadline = d
				s.down(0)
				s.stale--
				continue
			}
		}
		delete(s.deadlines, top.key)
		s.pop()
		removed++
	}
	if removed > 0 {
		m.count.Add(int64(-removed))
		if len(s.deadlines) == 0 {
			// A map never shrinks; replacing an empty one returns the
			// memory of a past burst.
			s.deadlines = make(map[K]int64)
			s.heap = nil
			s.stale = 0
		}
	}
	s.resetSweepAt(m.doubling)
}

// resetSweepAt sets the size at which an insert next sweeps s: any size,
// or twice the present one.
func (s *shard[K]) resetSweepAt(doubling bool) {
	s.sweepAt = 0
	if doubling {
		s.sweepAt = max(2*len(s.deadlines), minSweepLen)
	}
}

func (s *shard[K]) push(e entry[K]) {
	s.heap = append(s.heap, e)
	h := s.heap
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].deadline <= h[i].deadline {
			break
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

// pop removes the top of the heap.
func (s *shard[K]) pop() {
	last := len(s.heap) - 1
	s.heap[0] = s.heap[last]
	var zero entry[K]
	s.heap[last] = zero // drop the reference a string key holds
	s.heap = s.heap[:last]
	s.down(0)
}

// down moves the entry at i down to where its deadline belongs.
func (s *shard[K]) down(i int) {
	h := s.heap
	n := len(h)
	for {
		l, r, least := 2*i+1, 2*i+2, i
		if l < n && h[l].deadline < h[least].deadline {
			least = l
		}
		if r < n && h[r].deadline < h[least].deadline {
			least = r
		}
		if least == i {
			return
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
}
