// Package confirm issues and consumes the confirmation tokens that
// confirm risky calls (see core.ConfirmationConfig). A token is bound to
// one caller (the subject), one capability, the canonical form of the
// call's arguments (the form idempotency.Fingerprint digests), one
// location (the audience) and an expiry; it confirms one call only.
//
// # Tokens
//
// A token is 32 bytes from crypto/rand, base64url-encoded after the
// prefix "cfm_": it cannot be guessed, so the store decides what it is
// worth. Stores keep the SHA-256 of a token (its ID), never the token, so
// that reading a store yields nothing that confirms a call.
//
// A token issued after a person confirmed the call (a binding with
// core.ConfirmationBinding.Human set: see core.WithHumanConfirmation)
// is kept under another digest (see Digest), so that the token of a
// preview never stands in for a person's confirmation.
//
// # Consuming
//
// Consume spends a token on a call in one atomic step of the store: of
// many concurrent calls with one token, across every instance sharing the
// store, exactly one succeeds. A token that does not match the call is
// not spent. Refusals, in this order: a token that is unknown, forged, or
// issued to another subject or for another audience is
// core.ErrConfirmationInvalid (nothing more is told about someone else's
// token); then core.ErrConfirmationUsed, core.ErrConfirmationExpired, and
// core.ErrConfirmationMismatch for another capability or other arguments.
// A store remembers a token for Config.Retention after it expires, so
// that a late caller learns that it was used or expired; after that it is
// unknown.
//
// # Stores
//
// MemoryStore serves one process; package sqlstore (SQLite or
// PostgreSQL, DB.Confirm) and package redisstore (Store.Confirm) share
// tokens between instances. All pass the suite
// storetest.Confirm, including many goroutines consuming one token
// through two store clients, of which exactly one wins.
package confirm

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/idempotency"
)

// Record is what a store keeps about a token.
type Record struct {
	// Subject, Capability, Digest and Audience are the binding: Digest is
	// Digest of the binding.
	Subject    string
	Capability string
	Digest     string
	Audience   string
	// ExpiresAt is when the token stops confirming calls.
	ExpiresAt time.Time
	// Used reports a token that confirmed a call.
	Used bool
}

// Store keeps tokens where every instance sharing it sees them. Times
// are the Manager's clock, kept to the millisecond.
type Store interface {
	// Put records a new token id with rec (Used false), to be forgotten
	// at forget (after rec.ExpiresAt).
	Put(ctx context.Context, id string, rec Record, forget time.Time) error
	// Consume marks token id used, in one atomic step, if it is known,
	// unused, unexpired at now and bound exactly as want (Subject,
	// Capability, Digest and Audience). It returns the record as it was
	// before (nil for an unknown or forgotten id) and whether it marked
	// it.
	Consume(ctx context.Context, id string, want Record, now time.Time) (prev *Record, consumed bool, err error)
}

// Defaults of Config.
const (
	DefaultTTL       = 5 * time.Minute
	DefaultRetention = time.Hour
)

// Config configures a Manager. Every field has a usable zero value.
type Config struct {
	// Store keeps the tokens. Nil means a new MemoryStore, which serves
	// one process only.
	Store Store
	// TTL is how long a token confirms a call (default 5 min).
	TTL time.Duration
	// Retention is how long a store remembers a token after it expires,
	// so that it is refused as used or expired rather than as unknown
	// (default 1 h).
	Retention time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Manager issues and consumes tokens: it is the core.Confirmer an
// executor is configured with. It is safe for concurrent use.
type Manager struct {
	store     Store
	ttl       time.Duration
	retention time.Duration
	now       func() time.Time
}

var (
	_ core.Confirmer         = (*Manager)(nil)
	_ core.ConfirmationNamer = (*Manager)(nil)
)

// New returns a Manager.
func New(cfg Config) (*Manager, error) {
	if cfg.TTL < 0 || cfg.Retention < 0 {
		return nil, errors.New("confirm: negative TTL or Retention")
	}
	m := &Manager{store: cfg.Store, ttl: cfg.TTL, retention: cfg.Retention, now: cfg.Now}
	if m.store == nil {
		m.store = NewMemoryStore()
	}
	if m.ttl == 0 {
		m.ttl = DefaultTTL
	}
	if m.retention == 0 {
		m.retention = DefaultRetention
	}
	if m.now == nil {
		m.now = time.Now
	}
	return m, nil
}

// TTL returns how long a token confirms a call.
func (m *Manager) TTL() time.Duration { return m.ttl }

// tokenPrefix starts every token, so that one is recognisable in a log
// or a leaked configuration.
const tokenPrefix = "cfm_"

// tokenLength is the length of a token: the prefix and 32 random bytes
// in unpadded base64url.
var tokenLength = len(tokenPrefix) + base64.RawURLEncoding.EncodedLen(32)

// TokenID returns the ID of a token: the hex SHA-256 of its text, under
// which stores keep it and which logs and audit records may show.
func TokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// ConfirmationID implements core.ConfirmationNamer: it returns
// TokenID(token), so that the audit records of a spent or refused token
// name it as the record of its issue does.
func (m *Manager) ConfirmationID(token string) string { return TokenID(token) }

// Issue implements core.Confirmer: it returns a fresh token for b,
// valid for the TTL.
func (m *Manager) Issue(ctx context.Context, b core.ConfirmationBinding) (core.Confirmation, error) {
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails
	token := tokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	now := m.now()
	rec := Record{
		Subject:    b.Subject,
		Capability: b.Capability,
		Digest:     Digest(b),
		Audience:   b.Audience,
		ExpiresAt:  now.Add(m.ttl).Truncate(time.Millisecond),
	}
	id := TokenID(token)
	if err := m.store.Put(ctx, id, rec, rec.ExpiresAt.Add(m.retention)); err != nil {
		return core.Confirmation{}, fmt.Errorf("confirm: recording a token: %w", err)
	}
	return core.Confirmation{ID: id, Token: token, ExpiresAt: rec.ExpiresAt}, nil
}

// Consume implements core.Confirmer.
func (m *Manager) Consume(ctx context.Context, token string, b core.ConfirmationBinding) error {
	if len(token) != tokenLength || token[:len(tokenPrefix)] != tokenPrefix {
		return core.ErrConfirmationInvalid
	}
	want := Record{
		Subject:    b.Subject,
		Capability: b.Capability,
		Digest:     Digest(b),
		Audience:   b.Audience,
	}
	now := m.now()
	prev, consumed, err := m.store.Consume(ctx, TokenID(token), want, now)
	switch {
	case err != nil:
		return fmt.Errorf("confirm: consuming a token: %w", err)
	case consumed:
		return nil
	case prev == nil || prev.Subject != want.Subject || prev.Audience != want.Audience:
		return core.ErrConfirmationInvalid
	case prev.Used:
		return core.ErrConfirmationUsed
	case !now.Before(prev.ExpiresAt):
		return core.ErrConfirmationExpired
	}
	return core.ErrConfirmationMismatch
}

// humanPrefix starts the digest of a binding that a person confirmed.
const humanPrefix = "human:"

// Digest is what a store keeps of a binding's capability and arguments:
// idempotency.Fingerprint of them, prefixed "human:" for a call a person
// confirmed (core.ConfirmationBinding.Human). A token issued without a
// person's confirmation thus never confirms a call that needs one (it is
// refused as core.ErrConfirmationMismatch), nor the reverse.
func Digest(b core.ConfirmationBinding) string {
	d := idempotency.Fingerprint(b.Capability, b.Arguments)
	if b.Human {
		return humanPrefix + d
	}
	return d
}

// matches reports whether rec is bound as want is, and usable at now:
// what a store checks before it marks a token used.
func matches(rec, want Record, now time.Time) bool {
	return !rec.Used && now.Before(rec.ExpiresAt) && rec.Subject == want.Subject &&
		rec.Capability == want.Capability && rec.Digest == want.Digest && rec.Audience == want.Audience
}
