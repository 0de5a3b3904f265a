package agentauth

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Agent and host states, as named by the protocol.
const (
	StatusActive   = "active"
	StatusPending  = "pending"
	StatusRevoked  = "revoked"
	StatusRejected = "rejected"
	StatusExpired  = "expired"
	StatusClaimed  = "claimed"
	// StatusDenied is a grant state.
	StatusDenied = "denied"
)

// Agent modes.
const (
	// ModeDelegated: the agent acts for its host's user.
	ModeDelegated = "delegated"
	// ModeAutonomous: the agent acts for no user.
	ModeAutonomous = "autonomous"
)

// Wire error codes of the Agent Auth error envelope used by a location.
const (
	CodeInvalidRequest            = "invalid_request"
	CodeUnknownConstraintOperator = "unknown_constraint_operator"
	CodeInvalidJWT                = "invalid_jwt"
	CodeAuthenticationRequired    = "authentication_required"
	CodeCapabilityNotGranted      = "capability_not_granted"
	CodeConstraintViolated        = "constraint_violated"
	CodeAgentRevoked              = "agent_revoked"
	CodeAgentExpired              = "agent_expired"
	CodeAgentPending              = "agent_pending"
	CodeAgentRejected             = "agent_rejected"
	CodeAgentClaimed              = "agent_claimed"
	CodeHostRevoked               = "host_revoked"
	CodeHostPending               = "host_pending"
	CodeUnauthorized              = "unauthorized"
	CodeCapabilityNotFound        = "capability_not_found"
	CodeRateLimited               = "rate_limited"
	CodeInternalError             = "internal_error"
)

// ErrNotFound is returned by a Directory for an unknown host or agent.
var ErrNotFound = errors.New("agentauth: not found")

// Host is the persistent identity of a client environment. Exactly one of
// PublicKey (an Ed25519 JWK) and JWKSURL is set.
type Host struct {
	ID                  string          `json:"id"`
	PublicKey           json.RawMessage `json:"public_key,omitempty"`
	JWKSURL             string          `json:"jwks_url,omitempty"`
	UserID              string          `json:"user_id,omitempty"`
	Status              string          `json:"status"`
	DefaultCapabilities []string        `json:"default_capabilities,omitempty"`
}

// Agent is one runtime AI actor under a host. Exactly one of PublicKey (an
// Ed25519 JWK) and JWKSURL (with KID naming the key) is set.
type Agent struct {
	ID        string          `json:"id"`
	HostID    string          `json:"host_id"`
	UserID    string          `json:"user_id,omitempty"`
	Mode      string          `json:"mode"`
	Status    string          `json:"status"`
	PublicKey json.RawMessage `json:"public_key,omitempty"`
	JWKSURL   string          `json:"jwks_url,omitempty"`
	KID       string          `json:"kid,omitempty"`
	Grants    []Grant         `json:"agent_capability_grants"`
}

// Grant is one capability granted to one agent. Constraints maps top-level
// input field names to an exact JSON value or an operator object; the raw
// JSON is kept so that comparisons never coerce types.
type Grant struct {
	Capability  string                     `json:"capability"`
	Status      string                     `json:"status"`
	Constraints map[string]json.RawMessage `json:"constraints,omitempty"`
	ExpiresAt   *time.Time                 `json:"expires_at,omitempty"`
}

// Effective reports whether g is active and unexpired at now.
func (g Grant) Effective(now time.Time) bool {
	return g.Status == StatusActive && (g.ExpiresAt == nil || now.Before(*g.ExpiresAt))
}

// Directory looks up hosts and agents. Implementations must be safe for
// concurrent use and return ErrNotFound (possibly wrapped) for unknown ids.
type Directory interface {
	Host(ctx context.Context, id string) (*Host, error)
	Agent(ctx context.Context, id string) (*Agent, error)
}

// Claims are the verified claims of an agent JWT.
type Claims struct {
	Subject   string
	Issuer    string // empty when the token had no iss
	Audience  []string
	IssuedAt  time.Time
	ExpiresAt time.Time
	ID        string // jti
	// Capabilities is the token's "capabilities" claim. Nil means the
	// claim was absent; a non-nil empty slice means it allowed nothing.
	Capabilities []string
}

// Session is what a verified agent JWT proves: the agent, its host and the
// token's claims. A session from remote introspection has Compact set: its
// grants carry no constraints the resource server can check.
type Session struct {
	Agent   *Agent
	Host    *Host
	Claims  Claims
	Compact bool
}

// SessionSource verifies an agent JWT and returns its session. Errors are
// *core.AppError values carrying the protocol's status and code.
type SessionSource interface {
	Session(ctx context.Context, token string) (*Session, error)
}
