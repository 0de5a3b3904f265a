// Package redisstore keeps idempotency keys (package idempotency) in
// Redis, shared by every instance of an application using the same
// server. Redis expires keys itself: a claim lives for its lease, an
// answer for its TTL.
//
// A key is the Redis string prefix + the scoped key, holding a small JSON
// document (fingerprint, claim token, whether it is answered, and the
// answer). A claim is SET NX PX, so Redis decides which of several
// callers claims a key; completing and releasing are Lua scripts that act
// only for the claim's own token.
package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/idempotency"
)

// Store is an idempotency.Store in Redis. It is safe for concurrent use.
type Store struct {
	client redis.UniversalClient
	prefix string
}

var _ idempotency.Store = (*Store)(nil)

// New returns a Store keeping keys under prefix (for example
// "bank:idem:") through client. The client's own timeouts bound each
// call.
func New(client redis.UniversalClient, prefix string) *Store {
	return &Store{client: client, prefix: prefix}
}

// doc is the stored form of a key.
type doc struct {
	Fingerprint string            `json:"f"`
	Token       string            `json:"t"`
	Done        bool              `json:"d,omitempty"`
	Status      int               `json:"s,omitempty"`
	Header      map[string]string `json:"h,omitempty"`
	Body        string            `json:"b,omitempty"`
}

func pxMillis(d time.Duration) int64 { return max(int64((d+time.Millisecond-1)/time.Millisecond), 1) }

// Claim implements idempotency.Store.
func (s *Store) Claim(ctx context.Context, key, fingerprint, token string, lease time.Duration) (bool, *idempotency.Record, error) {
	val, err := json.Marshal(doc{Fingerprint: fingerprint, Token: token})
	if err != nil {
		return false, nil, err
	}
	for range 3 {
		err := s.client.Do(ctx, "SET", s.prefix+key, val, "NX", "PX", pxMillis(lease)).Err()
		if err == nil {
			return true, nil, nil
		}
		if !errors.Is(err, redis.Nil) {
			return false, nil, fmt.Errorf("redisstore: SET NX: %w", err)
		}
		raw, err := s.client.Get(ctx, s.prefix+key).Bytes()
		if errors.Is(err, redis.Nil) {
			continue // expired in between
		}
		if err != nil {
			return false, nil, fmt.Errorf("redisstore: GET: %w", err)
		}
		var d doc
		if err := json.Unmarshal(raw, &d); err != nil {
			return false, nil, fmt.Errorf("redisstore: decoding %s: %w", key, err)
		}
		rec := &idempotency.Record{Fingerprint: d.Fingerprint, Token: d.Token, Done: d.Done, Status: d.Status, Header: d.Header}
		if d.Done {
			rec.Body = []byte(d.Body)
		}
		return false, rec, nil
	}
	return false, nil, errors.New("redisstore: the key kept changing while it was claimed")
}

// completeScript stores the answer in ARGV[2] for ARGV[3] ms, if the key
// is still claimed, unanswered, by token ARGV[1].
var completeScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local r = cjson.decode(v)
if r.t ~= ARGV[1] or r.d then return 0 end
local a = cjson.decode(ARGV[2])
a.f = r.f
a.t = r.t
a.d = true
redis.call('SET', KEYS[1], cjson.encode(a), 'PX', ARGV[3])
return 1
`)

// releaseScript deletes the key if it is claimed, unanswered, by token
// ARGV[1].
var releaseScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local r = cjson.decode(v)
if r.t ~= ARGV[1] or r.d then return 0 end
redis.call('DEL', KEYS[1])
return 1
`)

// Complete implements idempotency.Store.
func (s *Store) Complete(ctx context.Context, key, token string, answer idempotency.Record, ttl time.Duration) error {
	val, err := json.Marshal(doc{Status: answer.Status, Header: answer.Header, Body: string(answer.Body)})
	if err != nil {
		return err
	}
	if err := completeScript.Run(ctx, s.client, []string{s.prefix + key}, token, val, pxMillis(ttl)).Err(); err != nil {
		return fmt.Errorf("redisstore: storing an answer: %w", err)
	}
	return nil
}

// Release implements idempotency.Store.
func (s *Store) Release(ctx context.Context, key, token string) error {
	if err := releaseScript.Run(ctx, s.client, []string{s.prefix + key}, token).Err(); err != nil {
		return fmt.Errorf("redisstore: releasing a key: %w", err)
	}
	return nil
}
