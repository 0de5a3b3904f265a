package store

import (
	"encoding/json"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
)

// Host is the stored record of a host (protocol §3.1).
type Host struct {
	// ID is the server-assigned identifier.
	ID string
	// Name is a display name; it never decides anything.
	Name string
	// PublicKey is the host's inline Ed25519 public JWK. Exactly one of
	// PublicKey and JWKSURL is set.
	PublicKey json.RawMessage
	// JWKSURL is where the host publishes its keys.
	JWKSURL string
	// Thumbprint is the RFC 7638 SHA-256 thumbprint of the host's current
	// signing key: the iss of its host JWTs. It is unique among hosts.
	Thumbprint string
	// UserID is the linked user, empty while the host is unlinked.
	UserID string
	// DefaultCapabilities are granted to the host's agents without
	// further approval, by server policy.
	DefaultCapabilities []string
	// OAuthClient is the client_id of the OAuth client this host stands
	// for, when the provider made the host for a user's consent to an
	// OAuth client: one host per user and client (see docs/oauth.md).
	// It is empty for Agent Auth hosts. It never decides authentication
	// by itself.
	OAuthClient string
	// Status is active, pending, revoked or rejected.
	Status string
	// ActivatedAt, ExpiresAt and LastUsedAt are the host's clocks; nil
	// when unset.
	ActivatedAt, ExpiresAt, LastUsedAt *time.Time
	// CreatedAt is set from the store's clock when left zero.
	CreatedAt time.Time
	// UpdatedAt is set by the store on every change.
	UpdatedAt time.Time
}

// Agent is the stored record of an agent (protocol §3.2) with its grants.
type Agent struct {
	// ID is the server-assigned identifier: the sub of its agent JWTs.
	ID string
	// Name is a display name. Names are not unique: the published client
	// names every agent of a host alike by default.
	Name string
	// HostID is the agent's host.
	HostID string
	// UserID is the user the agent acts for, empty for none.
	UserID string
	// Mode is delegated or autonomous.
	Mode string
	// Status is pending, active, expired, revoked, rejected or claimed.
	Status string
	// AgentKey is the agent's key.
	AgentKey
	// Grants are the agent's capability grants, sorted by capability when
	// read back. A capability appears at most once.
	Grants []Grant
	// LastUsedAt is the time of the last authenticated request.
	LastUsedAt *time.Time
	// ActivatedAt is the time of the last activation.
	ActivatedAt *time.Time
	// ExpiresAt is the session deadline computed by the Policy at the
	// last activation or request; nil when no clock applies.
	ExpiresAt *time.Time
	// CreatedAt starts the absolute lifetime. It is set from the store's
	// clock when left zero.
	CreatedAt time.Time
	// UpdatedAt is set by the store on every change.
	UpdatedAt time.Time
}

// AgentKey is an agent's public key: an inline Ed25519 JWK, or a JWKS URL
// with the kid of the key.
type AgentKey struct {
	// PublicKey is the inline Ed25519 public JWK. Exactly one of
	// PublicKey and JWKSURL is set.
	PublicKey json.RawMessage
	// JWKSURL is where the agent's keys are published; KID names the key.
	JWKSURL, KID string
	// Thumbprint identifies the key within its host. For an inline key it
	// is the RFC 7638 thumbprint, computed when left empty and checked
	// otherwise; for a JWKS key it is optional and up to the caller.
	// Registration retries find the agent by it.
	Thumbprint string
}

// Grant is one capability granted to one agent (protocol §3.3).
type Grant struct {
	// Capability is the capability name; it is unique per agent.
	Capability string
	// Status is active, pending or denied.
	Status string
	// Constraints map top-level input fields to an exact value or an
	// operator object (protocol §2.13). They must pass
	// agentauth.ValidateConstraints, and each value reads back as the
	// bytes written, less surrounding whitespace: no re-encoding ever
	// turns 1.50 into 1.5 or reorders an object. An empty map is stored
	// as none.
	Constraints map[string]json.RawMessage
	// GrantedBy is the user or system actor that granted the capability.
	GrantedBy string
	// DeniedBy is the user or system actor that denied it.
	DeniedBy string
	// Reason says why the capability was requested, granted or denied.
	Reason string
	// ExpiresAt ends the grant independently of the agent; nil for never.
	ExpiresAt *time.Time
	// CreatedAt and UpdatedAt are set by the store.
	CreatedAt, UpdatedAt time.Time
}

// GrantChange is a status change of one grant, for UpdateGrantStatus.
type GrantChange struct {
	// From are the statuses the grant must be in.
	From []string
	// To is the new status: active, pending or denied.
	To string
	// By records who made the change: it becomes GrantedBy when To is
	// active and DeniedBy when To is denied.
	By string
	// Reason replaces the grant's reason when not empty.
	Reason string
	// ExpiresAt becomes the grant's expiry when To is active (nil: it
	// never expires), so that a grant's lifetime runs from its approval;
	// other changes keep the expiry.
	ExpiresAt *time.Time
}

// Approval is a pending request for a user's consent to a registration,
// a capability request or a reactivation (protocol §7), in the manner of
// an RFC 8628 device authorization.
type Approval struct {
	// ID is the server-assigned identifier.
	ID string
	// Method is the approval method, such as device_authorization or
	// ciba.
	Method string
	// AgentID and HostID name what is being approved; at least one is
	// set. Deleting the agent or host deletes its requests.
	AgentID, HostID string
	// UserID is the user who decided, or who is asked (from a login
	// hint) while the request is pending.
	UserID string
	// Capabilities are the requested capabilities with the constraints
	// the agent proposed.
	Capabilities []RequestedCapability
	// UserCode is the code the user enters. It is write-only: the store
	// keeps its SHA-256 digest, finds requests by it, and never returns
	// it, so a leaked database does not hand out codes that approve.
	UserCode string
	// DeviceCode is an optional second secret for clients that poll by
	// device code; write-only like UserCode.
	DeviceCode string
	// Status is pending, approved, denied or expired.
	Status string
	// Interval is the minimum time between polls, to the millisecond.
	Interval time.Duration
	// LastPolledAt is the time of the last poll, for slow_down.
	LastPolledAt *time.Time
	// ExpiresAt ends the request.
	ExpiresAt time.Time
	// BindingMessage is shown to the approver.
	BindingMessage string
	// Call is set for a request that asks a person to confirm one call
	// of the agent (see core.WithHumanConfirmation) rather than to grant
	// capabilities; Capabilities then names the call's capability.
	Call *Call
	// CreatedAt is set from the store's clock when left zero.
	CreatedAt time.Time
	// UpdatedAt is set by the store on every change.
	UpdatedAt time.Time
}

// Call is a call of an agent that a person is asked to confirm: what its
// confirmation token will be bound to, and what the person is shown.
type Call struct {
	// Capability is the capability called.
	Capability string `json:"capability"`
	// Arguments are the call's arguments, as the agent sent them.
	Arguments json.RawMessage `json:"arguments"`
	// Audience is the location the call runs at.
	Audience string `json:"audience"`
	// Preview is the call's preview, computed by the application.
	Preview json.RawMessage `json:"preview"`
}

// RequestedCapability is a capability named in an approval request, with
// the constraints proposed for it.
type RequestedCapability struct {
	// Name is the capability name.
	Name string `json:"name"`
	// Constraints are the proposed constraints, kept like
	// Grant.Constraints.
	Constraints map[string]json.RawMessage `json:"constraints,omitempty"`
}

// DirectoryHost returns the host as the resource server sees it.
func (h *Host) DirectoryHost() *agentauth.Host {
	return &agentauth.Host{
		ID:                  h.ID,
		PublicKey:           cloneRaw(h.PublicKey),
		JWKSURL:             h.JWKSURL,
		UserID:              h.UserID,
		Status:              h.Status,
		DefaultCapabilities: cloneStrings(h.DefaultCapabilities),
	}
}

// DirectoryAgent returns the agent as the resource server sees it at now.
// An active agent whose ExpiresAt has passed is reported expired, so that
// the session deadline holds between two sweeps.
func (a *Agent) DirectoryAgent(now time.Time) *agentauth.Agent {
	status := a.Status
	if status == agentcap.StatusActive && a.ExpiresAt != nil && !now.Before(*a.ExpiresAt) {
		status = agentcap.StatusExpired
	}
	d := &agentauth.Agent{
		ID:        a.ID,
		HostID:    a.HostID,
		UserID:    a.UserID,
		Mode:      a.Mode,
		Status:    status,
		PublicKey: cloneRaw(a.PublicKey),
		JWKSURL:   a.JWKSURL,
		KID:       a.KID,
		Grants:    make([]agentauth.Grant, len(a.Grants)),
	}
	for i, g := range a.Grants {
		d.Grants[i] = agentauth.Grant{
			Capability:  g.Capability,
			Status:      g.Status,
			Constraints: cloneConstraints(g.Constraints),
			ExpiresAt:   cloneTime(g.ExpiresAt),
		}
	}
	return d
}

// Passkey is a WebAuthn credential a user registered with the provider:
// the proof of presence that approvals and confirmations of approval
// strength webauthn ask for.
type Passkey struct {
	// ID is the credential id the authenticator chose, base64url without
	// padding. It is unique across users.
	ID string
	// UserID is the user who registered it.
	UserID string
	// UserHandle is the WebAuthn user handle it was registered under,
	// base64url without padding: random, and the same for every passkey
	// of one user.
	UserHandle string
	// Name is what the user calls it ("laptop", "phone").
	Name string
	// Credential is the credential as the WebAuthn library records it
	// (public key, signature counter, flags, transports), as JSON.
	Credential json.RawMessage
	// CreatedAt is when it was registered; LastUsedAt when it last
	// proved presence, nil before its first use.
	CreatedAt  time.Time
	LastUsedAt *time.Time
}
