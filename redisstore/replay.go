package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/internal/attempt"
	"github.com/agentcap/agentcap/internal/readcheck"
)

// ReplayCache is an agentauth.ReplayCache shared through Redis, for
// applications that verify agent JWTs on more than one instance: a token
// id recorded by one instance is refused by every other. It records a
// token id with one script that sets its key unless it exists: Redis
// decides atomically which of several concurrent callers records a key
// first, and expires the key itself. It is safe for concurrent use.
//
// A recorded token id is a key with a TTL, which Redis must keep until
// the TTL ends: a token whose id Redis dropped early is accepted again
// (see the package documentation). Under noeviction a full Redis refuses
// writes, and the verifiers refuse tokens with 503 (failing closed).
//
// # Shares
//
// The cache is an agentauth.OwnerReplayCache: the verifiers charge each
// token id to its agent and host, and the cache refuses a token
// (agentauth.ErrReplayShare, answered 429) of an agent that holds
// Config.ReplayPerAgent unexpired ids, or of a host whose agents hold
// Config.ReplayPerHost, so that one agent or host cannot fill the Redis
// every instance relies on. The ids an owner holds are counted in
// buckets of ten seconds of recording time, over the token's lifetime
// and the bucket it started in: an owner may be refused a little early,
// never late.
//
// # Keys
//
// A recorded token id is the Redis string key prefix + key, which Redis
// expires after the ttl. It holds the name of the attempt that recorded
// it, unique to one call of CheckAndSet or CheckAndSetFor: when a
// connection drops after Redis ran the script and before its answer
// came back, go-redis sends the script again, and that second run finds
// the key holding its own call's name and answers it fresh, where it
// would otherwise take the token for a replay of itself.
//
// The key is the one the caller passes to CheckAndSet; for agent JWTs it is agentauth.ReplayKey's:
// ReplayKeyPrefix ("agentauth:jti:"), the agent id with every ':' and
// '%' percent-encoded, ':' and the jti. With the Store's prefix "bank:"
// (the cache's prefix "bank:replay:"), the token "j1" of agent "agt_1"
// is the key "bank:replay:agentauth:jti:agt_1:j1", and the token "c" of
// agent "a:b" is "bank:replay:agentauth:jti:a%3Ab:c", which the token
// "b:c" of agent "a" ("...:jti:a:b:c") cannot share. The cache itself
// adds nothing but the prefix, so keys that differ stay different in
// Redis.
//
// An owner's buckets are the counters prefix + "share:agent:" + agent id
// (or "share:host:" + host id) + ":" + the bucket's number (Unix time in
// tens of seconds), which expire with the last id they count. The number
// after the last ':' ends the key, so two owners never share a bucket,
// and no key agentauth.ReplayKey makes starts with "share:".
//
// # The count of changes
//
// A verified call whose provider served the agent and host it keeps
// without reading the Store's count of changes (Changes) first has that
// count compared, in the same script, with the value those records were
// read at: when it moved, the cache records nothing and returns an
// error, and the provider verifies the call again from fresh records. A
// verified call thus makes one round trip to Redis, not two.
type ReplayCache struct {
	changes           *Changes
	client            redis.UniversalClient
	prefix            string
	perAgent, perHost int
	now               func() time.Time
}

var _ agentauth.OwnerReplayCache = (*ReplayCache)(nil)

// newReplayCache returns the cache under prefix, with cfg's shares and
// clock or their defaults.
func newReplayCache(client redis.UniversalClient, prefix string, cfg Config) *ReplayCache {
	c := &ReplayCache{client: client, prefix: prefix, perAgent: cfg.ReplayPerAgent, perHost: cfg.ReplayPerHost, now: cfg.ReplayNow}
	if c.perAgent == 0 {
		c.perAgent = 100_000
	}
	if c.perHost == 0 {
		c.perHost = 1_000_000
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// ttlMillis is a ttl in whole milliseconds, rounded up.
func ttlMillis(ttl time.Duration) int64 {
	return int64((ttl + time.Millisecond - 1) / time.Millisecond)
}

// CheckAndSet implements agentauth.ReplayCache. The ttl is rounded up to a
// whole millisecond; a ttl that is not positive is an error. The id is
// charged to nobody.
func (c *ReplayCache) CheckAndSet(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, fmt.Errorf("redisstore: ttl %v is not positive", ttl)
	}
	if _, err := c.settle(ctx, false); err != nil {
		return false, err
	}
	res, err := setOnceScript.Run(ctx, c.client, []string{c.prefix + key}, attempt.New(), ttlMillis(ttl)).Int64()
	if err != nil {
		return false, fmt.Errorf("redisstore: recording a token id: %w", err)
	}
	return res == 1, nil
}

// setOnceScript sets KEYS[1] to ARGV[1], the attempt's name, for ARGV[2]
// ms, unless it is set already: it answers 1 when KEYS[1] holds ARGV[1]
// (set now, or by a run whose answer was lost), 0 when it holds another.
var setOnceScript = redis.NewScript(`local v = redis.call('GET', KEYS[1])
if v then return v == ARGV[1] and 1 or 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`)

// The cache settles read checks itself (see settle).
func init() { readcheck.DeclareSettler((*ReplayCache)(nil)) }

// settle settles a read check pending in ctx that the script cannot: one
// on another count of changes than the Store's (or whatever the call, for
// CheckAndSet). It returns the value the script must find the Store's
// count at ("" for none).
func (c *ReplayCache) settle(ctx context.Context, inScript bool) (string, error) {
	chk := readcheck.From(ctx)
	src, gen, ok := chk.Pending()
	if !ok {
		return "", nil
	}
	if inScript && c.changes != nil && src == readcheck.Counter(c.changes) {
		return strconv.FormatUint(gen, 10), nil
	}
	if err := chk.Verify(ctx); err != nil {
		return "", fmt.Errorf("redisstore: %w", err)
	}
	return "", nil
}

// bucketWidth is the span of recording time one bucket of an owner
// counts.
const bucketWidth = 10 * time.Second

// shareScript records a token id charged to an agent and a host, unless
// it is recorded already (0) or an owner holds its share (-1 the agent,
// -2 the host), in one step, so that concurrent tokens of one owner never
// pass its share together. An id recorded by this attempt (a run whose
// answer was lost) answers 1 again, charging nothing more.
//
// KEYS[1] is the id's key; then ARGV[2] bucket keys of the agent and
// ARGV[3] of the host, oldest first, the last one the current bucket.
// ARGV[1] is the ttl in ms, ARGV[4] and ARGV[5] the shares (0: none),
// ARGV[6] how long a charged bucket is kept, in ms, ARGV[7] the
// attempt's name, which the id's key holds.
var shareScript = redis.NewScript(shareOwn + shareBody)

// shareCheckedScript is shareScript after a read check: it returns -3,
// recording nothing, unless the count of changes, the last of KEYS, holds
// ARGV[8]. An id this attempt recorded answers 1 before the count is
// looked at: the run that recorded it found the count unmoved.
var shareCheckedScript = redis.NewScript(shareOwn + `if redis.call('GET', KEYS[#KEYS]) ~= ARGV[8] then return -3 end
` + shareBody)

// shareOwn starts both: it answers 1 for an id this attempt recorded.
const shareOwn = `local v = redis.call('GET', KEYS[1])
if v == ARGV[7] then return 1 end
`

const shareBody = `
local function held(first, n)
	local sum = 0
	for _, v in ipairs(redis.call('MGET', unpack(KEYS, first, first + n - 1))) do
		if v then sum = sum + tonumber(v) end
	end
	return sum
end
local function charge(k, keep)
	redis.call('INCR', k)
	if redis.call('PTTL', k) < keep then redis.call('PEXPIRE', k, keep) end
end
if v then return 0 end
local na, nh = tonumber(ARGV[2]), tonumber(ARGV[3])
local la, lh = tonumber(ARGV[4]), tonumber(ARGV[5])
if na > 0 and la > 0 and held(2, na) >= la then return -1 end
if nh > 0 and lh > 0 and held(2 + na, nh) >= lh then return -2 end
redis.call('SET', KEYS[1], ARGV[7], 'PX', ARGV[1])
local keep = tonumber(ARGV[6])
if na > 0 then charge(KEYS[1 + na], keep) end
if nh > 0 then charge(KEYS[1 + na + nh], keep) end
return 1
`

// CheckAndSetFor implements agentauth.OwnerReplayCache.
func (c *ReplayCache) CheckAndSetFor(ctx context.Context, key string, ttl time.Duration, agentID, hostID string) (bool, error) {
	if ttl <= 0 {
		return false, fmt.Errorf("redisstore: ttl %v is not positive", ttl)
	}
	want, err := c.settle(ctx, true)
	if err != nil {
		return false, err
	}
	now := c.now()
	// An id recorded in bucket b expires by the end of b plus ttl: the
	// buckets from the one holding now - ttl on may count live ids.
	last := now.UnixNano() / int64(bucketWidth)
	first := now.Add(-ttl).UnixNano() / int64(bucketWidth)
	keys := []string{c.prefix + key}
	buckets := func(kind, id string) int {
		if id == "" {
			return 0
		}
		for b := first; b <= last; b++ {
			keys = append(keys, c.prefix+"share:"+kind+":"+id+":"+strconv.FormatInt(b, 10))
		}
		return int(last - first + 1)
	}
	na := buckets("agent", agentID)
	nh := buckets("host", hostID)
	keep := ttlMillis(ttl + 2*bucketWidth)
	args := []any{ttlMillis(ttl), na, nh, max(c.perAgent, 0), max(c.perHost, 0), keep, attempt.New()}
	script := shareScript
	if want != "" {
		script, keys, args = shareCheckedScript, append(keys, c.changes.key), append(args, want)
	}
	res, err := script.Run(ctx, c.client, keys, args...).Int64()
	if err != nil {
		return false, fmt.Errorf("redisstore: recording a token id: %w", err)
	}
	if want != "" && res != -3 {
		readcheck.From(ctx).Settle()
	}
	switch res {
	case -3:
		return false, fmt.Errorf("redisstore: recording a token id: %w", readcheck.ErrMoved)
	case 1:
		return true, nil
	case 0:
		return false, nil
	case -1:
		return false, fmt.Errorf("%w: agent %q holds %d unexpired token ids", agentauth.ErrReplayShare, agentID, c.perAgent)
	case -2:
		return false, fmt.Errorf("%w: the agents of host %q hold %d unexpired token ids", agentauth.ErrReplayHostShare, hostID, c.perHost)
	}
	return false, fmt.Errorf("redisstore: the script answered %d", res)
}
