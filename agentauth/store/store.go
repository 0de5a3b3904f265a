package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentcap/agentcap/agentauth"
)

// Store is the persistent state of an Agent Auth provider: hosts, agents,
// their capability grants and pending approvals. It is also an
// agentauth.Directory, so the resource server that verifies agent JWTs
// reads the same records the provider writes.
//
// Every method is safe for concurrent use and atomic: a method either
// applies all of its changes or none. Status changes are compare-and-set
// on the record's current status, so of several callers racing to move a
// record out of one state exactly one succeeds and the others get a
// *StatusError.
//
// Records passed in are never retained and records returned are copies the
// caller owns. Times are kept in UTC to the microsecond. Where a method
// takes now, that instant drives the protocol's lifetime clocks; other
// bookkeeping times (created_at when left zero, updated_at) come from the
// store's own clock.
//
// Errors wrap ErrNotFound for an unknown id, ErrConflict for a write that
// contradicts what is stored, ErrInvalid for a malformed record, and
// ErrStatus (as a *StatusError) for a compare-and-set that found another
// status.
type Store interface {
	agentauth.Directory

	// CreateHost stores a new host. A host needs an id, a status, a key
	// (PublicKey or JWKSURL) and the thumbprint that host JWTs carry as
	// iss; for an inline key the thumbprint is computed when left empty
	// and must match the key otherwise. A duplicate id, thumbprint or
	// JWKS URL is ErrConflict.
	CreateHost(ctx context.Context, h *Host) error
	// GetHost returns the host with the given id.
	GetHost(ctx context.Context, id string) (*Host, error)
	// HostByThumbprint returns the host whose current key has the given
	// RFC 7638 thumbprint: the iss of its host JWTs.
	HostByThumbprint(ctx context.Context, thumbprint string) (*Host, error)
	// HostByKeyThumbprint is HostByThumbprint as the resource server sees
	// the host, so that a Store is an agentauth.HostKeyDirectory and a
	// HostVerifier over it finds hosts by the iss of their host JWTs.
	HostByKeyThumbprint(ctx context.Context, thumbprint string) (*agentauth.Host, error)
	// HostByJWKSURL returns the host keyed by the given JWKS URL, which
	// stays the same when the host rotates the keys it publishes there.
	HostByJWKSURL(ctx context.Context, url string) (*Host, error)
	// UpdateHostStatus moves a host from one of the from states to to.
	// Revoking or rejecting a host revokes or rejects, in the same
	// transaction, every agent under it that is pending, active or
	// expired; cascaded is how many. An agent can thus never outlive its
	// host's revocation, nor be created under a revoked host.
	UpdateHostStatus(ctx context.Context, id string, from []string, to string) (cascaded int, err error)
	// LinkHostUser links a host to a user. A host is linked to at most one
	// user: linking it to another is ErrConflict, linking it again to the
	// same user changes nothing. Linking claims the host's autonomous
	// agents that are pending, active or expired (status claimed, grants
	// denied by ClaimedBy with ClaimedReason, attributed to the user) and
	// gives its delegated agents without a user this user; claimed lists
	// the claimed agent ids.
	LinkHostUser(ctx context.Context, id, userID string) (claimed []string, err error)
	// SetHostDefaultCapabilities replaces the host's default capabilities.
	SetHostDefaultCapabilities(ctx context.Context, id string, capabilities []string) error
	// RotateHostKey replaces the host's key if its current thumbprint is
	// still fromThumbprint, so that of two rotations signed with the same
	// old key only one wins (the other gets ErrConflict). A host with an
	// inline key gets the new publicKey, and thumbprint may be left empty;
	// a JWKS host keeps its URL, publicKey must be empty, and thumbprint
	// names its new signing key. A thumbprint held by another host is
	// ErrConflict.
	RotateHostKey(ctx context.Context, id, fromThumbprint string, publicKey json.RawMessage, thumbprint string) error
	// TouchHost records a use of the host's JWT at now.
	TouchHost(ctx context.Context, id string, now time.Time) error

	// CreateAgent stores a new agent with its grants. The host must exist
	// (ErrNotFound otherwise) and must not be revoked or rejected (a
	// *StatusError for the host). A duplicate id, or a key thumbprint the
	// host already has for another agent, is ErrConflict: the protocol
	// keys registration by host and agent key.
	CreateAgent(ctx context.Context, a *Agent) error
	// GetAgent returns the agent with its grants, sorted by capability.
	GetAgent(ctx context.Context, id string) (*Agent, error)
	// AgentByThumbprint returns the host's agent whose key has the given
	// thumbprint, for idempotent registration retries.
	AgentByThumbprint(ctx context.Context, hostID, thumbprint string) (*Agent, error)
	// ListAgents returns the host's agents with their grants, oldest
	// first. An unknown host has none.
	ListAgents(ctx context.Context, hostID string) ([]*Agent, error)
	// UpdateAgentStatus moves an agent from one of the from states to to.
	// It does not touch the lifetime clocks; use ActivateAgent to make an
	// agent active.
	UpdateAgentStatus(ctx context.Context, id string, from []string, to string) error
	// ActivateAgent makes an agent in one of the from states active at
	// now: activated_at is set and expires_at recomputed under p. If the
	// agent's absolute lifetime has passed, it is revoked instead and the
	// error wraps ErrLifetimeExceeded.
	ActivateAgent(ctx context.Context, id string, from []string, now time.Time, p Policy) error
	// ReactivateAgent takes an expired agent back to to (active, or
	// pending when approval is needed), replacing all of its grants with
	// grants: reactivation falls back to the baseline capabilities. An
	// active result is activated at now as by ActivateAgent. An agent
	// past its absolute lifetime is revoked and the error wraps
	// ErrLifetimeExceeded.
	ReactivateAgent(ctx context.Context, id, to string, grants []Grant, now time.Time, p Policy) error
	// TouchAgent records an authenticated request of an active agent at
	// now and extends its expires_at under p. If the agent's deadline
	// has already passed it is expired (or revoked, past its absolute
	// lifetime) instead and a *StatusError reports the new status.
	TouchAgent(ctx context.Context, id string, now time.Time, p Policy) error
	// RotateAgentKey replaces the key of an agent that is pending, active
	// or expired. The key thumbprint must stay unique under the host.
	RotateAgentKey(ctx context.Context, id string, key AgentKey) error

	// PutGrants adds grants to an agent, replacing any grant it already
	// holds for the same capability and keeping the others.
	PutGrants(ctx context.Context, agentID string, grants []Grant) error
	// ReplaceGrants replaces all of an agent's grants.
	ReplaceGrants(ctx context.Context, agentID string, grants []Grant) error
	// UpdateGrantStatus changes the status of the agent's grant for one
	// capability if it is in one of c.From (a *StatusError otherwise).
	UpdateGrantStatus(ctx context.Context, agentID, capability string, c GrantChange) error
	// ListGrants returns the agent's grants sorted by capability.
	ListGrants(ctx context.Context, agentID string) ([]Grant, error)

	// CreateApproval stores a new approval request. A duplicate id, user
	// code or device code is ErrConflict, so a caller that drew a code
	// already in use draws another.
	CreateApproval(ctx context.Context, a *Approval) error
	// GetApproval returns an approval request. Its codes are not
	// returned: they are stored only as digests.
	GetApproval(ctx context.Context, id string) (*Approval, error)
	// ApprovalByUserCode returns the approval request with this user
	// code, compared exactly: normalize codes before storing and looking
	// them up.
	ApprovalByUserCode(ctx context.Context, code string) (*Approval, error)
	// ApprovalByDeviceCode returns the approval request with this device
	// code.
	ApprovalByDeviceCode(ctx context.Context, code string) (*Approval, error)
	// ListApprovals returns the agent's approval requests, oldest first.
	ListApprovals(ctx context.Context, agentID string) ([]*Approval, error)
	// PollApproval records a poll of the request at now and returns it.
	// slowDown reports a poll sooner than Interval after the previous
	// one (RFC 8628 slow_down). A pending request past its expiry is
	// marked expired.
	PollApproval(ctx context.Context, id string, now time.Time) (a *Approval, slowDown bool, err error)
	// DecideApproval moves a pending request to to (approved or denied),
	// recording the deciding user. Of concurrent decisions exactly one
	// wins; the others get a *StatusError. A request past its expiry is
	// marked expired and cannot be decided. It also moves an approved
	// request to used (userID is then kept as recorded), once: the
	// confirmation token of an approved call is handed out once.
	DecideApproval(ctx context.Context, id, to, userID string, now time.Time) error

	// ListUserHosts returns the hosts linked to the user, oldest first,
	// for the user's own view of what acts for them. An empty user id is
	// ErrInvalid.
	ListUserHosts(ctx context.Context, userID string) ([]*Host, error)
	// ListUserAgents returns, with their grants, oldest first, the agents
	// that act for the user or run under a host linked to the user. An
	// empty user id is ErrInvalid.
	ListUserAgents(ctx context.Context, userID string) ([]*Agent, error)
	// ListUserApprovals returns the pending approval requests addressed
	// to the user (Approval.UserID) or about an agent of the user or of a
	// host linked to the user, oldest first, expired ones included. An
	// empty user id is ErrInvalid.
	ListUserApprovals(ctx context.Context, userID string) ([]*Approval, error)
	// SetHostName and SetAgentName change a display name.
	SetHostName(ctx context.Context, id, name string) error
	SetAgentName(ctx context.Context, id, name string) error

	// Sweep applies the lifetime policy at now, in one transaction: see
	// SweepResult for what it changes.
	Sweep(ctx context.Context, now time.Time, p Policy) (SweepResult, error)

	// CreatePasskey stores a user's new passkey. It needs an id, a user
	// id, a user handle and a credential; a credential id already stored,
	// for any user, is ErrConflict. CreatedAt is set when zero.
	CreatePasskey(ctx context.Context, p *Passkey) error
	// ListPasskeys returns the user's passkeys, oldest first; none is
	// an empty slice.
	ListPasskeys(ctx context.Context, userID string) ([]*Passkey, error)
	// UsePasskey records that the user's passkey id proved presence at
	// now: credential is the credential as that assertion left it (its
	// signature counter, its flags). Another user's passkey is
	// ErrNotFound.
	UsePasskey(ctx context.Context, userID, id string, credential json.RawMessage, now time.Time) error
	// RenamePasskey and DeletePasskey change one of the user's passkeys;
	// another user's is ErrNotFound.
	RenamePasskey(ctx context.Context, userID, id, name string) error
	DeletePasskey(ctx context.Context, userID, id string) error

	// UseNonce records key as used until expires, for values that must
	// be accepted once (the nonces of presence challenges). A key
	// recorded before and not yet expired is ErrConflict; Sweep forgets
	// expired keys.
	UseNonce(ctx context.Context, key string, expires time.Time) error

	// Close releases the store's resources.
	Close() error
}

// AgentHostReader is implemented by stores that read an agent and its
// host in one step (package sqlstore's: one statement, one round trip to
// PostgreSQL); the provider reads both for every request it verifies.
// GetAgentAndHost returns what GetAgent(agentID) returns, and the agent's
// host as GetHost returns it, or a nil host when there is none; both come
// from one read.
type AgentHostReader interface {
	GetAgentAndHost(ctx context.Context, agentID string) (*Agent, *Host, error)
}

// ErrNotFound is wrapped by the errors for unknown ids. It is
// agentauth.ErrNotFound, so a Store satisfies the Directory contract.
var ErrNotFound = agentauth.ErrNotFound

// ErrConflict is wrapped by the errors for writes that contradict what is
// stored: a duplicate id or unique key, a host already linked to another
// user, a key rotated by another caller first.
var ErrConflict = errors.New("store: conflict")

// ErrInvalid is wrapped by the errors for malformed records: a missing id,
// an unknown status, a key that is not an Ed25519 public JWK, constraints
// that agentauth.ValidateConstraints refuses.
var ErrInvalid = errors.New("store: invalid record")

// ErrStatus is wrapped by *StatusError.
var ErrStatus = errors.New("store: unexpected status")

// ErrLifetimeExceeded is wrapped, along with a *StatusError for the
// revoked agent, when an agent past its absolute lifetime was to be
// activated or used. The protocol answers it 403
// absolute_lifetime_exceeded.
var ErrLifetimeExceeded = errors.New("store: absolute lifetime exceeded")

// StatusError reports a compare-and-set that found the record in another
// status than the caller expected. Status is the status found, so the
// caller can answer with the matching protocol error (agent_revoked,
// agent_expired, ...).
type StatusError struct {
	// Kind is "host", "agent", "grant" or "approval".
	Kind string
	// ID identifies the record; for a grant, "agent_id/capability".
	ID string
	// Status is the record's status as found (or as just set, for an
	// agent that TouchAgent expired).
	Status string
	// Want are the statuses the operation required.
	Want []string
}

// Error implements error.
func (e *StatusError) Error() string {
	return fmt.Sprintf("store: %s %q is %s, not %s", e.Kind, e.ID, e.Status, strings.Join(e.Want, " or "))
}

// Unwrap returns ErrStatus.
func (e *StatusError) Unwrap() error { return ErrStatus }

// Approval request statuses.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalExpired  = "expired"
	// ApprovalUsed is an approved call confirmation whose token was
	// handed out (see Approval.Call).
	ApprovalUsed = "used"
)

// Approval methods named by the protocol.
const (
	MethodDeviceAuthorization = "device_authorization"
	MethodCIBA                = "ciba"
)

// Claiming (protocol §2.10): LinkHostUser denies every grant of a claimed
// agent as ClaimedBy, with ClaimedReason, so that its history says why.
const (
	ClaimedBy     = "system:claimed"
	ClaimedReason = "the agent was claimed when its host was linked to a user"
)

// SweepResult counts what Sweep changed.
type SweepResult struct {
	// AgentsExpired are active agents whose session TTL (idle since the
	// last request or activation), max lifetime (since activation) or
	// stored expires_at had passed; they became expired.
	AgentsExpired int
	// AgentsRevoked are active or expired agents past their absolute
	// lifetime (since creation); they became revoked, so they can never
	// be reactivated.
	AgentsRevoked int
	// AgentsDeleted are pending agents older than the pending TTL; they
	// never became active, so they are deleted rather than revoked.
	AgentsDeleted int
	// HostsDeleted are pending hosts older than the pending TTL with no
	// agents left.
	HostsDeleted int
	// ApprovalsDeleted are approval requests past their expiry, in any
	// status.
	ApprovalsDeleted int
	// NoncesDeleted are single-use keys (UseNonce) past their expiry.
	NoncesDeleted int
}
