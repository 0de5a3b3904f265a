package audit

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Event names for records of previews, confirmations and provider
// changes. A record of a capability's execution carries an event name of
// the application's choosing (the capability name, say).
const (
	// EventPreview: a preview of a capability call ran.
	EventPreview = "preview"
	// EventConfirmationIssued: a confirmation token was issued for a call.
	EventConfirmationIssued = "confirmation.issued"
	// EventConfirmationConsumed: a confirmation token was used by the
	// call it was issued for.
	EventConfirmationConsumed = "confirmation.consumed"
	// EventConfirmationDenied: a person denied a call, or a confirmation
	// token was refused.
	EventConfirmationDenied = "confirmation.denied"

	// EventHostRegistered: a host was registered (or first seen).
	EventHostRegistered = "host.registered"
	// EventAgentRegistered: an agent was registered.
	EventAgentRegistered = "agent.registered"
	// EventApprovalApproved and EventApprovalDenied: a user decided a
	// pending approval (registration or capability request).
	EventApprovalApproved = "approval.approved"
	EventApprovalDenied   = "approval.denied"
	// EventGrantsChanged: capability grants were added, changed or
	// revoked.
	EventGrantsChanged = "grant.changed"
	// EventAgentReactivated: an expired agent was reactivated, its
	// host's default capabilities granted again or pending approval.
	EventAgentReactivated = "agent.reactivated"
	// EventAgentRevoked and EventHostRevoked: an agent or a host was
	// revoked.
	EventAgentRevoked = "agent.revoked"
	EventHostRevoked  = "host.revoked"
	// EventAgentKeyRotated and EventHostKeyRotated: a public key was
	// replaced.
	EventAgentKeyRotated = "agent.key_rotated"
	EventHostKeyRotated  = "host.key_rotated"
	// EventHostClaimed: a user claimed a host and its autonomous agents.
	EventHostClaimed = "host.claimed"
)

// Outcomes that are not error codes. A failed call's outcome is its error
// code (agentcap.Error.Code: unauthorized, constraint_violated, ...).
const (
	// OutcomeOK: the call or the change succeeded.
	OutcomeOK = "ok"
	// OutcomeStarted: the record of a call's start, written before the
	// handler runs for capabilities that require audit. The call's end is
	// another record.
	OutcomeStarted = "started"
)

// Redacted replaces the value of a secret field in kept arguments.
const Redacted = "[redacted]"

// Record is one entry of the audit trail. Only ID, Time, Event and Outcome
// are always set; the other fields are empty where they do not apply (a
// provider event has no arguments, an autonomous agent no user).
type Record struct {
	// ID identifies the record; a store fills it when empty.
	ID string `json:"id"`
	// Time is when the event happened (a call's start for a call); a
	// store fills it when zero. Stores keep microseconds, in UTC.
	Time time.Time `json:"time"`
	// Event names what happened (see the Event constants).
	Event string `json:"event"`
	// Outcome is OutcomeOK, OutcomeStarted or an error code.
	Outcome string `json:"outcome"`
	// AgentID, HostID and UserID name who acted or on whose behalf.
	AgentID string `json:"agent_id,omitempty"`
	HostID  string `json:"host_id,omitempty"`
	UserID  string `json:"user_id,omitempty"`
	// Capability is the capability called, previewed, confirmed or
	// granted.
	Capability string `json:"capability,omitempty"`
	// ArgumentsDigest is the hex SHA-256 of the canonical form of the
	// call's arguments.
	ArgumentsDigest string `json:"arguments_sha256,omitempty"`
	// ConfirmationID identifies the confirmation the call used or was
	// issued.
	ConfirmationID string `json:"confirmation_id,omitempty"`
	// RequestID and ClientIP describe the HTTP request, when there was
	// one; TraceID is the OpenTelemetry trace the call ran in.
	RequestID string `json:"request_id,omitempty"`
	TraceID   string `json:"trace_id,omitempty"`
	ClientIP  string `json:"client_ip,omitempty"`
	// Duration is how long the call took; zero for start records and
	// provider events.
	Duration time.Duration `json:"duration_ns,omitempty"`
	// Detail is a short, non-secret description of a provider change
	// (the capabilities granted, a revocation reason).
	Detail string `json:"detail,omitempty"`
	// Arguments are the call's arguments, secret fields redacted, for
	// capabilities whose arguments are kept; nil otherwise.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Sink receives audit records. Write must be safe for concurrent use; an
// error means the record was not kept.
type Sink interface {
	Write(ctx context.Context, r Record) error
}

// Store is a Sink that keeps records and reads them back.
type Store interface {
	Sink
	// Query returns the records matching q, newest first, one page at a
	// time.
	Query(ctx context.Context, q Query) (Page, error)
	// Sweep deletes the records older than before and returns how many.
	Sweep(ctx context.Context, before time.Time) (int64, error)
	// Close releases what the store opened.
	Close() error
}

// Page limits.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Query selects records. Empty fields do not filter.
type Query struct {
	UserID     string
	AgentID    string
	Capability string
	Event      string
	// Since and Until bound Time: Since <= Time < Until. Zero means
	// unbounded.
	Since, Until time.Time
	// Cursor continues after the last page (Page.NextCursor); it is only
	// valid with the same filters.
	Cursor string
	// Limit is the page size: DefaultLimit when 0, at most MaxLimit.
	Limit int
}

// Page is one page of records, newest first.
type Page struct {
	Records []Record `json:"records"`
	// NextCursor continues the listing; empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// ErrInvalidCursor is returned by Query for a cursor no store made.
// Cursors come from callers, so a store never sees one it cannot use in
// a query: its id is valid UTF-8 without NUL, as every store can hold.
var ErrInvalidCursor = errors.New("audit: invalid cursor")

// ErrInvalidQuery is returned by Query for a negative limit, a time
// range that ends before it starts, or a filter that is not valid UTF-8
// or holds NUL (no PostgreSQL text can; such a filter matches nothing).
var ErrInvalidQuery = errors.New("audit: invalid query")

// Position is where a page ends: the time and id of its last record.
// Records are ordered by time, then id, newest first.
type Position struct {
	Time time.Time
	ID   string
}

// EncodeCursor returns the cursor that continues after p. Stores use it
// so that their cursors look alike.
func EncodeCursor(p Position) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.Time.UnixMicro(), 10) + ":" + p.ID))
}

// DecodeCursor reads a cursor made by EncodeCursor, and refuses any
// other spelling of the same position.
func DecodeCursor(c string) (Position, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return Position{}, ErrInvalidCursor
	}
	us, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || !storableText(id) || id == "" {
		return Position{}, ErrInvalidCursor
	}
	p := Position{Time: time.UnixMicro(n).UTC(), ID: id}
	// One spelling per position: no sign, leading zero or line break.
	if EncodeCursor(p) != c {
		return Position{}, ErrInvalidCursor
	}
	return p, nil
}

// storableText reports whether every store can compare s with its text
// columns: valid UTF-8 without NUL.
func storableText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// Normalize checks q and returns it with its limit resolved and its
// cursor decoded (nil when absent). Stores call it first.
func (q Query) Normalize() (Query, *Position, error) {
	switch {
	case q.Limit < 0:
		return q, nil, fmt.Errorf("%w: negative limit", ErrInvalidQuery)
	case q.Limit == 0:
		q.Limit = DefaultLimit
	case q.Limit > MaxLimit:
		q.Limit = MaxLimit
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && q.Until.Before(q.Since) {
		return q, nil, fmt.Errorf("%w: until is before since", ErrInvalidQuery)
	}
	for _, f := range []string{q.UserID, q.AgentID, q.Capability, q.Event} {
		if !storableText(f) {
			return q, nil, fmt.Errorf("%w: a filter is not valid UTF-8 or holds NUL", ErrInvalidQuery)
		}
	}
	if q.Cursor == "" {
		return q, nil, nil
	}
	p, err := DecodeCursor(q.Cursor)
	if err != nil {
		return q, nil, err
	}
	return q, &p, nil
}

// Prepare fills the ID and Time of r when they are empty, truncates Time
// to microseconds in UTC, and checks that Event and Outcome are set.
// Stores call it before keeping r.
func Prepare(r Record, now time.Time) (Record, error) {
	if r.Event == "" || r.Outcome == "" {
		return r, errors.New("audit: a record needs an event and an outcome")
	}
	if r.ID == "" {
		r.ID = newID(now)
	}
	if r.Time.IsZero() {
		r.Time = now
	}
	r.Time = r.Time.UTC().Truncate(time.Microsecond)
	if len(r.Arguments) == 0 {
		r.Arguments = nil
	}
	return r, nil
}

// newID returns a new record id: the time in hex, so that ids sort like
// their times, and 8 random bytes.
func newID(t time.Time) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%014x", t.UnixMicro()) + hex.EncodeToString(b[:])
}
