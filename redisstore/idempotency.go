package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/idempotency"
)

// IdempotencyStore keeps idempotency keys (package idempotency) in
// Redis, shared by every instance of an application using the same
// server. Redis expires keys itself: a claim lives for its lease, an
// answer for its TTL. It is safe for concurrent use.
//
// A key is the Redis string prefix + the scoped key, holding a small JSON
// document (fingerprint, claim token, whether it is answered, and the
// answer). Claiming, completing and releasing are Lua scripts, so Redis
// decides which of several callers claims a key, and only the claim's own
// token completes or releases it. When a scope's keys are bounded
// (idempotency.Config.MaxKeysPerScope), its live keys are also the
// members of the sorted set prefix + "scope:" + scope, by expiry, which
// the claim counts in the same step; a scoped key starts with a digit, so
// the two never meet.
//
// Redis must keep each key until its TTL ends: a retry whose key Redis
// dropped early runs the call again (see the package documentation).
// Under noeviction a full Redis refuses writes: a key that cannot be
// claimed answers 503, and the call does not run.
type IdempotencyStore struct {
	client redis.UniversalClient
	prefix string
}

var _ idempotency.Store = (*IdempotencyStore)(nil)

// keyDoc is the stored form of a key.
type keyDoc struct {
	Fingerprint string            `json:"f"`
	Token       string            `json:"t"`
	Done        bool              `json:"d,omitempty"`
	Status      int               `json:"s,omitempty"`
	Header      map[string]string `json:"h,omitempty"`
	Body        string            `json:"b,omitempty"`
}

func pxMillis(d time.Duration) int64 { return max(int64((d+time.Millisecond-1)/time.Millisecond), 1) }

// claimScript claims KEYS[1] with the document ARGV[1] for ARGV[2] ms,
// unless it is held ({0, the document}) or, when ARGV[3] is positive, its
// scope holds that many live keys ({2}). A scope's live keys are the
// members of the sorted set KEYS[2], by expiry in Redis's milliseconds;
// ARGV[4] is the key's member.
var claimScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then return {0, v} end
local max, lease = tonumber(ARGV[3]), tonumber(ARGV[2])
local now = 0
if max > 0 then
	local t = redis.call('TIME')
	now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
	redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
	if redis.call('ZCARD', KEYS[2]) >= max then return {2} end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', lease)
if max > 0 then
	redis.call('ZADD', KEYS[2], now + lease, ARGV[4])
	if redis.call('PTTL', KEYS[2]) < lease then redis.call('PEXPIRE', KEYS[2], lease) end
end
return {1}
`)

// scopeKey is the sorted set of scope's live keys.
func (s *IdempotencyStore) scopeKey(scope string) string { return s.prefix + "scope:" + scope }

// Claim implements idempotency.Store.
func (s *IdempotencyStore) Claim(ctx context.Context, scope, key, fingerprint, token string, lease time.Duration, max int) (bool, *idempotency.Record, error) {
	val, err := json.Marshal(keyDoc{Fingerprint: fingerprint, Token: token})
	if err != nil {
		return false, nil, err
	}
	res, err := claimScript.Run(ctx, s.client, []string{s.prefix + key, s.scopeKey(scope)}, val, pxMillis(lease), max, key).Slice()
	if err != nil {
		return false, nil, fmt.Errorf("redisstore: claiming a key: %w", err)
	}
	switch code, _ := res[0].(int64); {
	case code == 1:
		return true, nil, nil
	case code == 2:
		return false, nil, idempotency.ErrTooManyKeys
	case code != 0 || len(res) != 2:
		return false, nil, fmt.Errorf("redisstore: the claim script answered %v", res)
	}
	raw, _ := res[1].(string)
	var d keyDoc
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return false, nil, fmt.Errorf("redisstore: decoding %s: %w", key, err)
	}
	rec := &idempotency.Record{Fingerprint: d.Fingerprint, Token: d.Token, Done: d.Done, Status: d.Status, Header: d.Header}
	if d.Done {
		rec.Body = []byte(d.Body)
	}
	return false, rec, nil
}

// completeScript stores the answer in ARGV[2] for ARGV[3] ms, if the key
// is still claimed, unanswered, by token ARGV[1], and keeps its member
// ARGV[4] of its scope's set KEYS[2] (if it is one) as long.
var completeScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local r = cjson.decode(v)
if r.t ~= ARGV[1] or r.d then return 0 end
local a = cjson.decode(ARGV[2])
a.f = r.f
a.t = r.t
a.d = true
local ttl = tonumber(ARGV[3])
redis.call('SET', KEYS[1], cjson.encode(a), 'PX', ttl)
if redis.call('ZSCORE', KEYS[2], ARGV[4]) then
	local t = redis.call('TIME')
	redis.call('ZADD', KEYS[2], 'XX', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + ttl, ARGV[4])
	if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
end
return 1
`)

// releaseScript deletes the key if it is claimed, unanswered, by token
// ARGV[1], and its member ARGV[2] of its scope's set KEYS[2].
var releaseScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local r = cjson.decode(v)
if r.t ~= ARGV[1] or r.d then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return 1
`)

// Complete implements idempotency.Store.
func (s *IdempotencyStore) Complete(ctx context.Context, scope, key, token string, answer idempotency.Record, ttl time.Duration) error {
	val, err := json.Marshal(keyDoc{Status: answer.Status, Header: answer.Header, Body: string(answer.Body)})
	if err != nil {
		return err
	}
	if err := completeScript.Run(ctx, s.client, []string{s.prefix + key, s.scopeKey(scope)}, token, val, pxMillis(ttl), key).Err(); err != nil {
		return fmt.Errorf("redisstore: storing an answer: %w", err)
	}
	return nil
}

// Release implements idempotency.Store.
func (s *IdempotencyStore) Release(ctx context.Context, scope, key, token string) error {
	if err := releaseScript.Run(ctx, s.client, []string{s.prefix + key, s.scopeKey(scope)}, token, key).Err(); err != nil {
		return fmt.Errorf("redisstore: releasing a key: %w", err)
	}
	return nil
}
