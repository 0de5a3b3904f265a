// Package redisstore keeps every store that Redis serves in one Redis
// server, shared by every instance of an application: confirmation
// tokens (confirm.Store), idempotency keys (idempotency.Store), the
// replay cache of agent JWTs (agentauth.OwnerReplayCache) and the rate
// limiter (ratelimit.Limiter), and the count of changes by which the
// instances sharing a provider's records in SQL keep them in memory
// (sqlstore.Changes).
//
// An application opens one Store and hands its parts to the features:
//
//	rs, err := redisstore.New(ctx, client, redisstore.Config{Prefix: "bank:"})
//	...
//	tokens, _ := confirm.New(confirm.Config{Store: rs.Confirm()})
//	guard, _ := idempotency.New(idempotency.Config{Store: rs.Idempotency()})
//	verifierConfig.Replay, verifierConfig.Limiter = rs.Replay(), rs.Limiter()
//
// Each feature still sees only its own interface.
//
// # Keys
//
// Every key starts with Config.Prefix, then the part of one store:
// "confirm:" for confirmation tokens, "idem:" for idempotency keys,
// "replay:" for the replay cache and "limit:" for the rate limiter; the
// count of changes to a provider's records is the key "changes". With
// the prefix "bank:", the token id "t1" is the key "bank:confirm:t1".
// What follows is each store's own layout, described on its type, as the
// packages these stores were before (confirm/redisstore,
// idempotency/redisstore, agentauth/redisreplay and
// agentauth/ratelimit/redislimit) wrote it. Their keys are read as they
// are: with Config.Prefix when their prefixes had the shape above (such
// as "bank:confirm:" and "bank:idem:"), else with Config.Prefixes giving
// each store the prefix its package was given.
//
// Some scripts touch two keys that need not share a hash slot, so the
// Store runs on one Redis primary (with or without replicas), not on
// Redis Cluster.
//
// # Redis must not evict
//
// Every store gives its keys a TTL and relies on Redis to keep each key
// until that TTL ends: a replay cache that loses a token id accepts the
// token again, a lost idempotency key lets a retried call run twice, a
// lost confirmation token is refused as unknown rather than as used, and
// a lost rate limit hands its caller a fresh burst. Under a
// maxmemory-policy that evicts (volatile-lru, allkeys-lru and the other
// volatile-* and allkeys-* policies, the default of several managed
// services), a full Redis drops such keys silently. New therefore reads
// the server's policy (CONFIG GET maxmemory-policy) and refuses to start
// unless it is noeviction, under which a full Redis refuses writes and
// the stores report errors, which their callers answer with 503 (failing
// closed). A server that refuses CONFIG GET (managed services often do,
// and ACLs may) is refused too, since the policy cannot be checked: make
// sure it is noeviction and set Config.AcceptEviction.
//
// See docs/storage.md for how the stores of agentcap are laid out.
package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// The part of the key each store adds after Config.Prefix.
const (
	confirmPart     = "confirm:"
	idempotencyPart = "idem:"
	replayPart      = "replay:"
	limiterPart     = "limit:"
	changesPart     = "changes"
)

// Config configures a Store.
type Config struct {
	// Prefix starts every key the Store writes, for example "bank:"
	// (see the package documentation for the part each store adds).
	Prefix string
	// Prefixes, when set, replaces Prefix and the parts: each store
	// writes under the prefix given for it, used exactly as it is. It is
	// for Redis data written by the separate packages the stores were
	// before, whose keys it keeps reading: give each store the Prefix
	// its package's Config had. Prefix must be empty then.
	Prefixes *Prefixes
	// AcceptEviction starts the Store on a Redis whose maxmemory-policy
	// may evict keys, or whose policy cannot be read, without asking:
	// the application takes the risks the package documentation lists.
	AcceptEviction bool
	// ReplayPerAgent bounds the unexpired token ids of one agent in the
	// replay cache, ReplayPerHost those of all the agents of one host, in
	// CheckAndSetFor: past either, the token is refused with
	// agentauth.ErrReplayShare. Zero means 100,000 and 1,000,000 (some 10
	// and 100 MB of Redis memory; 1,400 and 14,000 tokens a second over
	// the verifiers' 70 s window); negative means no bound.
	ReplayPerAgent, ReplayPerHost int
	// ReplayNow is the clock of the replay cache's buckets (see
	// ReplayCache). Nil means time.Now; the ids themselves expire by
	// Redis's clock.
	ReplayNow func() time.Time
}

// Prefixes are the whole key prefixes of the four stores (see
// Config.Prefixes). Stores sharing a prefix share its key space, as they
// did when separate: give each its own.
type Prefixes struct {
	// Confirm was confirm/redisstore's Config.Prefix.
	Confirm string
	// Idempotency was idempotency/redisstore's Config.Prefix.
	Idempotency string
	// Replay was agentauth/redisreplay's Config.Prefix.
	Replay string
	// Limiter was agentauth/ratelimit/redislimit's Config.Prefix.
	Limiter string
}

// Store is one Redis server holding every store. Its methods, and the
// stores they return, are safe for concurrent use.
type Store struct {
	confirm *ConfirmStore
	idem    *IdempotencyStore
	replay  *ReplayCache
	limiter *Limiter
	changes *Changes
}

// New checks once that the server behind client does not evict keys
// (see the package documentation; Config.AcceptEviction skips the check)
// and returns a Store keeping its keys under cfg.Prefix, or under
// cfg.Prefixes. The client's own timeouts bound each call; an error from
// Redis is returned, so that the callers fail closed. The client stays
// the caller's to close.
func New(ctx context.Context, client redis.UniversalClient, cfg Config) (*Store, error) {
	if client == nil {
		return nil, errors.New("redisstore: nil client")
	}
	p := Prefixes{
		Confirm:     cfg.Prefix + confirmPart,
		Idempotency: cfg.Prefix + idempotencyPart,
		Replay:      cfg.Prefix + replayPart,
		Limiter:     cfg.Prefix + limiterPart,
	}
	if cfg.Prefixes != nil {
		if cfg.Prefix != "" {
			return nil, errors.New("redisstore: Config sets both Prefix and Prefixes; set one")
		}
		p = *cfg.Prefixes
	}
	changes := cfg.Prefix + changesPart
	if cfg.Prefixes != nil {
		changes = p.Replay + changesPart
	}
	if err := checkEviction(ctx, client, cfg.AcceptEviction); err != nil {
		return nil, err
	}
	s := &Store{
		confirm: &ConfirmStore{client: client, prefix: p.Confirm},
		idem:    &IdempotencyStore{client: client, prefix: p.Idempotency},
		replay:  newReplayCache(client, p.Replay, cfg),
		limiter: &Limiter{client: client, prefix: p.Limiter},
		changes: &Changes{client: client, key: changes},
	}
	s.replay.changes = s.changes
	return s, nil
}

// Changes returns the count of changes to a provider's records shared
// by the instances (see Changes), for sqlstore's DB.SetChanges.
func (s *Store) Changes() *Changes { return s.changes }

// Confirm returns the store of confirmation tokens (confirm.Store).
func (s *Store) Confirm() *ConfirmStore { return s.confirm }

// Idempotency returns the store of idempotency keys (idempotency.Store).
func (s *Store) Idempotency() *IdempotencyStore { return s.idem }

// Replay returns the replay cache (agentauth.OwnerReplayCache).
func (s *Store) Replay() *ReplayCache { return s.replay }

// Limiter returns the rate limiter (ratelimit.Limiter). Every call
// returns the same Limiter.
func (s *Store) Limiter() *Limiter { return s.limiter }
