package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/internal/attempt"
)

// ConfirmStore keeps confirmation tokens (package confirm) in Redis,
// shared by every instance of an application using the same server.
// Redis forgets tokens itself, when their retention ends. It is safe for
// concurrent use.
//
// A token is the Redis string prefix + its ID, holding a small JSON
// document (the binding, the expiry in Unix milliseconds, whether it was
// used and, once it was, the name of the attempt that spent it).
// Consuming is one Lua script, so Redis decides which of several callers
// spends a token. Issuing and consuming are each safe to send twice, as
// go-redis does when a connection drops before Redis's answer came back:
// the second run finds the token as its own first run left it, and
// answers the same.
//
// Redis must keep each token until its retention ends: a spent token it
// dropped early is refused as unknown instead of as used (see the
// package documentation). Under noeviction a full Redis refuses writes:
// a token that cannot be issued or spent answers 503, and the call does
// not run.
type ConfirmStore struct {
	client redis.UniversalClient
	prefix string
}

var _ confirm.Store = (*ConfirmStore)(nil)

// tokenDoc is the stored form of a token.
type tokenDoc struct {
	Subject    string `json:"s"`
	Capability string `json:"c"`
	Digest     string `json:"d"`
	Audience   string `json:"a"`
	// Expires is in Unix milliseconds, which a Lua number holds exactly.
	Expires int64 `json:"e"`
	// Forget is when the token is forgotten, in Unix milliseconds: Redis
	// drops the key then, and a clock that runs ahead of the server's
	// sees it forgotten already.
	Forget int64 `json:"f"`
	Used   bool  `json:"u"`
}

// Put implements confirm.Store.
func (s *ConfirmStore) Put(ctx context.Context, id string, rec confirm.Record, forget time.Time) error {
	val, err := json.Marshal(tokenDoc{Subject: rec.Subject, Capability: rec.Capability, Digest: rec.Digest,
		Audience: rec.Audience, Expires: rec.ExpiresAt.UnixMilli(), Forget: forget.UnixMilli()})
	if err != nil {
		return err
	}
	ttl := time.Until(forget)
	if ttl < time.Millisecond {
		// Already forgotten: there is nothing to keep.
		return nil
	}
	// The document is the attempt's name: a token's id is random, so no
	// other Put writes it under that id.
	res, err := setOnceScript.Run(ctx, s.client, []string{s.prefix + id}, val, pxMillis(ttl)).Int64()
	if err != nil {
		return fmt.Errorf("redisstore: issuing a token: %w", err)
	}
	if res != 1 {
		return errors.New("redisstore: token id recorded twice")
	}
	return nil
}

// consumeScript marks the token used by the attempt ARGV[6] if it is
// unused, unexpired at ARGV[5] and bound to ARGV[1..4]; it returns {1 or
// 0, the document as it was}, or nil for an unknown token. A token the
// attempt itself spent (a run whose answer was lost) answers {1, the
// document as it was before}.
var consumeScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return nil end
local r = cjson.decode(v)
if r.u and r.k == ARGV[6] then
	r.u = false
	r.k = nil
	return {1, cjson.encode(r)}
end
if r.f <= tonumber(ARGV[5]) then return nil end
if r.u or r.s ~= ARGV[1] or r.c ~= ARGV[2] or r.d ~= ARGV[3] or r.a ~= ARGV[4] or r.e <= tonumber(ARGV[5]) then
	return {0, v}
end
r.u = true
r.k = ARGV[6]
redis.call('SET', KEYS[1], cjson.encode(r), 'KEEPTTL')
return {1, v}
`)

// Consume implements confirm.Store.
func (s *ConfirmStore) Consume(ctx context.Context, id string, want confirm.Record, now time.Time) (*confirm.Record, bool, error) {
	res, err := consumeScript.Run(ctx, s.client, []string{s.prefix + id},
		want.Subject, want.Capability, want.Digest, want.Audience, now.UnixMilli(), attempt.New()).Slice()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("redisstore: consuming a token: %w", err)
	}
	if len(res) != 2 {
		return nil, false, errors.New("redisstore: unexpected script result")
	}
	won, _ := res[0].(int64)
	raw, _ := res[1].(string)
	var d tokenDoc
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return nil, false, fmt.Errorf("redisstore: decoding a token: %w", err)
	}
	rec := &confirm.Record{Subject: d.Subject, Capability: d.Capability, Digest: d.Digest, Audience: d.Audience,
		ExpiresAt: time.UnixMilli(d.Expires), Used: d.Used}
	return rec, won == 1, nil
}
