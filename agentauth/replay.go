package agentauth

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/internal/ttlmap"
	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/internal/readcheck"
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

// OwnerReplayCache is a ReplayCache that shares itself out among the
// owners of the token ids it records, so that one agent, or the agents of
// one host, cannot take all of a cache every agent relies on: a cache
// with no room left refuses every token (503, failing closed), so an
// agent that could fill it with fresh jtis could lock every other agent
// out. The verifiers record through CheckAndSetFor when their cache
// implements it, after the token's signature and every other check, so
// that the owners it is charged to are the verified ones. MemoryReplayCache
// and package redisstore's ReplayCache implement it.
type OwnerReplayCache interface {
	ReplayCache
	// CheckAndSetFor is CheckAndSet for a token id of agentID, an agent
	// of hostID (agentID "" for a host JWT). It fails with an error
	// wrapping ErrReplayShare, recording nothing, when the agent or the
	// host holds its share of the cache; other owners are not refused.
	CheckAndSetFor(ctx context.Context, key string, ttl time.Duration, agentID, hostID string) (fresh bool, err error)
}

// ErrReplayShare is the refusal of an OwnerReplayCache whose agent or
// host holds its share of the cache. The verifiers answer it 429
// rate_limited, with Retry-After: the token is refused as a request
// beyond a rate limit is, and its owner's older tokens free their room
// as they expire.
var ErrReplayShare = errors.New("agentauth: the agent or its host holds its share of the replay cache")

// ErrReplayHostShare is ErrReplayShare when it is the host whose agents
// hold the host's share: errors.Is matches both, and the verifiers' 429
// then names the agent's host rather than the agent.
var ErrReplayHostShare = fmt.Errorf("%w (the host's)", ErrReplayShare)

// checkAndSet records key in c for the verified agentID and hostID,
// through CheckAndSetFor when c shares itself out among owners.
//
// When the directory served the session's records unchecked (a pending
// readcheck.Check in ctx), the check is settled first: by c itself, for
// a cache that declares it does (readcheck.DeclareSettler), else by one
// read of the count. An id is never recorded for records that may be
// stale.
func checkAndSet(ctx context.Context, c ReplayCache, key string, ttl time.Duration, agentID, hostID string) (bool, error) {
	if !readcheck.Settles(c) {
		if err := readcheck.From(ctx).Verify(ctx); err != nil {
			return false, err
		}
	}
	if oc, ok := c.(OwnerReplayCache); ok {
		return oc.CheckAndSetFor(ctx, key, ttl, agentID, hostID)
	}
	return c.CheckAndSet(ctx, key, ttl)
}

// replayRefused answers a token the replay cache did not record: 429
// rate_limited for an owner beyond its share (the message says whose:
// whose, or whose host when the host is beyond its share), else 503
// temporarily_unavailable (fail closed).
func replayRefused(err error, whose string) error {
	if errors.Is(err, ErrReplayHostShare) && whose != "host" {
		whose += "'s host"
	}
	if errors.Is(err, ErrReplayShare) {
		return ratelimit.Error(ratelimit.Decision{RetryAfter: agentcap.UnavailableRetryAfter},
			"too many unexpired tokens of this "+whose+"; retry later").WithCause(err)
	}
	return Unavailable(msgReplayDown, fmt.Errorf("agentauth: replay cache: %w", err))
}

// ErrReplayCacheFull is returned by MemoryReplayCache when it holds its
// maximum number of unexpired entries. The cache never evicts an unexpired
// entry, because that would let the evicted token be replayed.
var ErrReplayCacheFull = errors.New("agentauth: replay cache full")

// defaultReplayCacheEntries is the bound of a MemoryReplayCache created
// with maxEntries <= 0.
const defaultReplayCacheEntries = 1 << 20

// ReplayCacheEntryBytes bounds the memory held per entry of a
// MemoryReplayCache, independent of key length since keys are stored as
// 128-bit hashes: a map slot and a heap slot of 24 bytes each, with the
// slack of map and slice growth (about 65 to 82 bytes measured). At the
// default bound that is at most about 100 MiB. The shares of owners cost
// a little more (see MemoryReplayCache).
const ReplayCacheEntryBytes = 100

// MemoryReplayCache is an in-process ReplayCache, safe for concurrent use.
// It is bounded: when it holds maxEntries unexpired entries, CheckAndSet
// fails with ErrReplayCacheFull until some expire. Expired entries are
// swept lazily on insert, in time proportional to the number swept, so
// no goroutine runs in the background and nothing needs closing.
//
// It is an OwnerReplayCache: the last quarter of its entries is kept for
// owners within their shares. Once three quarters of maxEntries are
// taken, an agent holding 1/64 of maxEntries, or a host whose agents
// hold 1/8 of it together, is refused (ErrReplayShare) until enough of
// its tokens expire, while every other agent and host still gets in.
// Below three quarters nobody is refused but by ErrReplayCacheFull, so a
// single busy agent may use most of the cache while it is alone in it.
// A cache of 1000 entries thus refuses an agent past 750 entries if it
// holds 15 of them, and a host if its agents hold 125. The shares are
// counted per verified owner: an agent and a host with unexpired tokens
// each cost a few hundred bytes more, at most about 2 KiB (one record
// per second of tokens still unexpired), and owners are agents and hosts
// of the directory, whose tokens verified.
//
// Keys are stored as 128-bit hashes under a per-process random seed. Two
// keys sharing a hash would make the second one look replayed (a spurious
// rejection, never an acceptance); an attacker cannot aim for that without
// the seed.
//
// A MemoryReplayCache only protects one process. Applications running
// several instances share a cache through Redis (package redisstore).
type MemoryReplayCache struct {
	seeds   [2]maphash.Seed
	entries *ttlmap.Map[replayHash]
	now     func() time.Time
	// reserveAt is the number of entries from which the shares bind;
	// agentShare and hostShare are the shares.
	reserveAt, agentShare, hostShare int
	agents, hosts                    *replayOwners
}

var _ OwnerReplayCache = (*MemoryReplayCache)(nil)

// replayHash is a key as the cache stores it: two independent 64-bit
// hashes, so that memory per entry does not depend on key length.
type replayHash [2]uint64

// NewMemoryReplayCache returns a cache holding at most maxEntries
// unexpired entries (1,048,576 if maxEntries <= 0), about
// ReplayCacheEntryBytes each.
func NewMemoryReplayCache(maxEntries int) *MemoryReplayCache {
	if maxEntries <= 0 {
		maxEntries = defaultReplayCacheEntries
	}
	return &MemoryReplayCache{
		seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		entries: ttlmap.New(ttlmap.Config[replayHash]{
			Max: maxEntries,
			// The first hash is already uniform: it picks the shard as it is.
			Hash: func(h replayHash) uint64 { return h[0] },
		}),
		now:        time.Now,
		reserveAt:  maxEntries - maxEntries/4,
		agentShare: max(maxEntries/64, 1),
		hostShare:  max(maxEntries/8, 1),
		agents:     newReplayOwners(),
		hosts:      newReplayOwners(),
	}
}

// WithClock makes c read the time from now instead of time.Now, and
// returns c. It must be called before c is first used; tests use it to
// move time without sleeping.
func (c *MemoryReplayCache) WithClock(now func() time.Time) *MemoryReplayCache {
	if now != nil {
		c.now = now
	}
	c.entries.SetClock(now)
	return c
}

// Len returns the number of entries held, including expired entries not
// yet swept.
func (c *MemoryReplayCache) Len() int { return c.entries.Len() }

// CheckAndSet implements ReplayCache. A ttl that is not positive is an
// error. The key is charged to nobody: no share limits it.
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
		return deadline(now, ttl)
	})
	if !ok {
		return false, fmt.Errorf("%w: %d unexpired entries", ErrReplayCacheFull, c.entries.Max())
	}
	return fresh, nil
}

// CheckAndSetFor implements OwnerReplayCache. The owners are charged
// before the key is recorded and refunded when it is not (a replayed
// token, a full cache), so that concurrent tokens of one owner never take
// more than its share, and a replay of someone's token costs them
// nothing.
func (c *MemoryReplayCache) CheckAndSetFor(ctx context.Context, key string, ttl time.Duration, agentID, hostID string) (bool, error) {
	if ttl <= 0 {
		return false, fmt.Errorf("agentauth: replay cache: ttl %v is not positive", ttl)
	}
	now := c.now().UnixNano()
	until := deadline(now, ttl)
	agentLimit, hostLimit := 0, 0
	if c.entries.Len() >= c.reserveAt {
		agentLimit, hostLimit = c.agentShare, c.hostShare
	}
	if agentID != "" && !c.agents.charge(agentID, now, until, agentLimit) {
		return false, fmt.Errorf("%w: agent %q holds %d of %d entries", ErrReplayShare, agentID, agentLimit, c.entries.Max())
	}
	if hostID != "" && !c.hosts.charge(hostID, now, until, hostLimit) {
		if agentID != "" {
			c.agents.refund(agentID, until)
		}
		return false, fmt.Errorf("%w: the agents of host %q hold %d of %d entries", ErrReplayHostShare, hostID, hostLimit, c.entries.Max())
	}
	fresh, err := c.CheckAndSet(ctx, key, ttl)
	if err != nil || !fresh {
		if agentID != "" {
			c.agents.refund(agentID, until)
		}
		if hostID != "" {
			c.hosts.refund(hostID, until)
		}
	}
	return fresh, err
}

// deadline is now + ttl, in Unix nanoseconds, saturating.
func deadline(now int64, ttl time.Duration) int64 {
	if now > math.MaxInt64-int64(ttl) {
		return math.MaxInt64
	}
	return now + int64(ttl)
}

// ownerShardCount is the number of shards of a replayOwners, each with its
// own lock, as the entries' own map has.
const ownerShardCount = 64

// replayOwners counts the unexpired entries each owner (an agent, or a
// host) of a MemoryReplayCache holds. Owners are kept by a 64-bit hash
// under a per-process seed: two owners sharing one are counted together,
// which may refuse them early, never let one past its share.
type replayOwners struct {
	seed   maphash.Seed
	shards [ownerShardCount]ownerShard
}

type ownerShard struct {
	mu     sync.Mutex
	owners map[uint64]*ownerUse
	// sweepAt is the number of owners from which the next new owner
	// sweeps the shard: twice the number left by the last sweep.
	sweepAt int
	_       [40]byte // a shard to a cache line of its own
}

// ownerUse is what one owner holds: its entries grouped by the second in
// which they expire, in the order they were recorded, so that an owner
// costs at most one group per second of a token's lifetime however many
// tokens it sends. Groups are expected in order of expiry (tokens of one
// cache share a lifetime); a group recorded out of order is dropped only
// once the groups before it are, so an owner is at worst counted a
// little longer, never less.
type ownerUse struct {
	groups []ownerGroup
	held   int
}

type ownerGroup struct {
	until int64 // Unix second, rounded up, by which every entry expired
	n     int
}

// minOwnerSweep is the number of owners below which a shard is not swept.
const minOwnerSweep = 64

func newReplayOwners() *replayOwners {
	o := &replayOwners{seed: maphash.MakeSeed()}
	for i := range o.shards {
		o.shards[i].owners = make(map[uint64]*ownerUse)
		o.shards[i].sweepAt = minOwnerSweep
	}
	return o
}

// second is the Unix second, rounded up, of a deadline in nanoseconds.
func second(ns int64) int64 {
	s := ns / int64(time.Second)
	if ns%int64(time.Second) > 0 {
		s++
	}
	return s
}

// expire drops the groups whose entries have all expired at now.
func (u *ownerUse) expire(now int64) {
	i := 0
	for i < len(u.groups) && u.groups[i].until*int64(time.Second) <= now {
		u.held -= u.groups[i].n
		i++
	}
	if i == len(u.groups) {
		u.groups = u.groups[:0]
	} else if i > 0 {
		u.groups = u.groups[i:]
	}
}

// charge counts an entry of owner expiring at until (nanoseconds), unless
// limit is positive and the owner holds that many entries already.
func (o *replayOwners) charge(owner string, now, until int64, limit int) bool {
	h := maphash.String(o.seed, owner)
	s := &o.shards[h%ownerShardCount]
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.owners[h]
	if u == nil {
		if len(s.owners) >= s.sweepAt {
			s.sweep(now)
		}
		u = &ownerUse{}
		s.owners[h] = u
	}
	u.expire(now)
	if limit > 0 && u.held >= limit {
		return false
	}
	sec := second(until)
	if n := len(u.groups); n > 0 && u.groups[n-1].until == sec {
		u.groups[n-1].n++
	} else {
		u.groups = append(u.groups, ownerGroup{until: sec, n: 1})
	}
	u.held++
	return true
}

// refund takes back a charge of owner for an entry expiring at until
// that was not recorded.
func (o *replayOwners) refund(owner string, until int64) {
	h := maphash.String(o.seed, owner)
	s := &o.shards[h%ownerShardCount]
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.owners[h]
	if u == nil {
		return
	}
	sec := second(until)
	for i := len(u.groups) - 1; i >= 0; i-- {
		if g := &u.groups[i]; g.until == sec {
			g.n--
			u.held--
			if g.n == 0 {
				u.groups = append(u.groups[:i], u.groups[i+1:]...)
			}
			return
		}
	}
}

// sweep forgets the owners that hold no unexpired entry. s.mu must be
// held.
func (s *ownerShard) sweep(now int64) {
	for h, u := range s.owners {
		if u.expire(now); u.held == 0 {
			delete(s.owners, h)
		}
	}
	s.sweepAt = max(2*len(s.owners), minOwnerSweep)
}
