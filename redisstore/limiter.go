package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/agentauth/ratelimit"
)

// gcraScript runs the same generic cell rate algorithm as
// ratelimit.Memory, atomically inside Redis. Times are microseconds. The
// clock is Redis's own (TIME) unless the caller passes one, so that every
// instance reads one clock. The key expires when its bucket is full
// again, so keys at rest cost nothing.
//
// KEYS[1] key; ARGV[1] period = window/n; ARGV[2] window; ARGV[3] now, or
// -1 for the server's clock. Returns {allowed, remaining, retry_after,
// reset_after}.
var gcraScript = redis.NewScript(`
local period = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
if now < 0 then
	local t = redis.call('TIME')
	now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local tat = tonumber(redis.call('GET', KEYS[1]) or now) or now
if tat < now then
	tat = now
end
local nxt = tat + period
local allow_at = nxt - window
if now < allow_at then
	return {0, 0, allow_at - now, tat - now}
end
redis.call('SET', KEYS[1], string.format('%d', nxt), 'PX', math.ceil((nxt - now) / 1000))
return {1, math.floor((window - (nxt - now)) / period), 0, nxt - now}
`)

// Limiter is a ratelimit.Limiter shared through Redis, for applications
// that serve one agent from several instances: a request counted by one
// instance counts for all of them. It is safe for concurrent use.
//
// A key is the Redis string prefix + the caller's key, holding the
// bucket's theoretical arrival time in microseconds. It expires when its
// bucket is full again, and Redis must keep it until then: a key evicted
// early hands its caller a fresh burst (see the package documentation).
// Under noeviction a full Redis refuses writes, which the limiter
// reports as errors, and its callers refuse the request (503).
//
// A request is charged by one script. When a connection drops after
// Redis ran it and before its answer came back, go-redis sends the
// script again (up to the client's MaxRetries), which charges the
// request once more: a lost answer can only make the limit stricter.
type Limiter struct {
	client redis.UniversalClient
	prefix string
	now    func() time.Time
}

var _ ratelimit.Limiter = (*Limiter)(nil)

// WithClock makes l pass the time from now to Redis instead of letting
// Redis read its own clock, and returns l. Tests use it to move time
// without sleeping; instances in production should share Redis's clock.
// The Store hands out one Limiter: set its clock before it is used.
func (l *Limiter) WithClock(now func() time.Time) *Limiter {
	l.now = now
	return l
}

// Allow implements ratelimit.Limiter. Limits are kept to the microsecond:
// a Window/N shorter than that is refused.
func (l *Limiter) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Decision, error) {
	if err := limit.Validate(); err != nil {
		return ratelimit.Decision{}, err
	}
	period := (limit.Window / time.Duration(limit.N)).Microseconds()
	if period <= 0 {
		return ratelimit.Decision{}, fmt.Errorf("redisstore: limit %v: Window/N is under a microsecond", limit)
	}
	now := int64(-1)
	if l.now != nil {
		now = l.now().UnixMicro()
	}
	res, err := gcraScript.Run(ctx, l.client, []string{l.prefix + key},
		strconv.FormatInt(period, 10), strconv.FormatInt(limit.Window.Microseconds(), 10), strconv.FormatInt(now, 10)).Int64Slice()
	if err != nil {
		return ratelimit.Decision{}, fmt.Errorf("redisstore: %w", err)
	}
	if len(res) != 4 {
		return ratelimit.Decision{}, fmt.Errorf("redisstore: script answered %d values, want 4", len(res))
	}
	return ratelimit.Decision{
		Allowed:    res[0] == 1,
		Remaining:  int(res[1]),
		RetryAfter: time.Duration(res[2]) * time.Microsecond,
		ResetAfter: time.Duration(res[3]) * time.Microsecond,
	}, nil
}
