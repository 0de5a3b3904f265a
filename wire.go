package agentcap

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
)

// ProtocolVersion is the Agent Auth Protocol version the kit speaks.
const ProtocolVersion = "1.0-draft"

// AlgorithmEd25519 is the only key type of agent and host keys.
const AlgorithmEd25519 = "Ed25519"

// DiscoveryPath is where an Agent Auth server publishes its discovery
// document, at its issuer's origin.
const DiscoveryPath = "/.well-known/agent-configuration"

// Token types: the "typ" header of agent and host JWTs.
const (
	TypeAgentJWT = "agent+jwt"
	TypeHostJWT  = "host+jwt"
)

// Agent, host and grant states, as the protocol names them.
const (
	StatusActive   = "active"
	StatusPending  = "pending"
	StatusRevoked  = "revoked"
	StatusRejected = "rejected"
	StatusExpired  = "expired"
	StatusClaimed  = "claimed"
	// StatusDenied is a grant's state only.
	StatusDenied = "denied"
)

// Agent modes.
const (
	// ModeDelegated: the agent acts for its host's user.
	ModeDelegated = "delegated"
	// ModeAutonomous: the agent acts for no user.
	ModeAutonomous = "autonomous"
)

// Grant statuses of list and describe entries ("grant_status").
const (
	GrantStatusGranted    = "granted"
	GrantStatusNotGranted = "not_granted"
)

// Routes of a capability location, relative to where it is mounted.
const (
	RouteList     = "capability/list"
	RouteDescribe = "capability/describe"
	RouteExecute  = "capability/execute"
	RouteBatch    = "capability/batch-execute"
	// RouteStatus is where a job's status_url points: GET polls the job,
	// DELETE cancels it.
	RouteStatus = "capability/status"
	// RoutePreview runs a capability's preview (see docs/confirmation.md).
	RoutePreview = "capability/preview"
)

// Event types of an execution answered with an event stream (Agent Auth
// execute, streaming): data events carry chunks, one error or done event
// ends the stream.
const (
	EventData  = "data"
	EventError = "error"
	EventDone  = "done"
)

// Keys of agentcap's confirmations over MCP, shared by package mcpx and
// the MCP bridge of the agentcap command, which answer alike (see package
// mcpx, "Confirmations").
const (
	// MCPMetaRequiresConfirmation is the _meta key, set to true, of a
	// listed tool whose calls must be confirmed.
	MCPMetaRequiresConfirmation = "agentcap/requires_confirmation"
	// MCPElicitationID names the server's confirmation request among the
	// input requests of a tools/call (and its answer among the input
	// responses of the retried call).
	MCPElicitationID = "agentcap/confirmation"
)

// Discovery is the document an Agent Auth server publishes at
// DiscoveryPath (protocol §5.1), with the protocol's field names.
type Discovery struct {
	// Version is the protocol version; empty means ProtocolVersion.
	Version string `json:"version"`
	// ProviderName identifies the provider. Required.
	ProviderName string `json:"provider_name"`
	// Description is a human-readable description of the service.
	Description string `json:"description,omitempty"`
	// Issuer is the base URL endpoints are relative to. Required: an
	// absolute http or https URL.
	Issuer string `json:"issuer"`
	// DefaultLocation is the absolute URL where capabilities without a
	// location of their own execute: the "aud" of their agent JWTs.
	DefaultLocation string `json:"default_location,omitempty"`
	// Algorithms lists the supported key types; empty means Ed25519.
	Algorithms []string `json:"algorithms"`
	// Modes lists the supported agent modes; empty means both delegated
	// and autonomous.
	Modes []string `json:"modes"`
	// ApprovalMethods lists how users approve agents and capabilities
	// (device_authorization, ciba, ...); empty for a server that approves
	// nothing itself.
	ApprovalMethods []string `json:"approval_methods"`
	// Endpoints are the server's endpoints, relative to Issuer. List only
	// those the server serves.
	Endpoints Endpoints `json:"endpoints"`
	// JWKSURI is the URL of the server's own JWK Set, if it has one.
	JWKSURI string `json:"jwks_uri,omitempty"`
}

// Endpoints are the paths of a server's endpoints, relative to its
// issuer. Empty members are left out of the document.
type Endpoints struct {
	Register           string `json:"register,omitempty"`
	Capabilities       string `json:"capabilities,omitempty"`
	DescribeCapability string `json:"describe_capability,omitempty"`
	Execute            string `json:"execute,omitempty"`
	RequestCapability  string `json:"request_capability,omitempty"`
	Status             string `json:"status,omitempty"`
	Reactivate         string `json:"reactivate,omitempty"`
	Revoke             string `json:"revoke,omitempty"`
	RevokeHost         string `json:"revoke_host,omitempty"`
	RotateKey          string `json:"rotate_key,omitempty"`
	RotateHostKey      string `json:"rotate_host_key,omitempty"`
	Introspect         string `json:"introspect,omitempty"`
}

// ConstraintViolation is one failed check of a grant's constraints, an
// entry of constraint_violated's "violations" member.
type ConstraintViolation struct {
	// Field is the top-level input field.
	Field string `json:"field"`
	// Constraint is the failed constraint as granted: the exact value, or
	// a one-member operator object such as {"max":1000} holding the
	// granted operand of the operator that failed.
	Constraint json.RawMessage `json:"constraint"`
	// Actual is the argument value as received (without insignificant
	// whitespace), or null when it is missing or cannot be read.
	Actual json.RawMessage `json:"actual"`
}

// HeaderRequestID names the request id header: read from a request to
// identify it in audit records, and sent back with the answer.
const HeaderRequestID = "X-Request-Id"

// maxRequestIDLength bounds a caller's request id; a longer one is
// replaced.
const maxRequestIDLength = 128

// RequestID returns the id of a request that sent the X-Request-Id value
// sent: sent itself when it is 1 to 128 printable ASCII characters, else
// 32 random hex digits.
func RequestID(sent string) string {
	if validRequestID(sent) {
		return sent
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLength {
		return false
	}
	for i := range len(id) {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}
