package agentauth

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentcap/agentcap"
)

// ErrNotFound is returned by a Directory for an unknown host or agent.
var ErrNotFound = errors.New("agentauth: not found")

// Host is the persistent identity of a client environment. Exactly one of
// PublicKey (an Ed25519 JWK) and JWKSURL is set.
type Host struct {
	// ID identifies the host; an agent names it in HostID, and an agent
	// JWT's "iss", when present, must equal it.
	ID string `json:"id"`
	// PublicKey is the host's Ed25519 public key as a JWK.
	PublicKey json.RawMessage `json:"public_key,omitempty"`
	// JWKSURL is where the host publishes its keys instead.
	JWKSURL string `json:"jwks_url,omitempty"`
	// UserID is the user the host is linked to, empty for none. Delegated
	// agents of the host act for this user.
	UserID string `json:"user_id,omitempty"`
	// Status is one of agentcap.StatusActive, agentcap.StatusPending, agentcap.StatusRevoked and
	// agentcap.StatusRejected. The agents of a host that is not active cannot act.
	Status string `json:"status"`
	// DefaultCapabilities names the capabilities the provider may grant
	// the host's agents without asking its user.
	DefaultCapabilities []string `json:"default_capabilities,omitempty"`
}

// Agent is one runtime AI actor under a host. Exactly one of PublicKey (an
// Ed25519 JWK) and JWKSURL (with KID naming the key) is set.
type Agent struct {
	// ID identifies the agent: the "sub" claim of its JWTs.
	ID string `json:"id"`
	// HostID is the ID of the host the agent runs under.
	HostID string `json:"host_id"`
	// UserID is the user a delegated agent acts for, empty for an
	// autonomous agent.
	UserID string `json:"user_id,omitempty"`
	// Mode is agentcap.ModeDelegated or agentcap.ModeAutonomous.
	Mode string `json:"mode"`
	// Status is one of agentcap.StatusPending, agentcap.StatusActive, agentcap.StatusExpired,
	// agentcap.StatusRevoked, agentcap.StatusRejected and agentcap.StatusClaimed. Only an active
	// agent may act.
	Status string `json:"status"`
	// PublicKey is the agent's Ed25519 public key as a JWK.
	PublicKey json.RawMessage `json:"public_key,omitempty"`
	// JWKSURL is where the agent publishes its keys instead of PublicKey.
	JWKSURL string `json:"jwks_url,omitempty"`
	// KID names the agent's key in the key set at JWKSURL; it is set
	// exactly when JWKSURL is.
	KID string `json:"kid,omitempty"`
	// Grants are the capabilities granted to the agent, in every status;
	// only effective ones (Grant.Effective) allow a call.
	Grants []Grant `json:"agent_capability_grants"`
}

// Grant is one capability granted to one agent. Constraints maps top-level
// input field names to an exact JSON value or an operator object; the raw
// JSON is kept so that comparisons never coerce types.
type Grant struct {
	// Capability is the name of the granted capability.
	Capability string `json:"capability"`
	// Status is agentcap.StatusActive, agentcap.StatusPending or agentcap.StatusDenied.
	Status string `json:"status"`
	// Constraints limits the arguments a call may carry (see
	// CheckConstraints). A grant without constraints is unconstrained,
	// but it does not satisfy a capability that requires some (see
	// AuthorizeCall).
	Constraints map[string]json.RawMessage `json:"constraints,omitempty"`
	// ExpiresAt, when set, is the instant the grant stops allowing calls.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// Effective reports whether g is active and unexpired at now.
func (g Grant) Effective(now time.Time) bool {
	return g.Status == agentcap.StatusActive && (g.ExpiresAt == nil || now.Before(*g.ExpiresAt))
}

// Directory looks up hosts and agents. Implementations must be safe for
// concurrent use and return ErrNotFound (possibly wrapped) for unknown ids.
type Directory interface {
	// Host returns the host with the given ID.
	Host(ctx context.Context, id string) (*Host, error)
	// Agent returns the agent with the given ID, its grants included.
	Agent(ctx context.Context, id string) (*Agent, error)
}

// Claims are the verified claims of an agent JWT.
type Claims struct {
	// Subject is the "sub" claim: the agent's ID.
	Subject string
	// Issuer is the "iss" claim, the host's ID; empty when the token had
	// none, as the published client sends it.
	Issuer string
	// Audience is the "aud" claim, as a list even when the token held
	// one string.
	Audience []string
	// IssuedAt is the "iat" claim.
	IssuedAt time.Time
	// ExpiresAt is the "exp" claim.
	ExpiresAt time.Time
	// ID is the "jti" claim, the token's id, which a verifier records to
	// refuse the token a second time.
	ID string
	// Capabilities is the token's "capabilities" claim. Nil means the
	// claim was absent; a non-nil empty slice means it allowed nothing.
	Capabilities []string
}

// Session is what a verified agent JWT proves: the agent, its host and the
// token's claims. A session from remote introspection has Compact set: its
// grants carry no constraints the resource server can check.
//
// A Session and the records it points to are read-only. A Verifier over a
// MemoryDirectory hands out the directory's own records, shared by every
// session of that agent, instead of copying them per request; changing
// one would change what later requests see. Copy a record before
// changing it.
type Session struct {
	// Agent is the agent that signed the token, as the directory (or the
	// provider) knows it.
	Agent *Agent
	// Host is the agent's host.
	Host *Host
	// Claims are the token's verified claims.
	Claims Claims
	// Compact reports grants that carry no constraints: a capability that
	// requires constraints is then refused rather than checked.
	Compact bool
	// OAuthClient is the client_id of the OAuth client whose access token
	// the session came from, when a provider's authorization server
	// issued it for the agent (Claims then hold the token's audience and
	// expiry); empty for an agent JWT. Such a caller's identity has
	// ScopeChallenge set.
	OAuthClient string
}

// SessionSource verifies an agent JWT and returns its session. Errors are
// *agentcap.Error values carrying the protocol's status and code.
type SessionSource interface {
	Session(ctx context.Context, token string) (*Session, error)
}
