package client

import (
	"encoding/json"
	"time"
)

// Capability is a capability as a provider lists or describes it. Input
// and Output are JSON Schemas, absent from list entries.
type Capability struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Location is the absolute URL where the capability executes; empty
	// means the provider's default location.
	Location         string          `json:"location,omitempty"`
	Input            json.RawMessage `json:"input,omitempty"`
	Output           json.RawMessage `json:"output,omitempty"`
	GrantStatus      string          `json:"grant_status,omitempty"`
	ApprovalStrength string          `json:"approval_strength,omitempty"`

	// Risk ("low", "medium", "high", "critical"), SupportsPreview,
	// RequiresConfirmation, Title and ReadOnly are agentcap's extension
	// of list and describe entries; they are zero when the server does
	// not send them (or sends them with another type).
	Risk string `json:"risk,omitempty"`
	// Title is the capability's display title, when it declares one.
	Title string `json:"title,omitempty"`
	// ReadOnly reports a capability that declares it changes nothing.
	ReadOnly bool `json:"read_only,omitempty"`
	// SupportsPreview reports a dry run (Agent.Preview).
	SupportsPreview bool `json:"supports_preview,omitempty"`
	// RequiresConfirmation reports that every call must carry a
	// confirmation token (see ConfirmationRequired). It is advice: the
	// execute answer is what counts.
	RequiresConfirmation bool `json:"requires_confirmation,omitempty"`
	// PreviewSchema is the JSON Schema of the preview, in describe
	// answers of a capability with one.
	PreviewSchema json.RawMessage `json:"preview_schema,omitempty"`
}

// UnmarshalJSON decodes a capability, reading the extension members
// leniently: one of an unexpected type is left zero instead of failing
// the listing.
func (c *Capability) UnmarshalJSON(b []byte) error {
	type plain Capability
	var v struct {
		plain
		Risk                 json.RawMessage `json:"risk"`
		Title                json.RawMessage `json:"title"`
		ReadOnly             json.RawMessage `json:"read_only"`
		SupportsPreview      json.RawMessage `json:"supports_preview"`
		RequiresConfirmation json.RawMessage `json:"requires_confirmation"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = Capability(v.plain)
	_ = json.Unmarshal(v.Risk, &c.Risk)
	_ = json.Unmarshal(v.Title, &c.Title)
	_ = json.Unmarshal(v.ReadOnly, &c.ReadOnly)
	_ = json.Unmarshal(v.SupportsPreview, &c.SupportsPreview)
	_ = json.Unmarshal(v.RequiresConfirmation, &c.RequiresConfirmation)
	return nil
}

// CapabilityPage is one page of a capability listing.
type CapabilityPage struct {
	Capabilities []Capability `json:"capabilities"`
	HasMore      bool         `json:"has_more"`
	NextCursor   string       `json:"next_cursor,omitempty"`
}

// Grant is a capability grant as registration, status and capability
// requests report it. Active grants also carry the capability's details.
type Grant struct {
	Capability  string                     `json:"capability"`
	Status      string                     `json:"status"`
	Constraints map[string]json.RawMessage `json:"constraints,omitempty"`
	GrantedBy   string                     `json:"granted_by,omitempty"`
	Reason      string                     `json:"reason,omitempty"`
	ExpiresAt   *time.Time                 `json:"expires_at,omitempty"`
	Description string                     `json:"description,omitempty"`
	Location    string                     `json:"location,omitempty"`
	Input       json.RawMessage            `json:"input,omitempty"`
	Output      json.RawMessage            `json:"output,omitempty"`
}

// Approval tells how the user approves a pending registration or
// capability request (protocol §7).
type Approval struct {
	// Method is "device_authorization", "ciba" or a provider's own.
	Method                  string `json:"method"`
	VerificationURI         string `json:"verification_uri,omitempty"`
	VerificationURIComplete string `json:"verification_uri_complete,omitempty"`
	UserCode                string `json:"user_code,omitempty"`
	BindingMessage          string `json:"binding_message,omitempty"`
	// ExpiresIn is the lifetime of the approval in seconds.
	ExpiresIn int `json:"expires_in,omitempty"`
	// Interval is the minimum polling interval in seconds.
	Interval int `json:"interval,omitempty"`

	// AgentID is the agent the approval is for. The client fills it in;
	// it is not part of the provider's approval object.
	AgentID string `json:"-"`
}

// AgentStatus is an agent's state and grants, as the status endpoint,
// registration and capability requests report them.
type AgentStatus struct {
	AgentID     string     `json:"agent_id"`
	HostID      string     `json:"host_id,omitempty"`
	Name        string     `json:"name,omitempty"`
	Status      string     `json:"status"`
	Mode        string     `json:"mode,omitempty"`
	UserID      string     `json:"user_id,omitempty"`
	Grants      []Grant    `json:"agent_capability_grants"`
	Approval    *Approval  `json:"approval,omitempty"`
	CreatedAt   *time.Time `json:"created_at,omitempty"`
	ActivatedAt *time.Time `json:"activated_at,omitempty"`
	LastUsedAt  *time.Time `json:"last_used_at,omitempty"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
}

// Grant returns the grant for capability, and false when there is none.
func (s *AgentStatus) Grant(capability string) (Grant, bool) {
	for _, g := range s.Grants {
		if g.Capability == capability {
			return g, true
		}
	}
	return Grant{}, false
}

// CapabilityRequest asks for one capability, optionally with proposed
// constraints (top-level input fields mapped to an exact value or an
// operator object, protocol §2.13).
type CapabilityRequest struct {
	Name        string
	Constraints map[string]json.RawMessage
}

// MarshalJSON encodes an unconstrained request as its bare name and a
// constrained one as {name, constraints}, as the protocol allows both.
func (r CapabilityRequest) MarshalJSON() ([]byte, error) {
	if len(r.Constraints) == 0 {
		return json.Marshal(r.Name)
	}
	return json.Marshal(struct {
		Name        string                     `json:"name"`
		Constraints map[string]json.RawMessage `json:"constraints"`
	}{r.Name, r.Constraints})
}

// Capabilities returns unconstrained requests for names.
func Capabilities(names ...string) []CapabilityRequest {
	reqs := make([]CapabilityRequest, len(names))
	for i, n := range names {
		reqs[i] = CapabilityRequest{Name: n}
	}
	return reqs
}
