package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/agentcap/agentcap/agentauth/internal/ttlmap"
)

// ErrFull is returned by Memory when it tracks its maximum number of keys
// and none of them is at rest. It never forgets a key that is not at
// rest, because that would hand the key a fresh burst.
var ErrFull = errors.New("ratelimit: limiter full")

// defaultMaxKeys is the bound of a Memory created with maxKeys <= 0.
const defaultMaxKeys = 1 << 20

// Memory is an in-process Limiter, safe for concurrent use. It keeps one
// timestamp per key in sharded maps. A key whose bucket is full again
// (at rest) carries no information and is dropped by lazy sweeps: a shard
// is swept when it has doubled since its last sweep, so sweeping costs
// amortized constant time per request and no goroutine runs in the
// background.
//
// Memory only limits one process; instances that must share limits use
// the Limiter of package redisstore.
type Memory struct {
	tats *ttlmap.Map[string] // key -> theoretical arrival time, unix ns
}

var _ Limiter = (*Memory)(nil)

// NewMemory returns a limiter tracking at most maxKeys keys that are not
// at rest (1,048,576 if maxKeys <= 0).
func NewMemory(maxKeys int) *Memory {
	if maxKeys <= 0 {
		maxKeys = defaultMaxKeys
	}
	seed := maphash.MakeSeed()
	return &Memory{tats: ttlmap.New(ttlmap.Config[string]{
		Max:  maxKeys,
		Hash: func(key string) uint64 { return maphash.String(seed, key) },
		// A key often comes back soon after it comes to rest.
		SweepOnDoubling: true,
	})}
}

// WithClock makes m read the time from now instead of time.Now, and
// returns m. It must be called before m is first used; tests use it to
// move time without sleeping.
func (m *Memory) WithClock(now func() time.Time) *Memory {
	m.tats.SetClock(now)
	return m
}

// Len returns the number of keys tracked, including keys at rest that no
// sweep has dropped yet.
func (m *Memory) Len() int { return m.tats.Len() }

// Allow implements Limiter.
func (m *Memory) Allow(ctx context.Context, key string, limit Limit) (Decision, error) {
	if err := limit.Validate(); err != nil {
		return Decision{}, err
	}
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}
	period, window := int64(limit.period()), int64(limit.Window)
	var d Decision
	// A key's tat is exactly the time it comes to rest, so it is the
	// key's deadline in the map. An absent key is at rest and always has
	// room for one request; a refused request leaves the tat as it is.
	ok := m.tats.Update(key, func(now, tat int64) int64 {
		var next int64
		next, d = gcra(tat, now, period, window)
		return next
	})
	if !ok {
		return Decision{}, fmt.Errorf("%w: %d keys", ErrFull, m.tats.Max())
	}
	return d, nil
}
