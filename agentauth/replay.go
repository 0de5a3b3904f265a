package agentauth

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"strings"
	"time"

	"github.com/agentcap/agentcap/agentauth/internal/ttlmap"
)

// ReplayCache records token ids. CheckAndSet atomically records key for ttl
// and reports fresh=true if it was not already recorded. An implementation
// that cannot answer must return an error, never fresh=true: callers fail
// closed on errors.
type ReplayCache interface {
	CheckAndSet(ctx context.Context, key string, ttl time.Duration) (fresh bool, err error)
}

// ReplayKey returns the key under which a token id is recorded in a
// ReplayCache: prefix (ReplayKeyPrefix for agent JWTs), then the id of
// the token's signer with every ':' and '%' percent-encoded, then ':' and
// jti. The encoding keeps two different (id, jti) pairs from sharing a
// key even when an id holds the separator: joined plainly, agent "a:b"
// with jti "c" and agent "a" with jti "b:c" would both record "a:b:c",
// and one agent could use up another's token ids. An id without ':' or
// '%' is written as it is, so such keys are the plain join.
func ReplayKey(prefix, id, jti string) string {
	if !strings.ContainsAny(id, ":%") {
		return prefix + id + ":" + jti
	}
	var b strings.Builder
	b.Grow(len(prefix) + len(id) + 2*(strings.Count(id, ":")+strings.Count(id, "%")) + 1 + len(jti))
	b.WriteString(prefix)
	for i := range len(id) {
		switch c := id[i]; c {
		case ':':
			b.WriteString("%3A")
		case '%':
			b.WriteString("%25")
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte(':')
	b.WriteString(jti)
	return b.String()
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
	seeds   [2]maphash.Seed
	entries *ttlmap.Map[replayHash]
}

// replayHash is a key as the cache stores it: two independent 64-bit
// hashes, so that memory per entry does not depend on key length.
type replayHash [2]uint64

// NewMemoryReplayCache returns a cache holding at most maxEntries
// unexpired entries (DefaultReplayCacheEntries if maxEntries <= 0), about
// ReplayCacheEntryBytes each.
func NewMemoryReplayCache(maxEntries int) *MemoryReplayCache {
	if maxEntries <= 0 {
		maxEntries = DefaultReplayCacheEntries
	}
	return &MemoryReplayCache{
		seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		entries: ttlmap.New(ttlmap.Config[replayHash]{
			Max: maxEntries,
			// The first hash is already uniform: it picks the shard as it is.
			Hash: func(h replayHash) uint64 { return h[0] },
		}),
	}
}

// WithClock makes c read the time from now instead of time.Now, and
// returns c. It must be called before c is first used; tests use it to
// move time without sleeping.
func (c *MemoryReplayCache) WithClock(now func() time.Time) *MemoryReplayCache {
	c.entries.SetClock(now)
	return c
}

// Len returns the number of entries held, including expired entries not
// yet swept.
func (c *MemoryReplayCache) Len() int { return c.entries.Len() }

// CheckAndSet implements ReplayCache. A ttl that is not positive is an
// error.
func (c *MemoryReplayCache) CheckAndSet(_ context.Context, key string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, fmt.Errorf("agentauth: replay cache: ttl %v is not positive", ttl)
	}
	h := replayHash{maphash.String(c.seeds[0], key), maphash.String(c.seeds[1], key)}
	var fresh bool
	ok := c.entries.Update(h, func(now, exp int64) int64 {
		if fresh = exp <= now; !fresh {
			return exp
		}
		if now > math.MaxInt64-int64(ttl) {
			return math.MaxInt64
		}
		return now + int64(ttl)
	})
	if !ok {
		return false, fmt.Errorf("%w: %d unexpired entries", ErrReplayCacheFull, c.entries.Max())
	}
	return fresh, nil
}
