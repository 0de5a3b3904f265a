package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// ErrFull is returned by Memory when it tracks its maximum number of keys
// and none of them is at rest. It never forgets a key that is not at
// rest, because that would hand the key a fresh burst.
var ErrFull = errors.New("ratelimit: limiter full")

// DefaultMaxKeys is the bound of a Memory created with maxKeys <= 0.
const DefaultMaxKeys = 1 << 20

const shards = 64

// minSweepLen is the shard size below which a shard is never swept.
const minSweepLen = 64

// Memory is an in-process Limiter, safe for concurrent use. It keeps one
// timestamp per key in sharded maps. A key whose bucket is full again
// (at rest) carries no information and is dropped by lazy sweeps: a shard
// is swept when it has doubled since its last sweep, so sweeping costs
// amortized constant time per request and no goroutine runs in the
// background.
//
// Memory only limits one process; instances that must share limits use
// package redislimit.
type Memory struct {
	max    int64
	count  atomic.Int64
	now    func() time.Time
	seed   maphash.Seed
	shards [shards]memShard
}

type memShard struct {
	mu      sync.Mutex
	tats    map[string]int64 // key -> theoretical arrival time, unix ns
	sweepAt int
	_       [32]byte // keep neighbouring shard locks off one cache line
}

var _ Limiter = (*Memory)(nil)

// NewMemory returns a limiter tracking at most maxKeys keys that are not
// at rest (DefaultMaxKeys if maxKeys <= 0).
func NewMemory(maxKeys int) *Memory {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	m := &Memory{max: int64(maxKeys), now: time.Now, seed: maphash.MakeSeed()}
	for i := range m.shards {
		m.shards[i].tats = make(map[string]int64)
		m.shards[i].sweepAt = minSweepLen
	}
	return m
}

// WithClock makes m read the time from now instead of time.Now, and
// returns m. It must be called before m is first used; tests use it to
// move time without sleeping.
func (m *Memory) WithClock(now func() time.Time) *Memory {
	if now != nil {
		m.now = now
	}
	return m
}

// Len returns the number of keys tracked, including keys at rest that no
// sweep has dropped yet.
func (m *Memory) Len() int { return int(m.count.Load()) }

// Allow implements Limiter.
func (m *Memory) Allow(ctx context.Context, key string, limit Limit) (Decision, error) {
	if err := limit.Validate(); err != nil {
		return Decision{}, err
	}
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}
	s := &m.shards[maphash.String(m.seed, key)%shards]
	s.mu.Lock()
	defer s.mu.Unlock()
	now := m.now().UnixNano()
	tat, known := s.tats[key]
	if !known {
		if len(s.tats) >= s.sweepAt {
			m.sweep(s, now)
			s.sweepAt = max(2*len(s.tats), minSweepLen)
		}
		if !m.reserve() {
			// Other shards may hold keys at rest; their locks must not
			// be taken while holding this one.
			s.mu.Unlock()
			m.sweepAll(now)
			s.mu.Lock()
			if tat, known = s.tats[key]; !known && !m.reserve() {
				return Decision{}, fmt.Errorf("%w: %d keys", ErrFull, m.max)
			}
		}
	}
	// A key at rest always has room for one request, so a key reserved
	// above is always stored here.
	next, d := gcra(tat, now, int64(limit.period()), int64(limit.Window))
	if d.Allowed {
		s.tats[key] = next
	}
	return d, nil
}

// reserve takes one slot of the bound, or reports that none is left.
func (m *Memory) reserve() bool {
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

func (m *Memory) sweepAll(now int64) {
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		m.sweep(s, now)
		s.mu.Unlock()
	}
}

// sweep drops the keys of s at rest at now. s.mu must be held.
func (m *Memory) sweep(s *memShard, now int64) {
	removed := 0
	for k, tat := range s.tats {
		if tat <= now {
			delete(s.tats, k)
			removed++
		}
	}
	if removed > 0 {
		m.count.Add(int64(-removed))
		if len(s.tats) == 0 {
			// A map never shrinks; a new one returns a burst's memory.
			s.tats = make(map[string]int64)
		}
	}
}
