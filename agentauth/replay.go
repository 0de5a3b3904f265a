package agentauth

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// ReplayCache records token ids. CheckAndSet atomically records key for ttl
// and reports fresh=true if it was not already recorded. An implementation
// that cannot answer must return an error, never fresh=true: callers fail
// closed on errors.
type ReplayCache interface {
	CheckAndSet(ctx context.Context, key string, ttl time.Duration) (fresh bool, err error)
}

// ErrReplayCacheFull is returned by MemoryReplayCache when it holds its
// maximum number of unexpired entries. The cache never evicts an unexpired
// entry, because that would let the evicted token be replayed.
var ErrReplayCacheFull = errors.New("agentauth: replay cache full")

// DefaultReplayCacheEntries is the bound of a MemoryReplayCache created
// with maxEntries <= 0.
const DefaultReplayCacheEntries = 1 << 20

// ReplayCacheEntryBytes bounds the memory held per entry of a
// MemoryReplayCache, independent of key length since keys are stored as
// 128-bit hashes: a map slot and a heap slot of 24 bytes each, with the
// slack of map and slice growth (about 65 to 82 bytes measured). At the
// default bound that is at most about 100 MiB.
const ReplayCacheEntryBytes = 100

const replayShards = 64

// MemoryReplayCache is an in-process ReplayCache, safe for concurrent use.
// It is bounded: when it holds maxEntries unexpired entries, CheckAndSet
// fails with ErrReplayCacheFull until some expire. Expired entries are
// swept lazily on insert, in time proportional to the number swept, so
// no goroutine runs in the background and nothing needs closing.
//
// Keys are stored as 128-bit hashes under a per-process random seed. Two
// keys sharing a hash would make the second one look replayed (a spurious
// rejection, never an acceptance); an attacker cannot aim for that without
// the seed.
//
// A MemoryReplayCache only protects one process. Applications running
// several instances share a cache through Redis (package redisreplay).
type MemoryReplayCache struct {
	max    int64
	count  atomic.Int64
	now    func() time.Time
	seeds  [2]maphash.Seed
	shards [replayShards]replayShard
}

type replayKey [2]uint64

type replayEntry struct {
	key replayKey
	exp int64 // unix nanoseconds
}

type replayShard struct {
	mu   sync.Mutex
	keys map[replayKey]int64
	heap []replayEntry // min-heap by exp
	_    [40]byte      // keep neighbouring shard locks off one cache line
}

// NewMemoryReplayCache returns a cache holding at most maxEntries
// unexpired entries (DefaultReplayCacheEntries if maxEntries <= 0), about
// ReplayCacheEntryBytes each.
func NewMemoryReplayCache(maxEntries int) *MemoryReplayCache {
	if maxEntries <= 0 {
		maxEntries = DefaultReplayCacheEntries
	}
	c := &MemoryReplayCache{
		max:   int64(maxEntries),
		now:   time.Now,
		seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
	}
	for i := range c.shards {
		c.shards[i].keys = make(map[replayKey]int64)
	}
	return c
}

// WithClock makes c read the time from now instead of time.Now, and
// returns c. It must be called before c is first used; tests use it to
// move time without sleeping.
func (c *MemoryReplayCache) WithClock(now func() time.Time) *MemoryReplayCache {
	if now != nil {
		c.now = now
	}
	return c
}

// Len returns the number of entries held, including expired entries not
// yet swept.
func (c *MemoryReplayCache) Len() int { return int(c.count.Load()) }

// CheckAndSet implements ReplayCache. A ttl that is not positive is an
// error.
func (c *MemoryReplayCache) CheckAndSet(_ context.Context, key string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, fmt.Errorf("agentauth: replay cache: ttl %v is not positive", ttl)
	}
	h := replayKey{maphash.String(c.seeds[0], key), maphash.String(c.seeds[1], key)}
	s := &c.shards[h[0]%replayShards]
	now := c.now().UnixNano()
	exp := now + int64(ttl)

	s.mu.Lock()
	defer s.mu.Unlock()
	c.sweep(s, now)
	if _, seen := s.keys[h]; seen {
		return false, nil
	}
	if !c.reserve() {
		// Other shards may hold expired entries. Sweeping them needs their
		// locks, which must not be taken while holding this one.
		s.mu.Unlock()
		c.sweepAll(now)
		s.mu.Lock()
		c.sweep(s, now)
		if _, seen := s.keys[h]; seen {
			return false, nil
		}
		if !c.reserve() {
			return false, fmt.Errorf("%w: %d unexpired entries", ErrReplayCacheFull, c.max)
		}
	}
	s.keys[h] = exp
	s.push(replayEntry{key: h, exp: exp})
	return true, nil
}

// reserve takes one slot of the bound, or reports that none is left.
func (c *MemoryReplayCache) reserve() bool {
	for {
		n := c.count.Load()
		if n >= c.max {
			return false
		}
		if c.count.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (c *MemoryReplayCache) sweepAll(now int64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		c.sweep(s, now)
		s.mu.Unlock()
	}
}

// sweep removes the entries of s that expired at or before now. s.mu must
// be held.
func (c *MemoryReplayCache) sweep(s *replayShard, now int64) {
	removed := 0
	for len(s.heap) > 0 && s.heap[0].exp <= now {
		delete(s.keys, s.pop().key)
		removed++
	}
	if removed > 0 {
		c.count.Add(int64(-removed))
		if len(s.keys) == 0 {
			// A map never shrinks; replacing an empty one returns the
			// memory of a past burst.
			s.keys = make(map[replayKey]int64)
			s.heap = nil
		}
	}
}

func (s *replayShard) push(e replayEntry) {
	s.heap = append(s.heap, e)
	i := len(s.heap) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if s.heap[parent].exp <= s.heap[i].exp {
			break
		}
		s.heap[parent], s.heap[i] = s.heap[i], s.heap[parent]
		i = parent
	}
}

func (s *replayShard) pop() replayEntry {
	top := s.heap[0]
	last := len(s.heap) - 1
	s.heap[0] = s.heap[last]
	s.heap = s.heap[:last]
	i := 0
	for {
		l, r, min := 2*i+1, 2*i+2, i
		if l < last && s.heap[l].exp < s.heap[min].exp {
			min = l
		}
		if r < last && s.heap[r].exp < s.heap[min].exp {
			min = r
		}
		if min == i {
			return top
		}
		s.heap[i], s.heap[min] = s.heap[min], s.heap[i]
		i = min
	}
}
