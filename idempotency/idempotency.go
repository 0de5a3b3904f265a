// Package idempotency makes retried calls run once. A caller names a call
// with a key (the Idempotency-Key header over HTTP); the first call with a
// key runs and its answer is stored; a repeat with the same key, scope
// (caller) and fingerprint (capability and canonical arguments) gets the
// stored answer without running anything; the same key with another
// fingerprint is refused. It is transport-neutral: httpx uses it for
// capability/execute, and any transport can.
//
// # In progress
//
// While the first call runs, its key is claimed for a lease. A repeat
// arriving then waits for the first to finish (polling the store, up to
// Config.Wait, 10 s by default) and replays its answer; if the first is
// still running after that, the repeat is refused with ErrInProgress
// (httpx: 409 idempotency_in_progress) and may be retried. A claim whose
// holder died expires with its lease, after which the next call runs.
//
// # What is stored
//
// The transport decides (httpx stores successes and definitive errors, not
// transient ones such as 5xx, 408, 409 and 429, so that a retry of those
// can succeed); an answer that is not stored releases the claim.
//
// # Bounds
//
// An answered key is kept for Config.TTL (a day), so what one caller may
// hold is bounded: a scope with Config.MaxKeysPerScope live keys (10,000)
// gets ErrTooManyKeys for a new one (httpx: 429 rate_limited, the call
// unrun), and an answer longer than Config.MaxAnswerBytes (16 KiB) is not
// kept: the caller keeps a short one in its place (httpx: 409 conflict,
// saying the call ran), so that a repeat still does not run the call.
//
// # Stores
//
// MemoryStore serves one process; package sqlstore (SQLite or
// PostgreSQL, DB.Idempotency) and package redisstore (Store.Idempotency)
// share keys between processes. All pass the suite
// storetest.Idempotency, including 50 concurrent calls with one key through two
// stores sharing the records, of which exactly one runs.
package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/agentcap/agentcap/internal/attempt"
	"github.com/agentcap/agentcap/internal/jsoncanon"
)

// Record is a claimed or answered key.
type Record struct {
	// Fingerprint identifies the call the key was first used for.
	Fingerprint string
	// Token identifies the claim that holds the key; only its holder may
	// complete or release it.
	Token string
	// Done reports a stored answer; otherwise the first call is still
	// running.
	Done bool
	// Status, Header and Body are the stored answer.
	Status int
	Header map[string]string
	Body   []byte
}

// Store keeps keys where every instance sharing it sees them. Keys are
// whole: scoping (per caller) is done by Guard before they reach a Store,
// so a key is unique across scopes. Each method also gets the scope the
// key belongs to, so that a store can count a scope's live keys.
type Store interface {
	// Claim records key, of scope, as in progress for fingerprint, held
	// by token, for lease, unless the key is held (in progress or done,
	// and not expired). It returns claimed true when it recorded the
	// claim, else the record holding the key. When max is positive and
	// scope holds max live keys (in progress or done, not expired), a key
	// not held is not claimed: Claim returns ErrTooManyKeys. Claims of one
	// scope racing for its last places may pass max by as many as race.
	// A claim sent twice, as a client library sends a command again
	// whose answer it lost, finds the key held by its own token: the
	// Guard takes that record for the claim.
	Claim(ctx context.Context, scope, key, fingerprint, token string, lease time.Duration, max int) (claimed bool, rec *Record, err error)
	// Complete stores the answer of the claim token on key, kept for
	// ttl. It does nothing when the claim is no longer token's (its
	// lease ran out and another call claimed the key). The answer's Body
	// and Header belong to the caller once Complete returns: a store
	// copies what it keeps.
	Complete(ctx context.Context, scope, key, token string, answer Record, ttl time.Duration) error
	// Release drops the in-progress claim token on key, so that the next
	// call with the key runs.
	Release(ctx context.Context, scope, key, token string) error
}

// Errors of Guard.Begin.
var (
	// ErrInvalidKey: the key is empty, longer than MaxKeyLength, or has
	// characters other than printable ASCII.
	ErrInvalidKey = errors.New("idempotency: invalid key")
	// ErrInProgress: the first call with the key is still running.
	ErrInProgress = errors.New("idempotency: the first call with this key is still running")
	// ErrKeyReused: the key was used for another call.
	ErrKeyReused = errors.New("idempotency: the key was used for another call")
	// ErrTooManyKeys: the scope holds Config.MaxKeysPerScope live keys;
	// a new key is refused until some expire (a key held is still
	// answered).
	ErrTooManyKeys = errors.New("idempotency: the caller holds too many unexpired keys")
	// ErrAnswerTooLarge: an answer longer than Config.MaxAnswerBytes,
	// which Claim.Complete does not store.
	ErrAnswerTooLarge = errors.New("idempotency: the answer is too large to keep")
)

// MaxKeyLength bounds a key.
const MaxKeyLength = 255

// Defaults of Config.
const (
	defaultTTL   = 24 * time.Hour
	defaultLease = 5 * time.Minute
	defaultWait  = 10 * time.Second
)

// Defaults of Config's bounds: with them one caller holds at most about
// 160 MiB of answers, and some 15 MiB with answers of a few hundred
// bytes; MinAnswerBytes is the least MaxAnswerBytes.
const (
	defaultMaxKeysPerScope = 10_000
	defaultMaxAnswerBytes  = 16 << 10
	MinAnswerBytes         = 1 << 10
)

// Config configures a Guard. Every field has a usable zero value.
type Config struct {
	// Store keeps the keys. Nil means a new MemoryStore.
	Store Store
	// TTL is how long an answer is kept (default 24 h).
	TTL time.Duration
	// Lease is how long a claim holds its key while the first call runs
	// (default 5 min). It must outlast the calls it covers: a call still
	// running after it lets a repeat run too.
	Lease time.Duration
	// Wait is how long a repeat waits for a first call in progress
	// before ErrInProgress (default 10 s; negative: do not wait).
	Wait time.Duration
	// MaxKeysPerScope bounds the live keys (in progress, or answered and
	// not expired) of one scope, one caller: a new key beyond it is
	// ErrTooManyKeys (httpx: 429 rate_limited) until some expire, so that
	// one caller cannot fill the store with keys kept for TTL. Zero means
	// 10,000; negative, no bound.
	MaxKeysPerScope int
	// MaxAnswerBytes bounds an answer's Body: Claim.Complete refuses a
	// longer one with ErrAnswerTooLarge and stores nothing, and the
	// caller stores a short answer in its place (httpx: a refusal saying
	// the call ran). Zero means 16 KiB; negative, no
	// bound; a bound under MinAnswerBytes is raised to it, so that such a
	// short answer always fits.
	MaxAnswerBytes int
}

// Guard runs calls once per key. It is safe for concurrent use.
type Guard struct {
	store     Store
	ttl       time.Duration
	lease     time.Duration
	wait      time.Duration
	maxKeys   int
	maxAnswer int
}

// New returns a Guard.
func New(cfg Config) (*Guard, error) {
	if cfg.TTL < 0 || cfg.Lease < 0 {
		return nil, errors.New("idempotency: negative TTL or Lease")
	}
	g := &Guard{store: cfg.Store, ttl: cfg.TTL, lease: cfg.Lease, wait: cfg.Wait,
		maxKeys: bound(cfg.MaxKeysPerScope, defaultMaxKeysPerScope), maxAnswer: bound(cfg.MaxAnswerBytes, defaultMaxAnswerBytes)}
	if g.maxAnswer > 0 {
		g.maxAnswer = max(g.maxAnswer, MinAnswerBytes)
	}
	if g.store == nil {
		g.store = NewMemoryStore()
	}
	if g.ttl == 0 {
		g.ttl = defaultTTL
	}
	if g.lease == 0 {
		g.lease = defaultLease
	}
	if g.wait == 0 {
		g.wait = defaultWait
	}
	return g, nil
}

// bound is a configured bound: def for zero, none (0) for a negative one.
func bound(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// TTL returns how long answers are kept.
func (g *Guard) TTL() time.Duration { return g.ttl }

// Claim is the right to run the first call with a key. Exactly one of
// Complete and Release should follow.
type Claim struct {
	g     *Guard
	scope string
	key   string
	token string
}

// checkKey reports whether key is usable: 1 to MaxKeyLength printable
// ASCII characters.
func checkKey(key string) error {
	if key == "" || len(key) > MaxKeyLength {
		return ErrInvalidKey
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return ErrInvalidKey
		}
	}
	return nil
}

// storeKey scopes key to a caller. The scope's length leads, so that no
// scope and key pair can be spelled as another.
func storeKey(scope, key string) string {
	return strconv.Itoa(len(scope)) + ":" + scope + ":" + key
}

// Begin looks key up for scope (the caller: an identity's Subject)
// and a call with fingerprint. It returns a Claim when the call should
// run, or the stored answer to replay; or ErrInvalidKey, ErrKeyReused,
// ErrInProgress (after waiting, see Config.Wait), ErrTooManyKeys (see
// Config.MaxKeysPerScope), or a store error.
func (g *Guard) Begin(ctx context.Context, scope, key, fingerprint string) (*Claim, *Record, error) {
	if err := checkKey(key); err != nil {
		return nil, nil, err
	}
	sk := storeKey(scope, key)
	token := attempt.New()
	var deadline time.Time
	pause := 5 * time.Millisecond
	for {
		claimed, rec, err := g.store.Claim(ctx, scope, sk, fingerprint, token, g.lease, g.maxKeys)
		if errors.Is(err, ErrTooManyKeys) {
			return nil, nil, ErrTooManyKeys
		}
		if err != nil {
			return nil, nil, fmt.Errorf("idempotency: %w", err)
		}
		// A record holding token is this call's own claim, whose answer
		// the store's client lost and sent again.
		if claimed || rec.Token == token {
			return &Claim{g: g, scope: scope, key: sk, token: token}, nil, nil
		}
		if rec.Fingerprint != fingerprint {
			return nil, nil, ErrKeyReused
		}
		if rec.Done {
			return nil, rec, nil
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(g.wait)
		}
		if g.wait < 0 || time.Now().After(deadline) {
			return nil, nil, ErrInProgress
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, ctx.Err()
		case <-t.C:
		}
		pause = min(pause*2, 100*time.Millisecond)
	}
}

// Complete stores the answer for replay. body may be reused once it
// returns. A body longer than Config.MaxAnswerBytes is not stored:
// Complete returns ErrAnswerTooLarge, and the claim still holds the key,
// for a shorter answer in its place (or a Release).
func (c *Claim) Complete(ctx context.Context, status int, header map[string]string, body []byte) error {
	if c.g.maxAnswer > 0 && len(body) > c.g.maxAnswer {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrAnswerTooLarge, len(body), c.g.maxAnswer)
	}
	return c.g.store.Complete(ctx, c.scope, c.key, c.token, Record{Status: status, Header: header, Body: body, Done: true}, c.g.ttl)
}

// Release gives the key up without an answer, so that a retry runs.
func (c *Claim) Release(ctx context.Context) error {
	return c.g.store.Release(ctx, c.scope, c.key, c.token)
}

// Fingerprint identifies a call for its key: a SHA-256 of the capability
// name and the canonical form of its arguments, so that arguments that
// differ only in member order, white space or the spelling of a number
// (1, 1.0, 1e0; numbers are compared as float64) match. Absent, empty and
// null arguments are the same, {}. Text that is not JSON is fingerprinted
// as it is.
func Fingerprint(capability string, args []byte) string {
	bp := fpBuffers.Get().(*[]byte)
	buf := append((*bp)[:0], capability...)
	buf = append(buf, 0)
	if trimmed := trimSpace(args); len(trimmed) == 0 || string(trimmed) == "null" {
		buf = append(buf, '{', '}')
	} else if c, ok := jsoncanon.Append(buf, trimmed); ok {
		buf = c
	} else {
		buf = append(buf, 1)
		buf = append(buf, trimmed...)
	}
	sum := sha256.Sum256(buf)
	if cap(buf) <= 64<<10 {
		*bp = buf
		fpBuffers.Put(bp)
	}
	return hex.EncodeToString(sum[:])
}

var fpBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
