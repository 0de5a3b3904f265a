package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/core"
)

// maxRequestedCapabilities bounds the capabilities one request may name.
const maxRequestedCapabilities = 100

// Display text limits (protocol §8.10).
const (
	maxNameRunes   = 100
	maxReasonRunes = 500
)

// parseRequested reads a "capabilities" member: names, or {name,
// constraints} objects. Unknown names are collected into one 400
// invalid_capabilities answer; malformed constraints are refused now,
// unknown operators as 400 unknown_constraint_operator, because a grant
// holding them could never be used.
func (p *Provider) parseRequested(raw json.RawMessage, required bool) ([]store.RequestedCapability, error) {
	if len(raw) == 0 || string(raw) == "null" {
		if required {
			return nil, badRequest("capabilities is required")
		}
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badRequest("capabilities must be an array")
	}
	if required && len(items) == 0 {
		return nil, badRequest("capabilities must name at least one capability")
	}
	if len(items) > maxRequestedCapabilities {
		return nil, badRequest(fmt.Sprintf("at most %d capabilities may be requested at once", maxRequestedCapabilities))
	}
	var out []store.RequestedCapability
	var unknown, unknownOps []string
	for i, item := range items {
		var rc store.RequestedCapability
		if err := json.Unmarshal(item, &rc.Name); err != nil {
			m, err := parseObject(item)
			if err != nil {
				return nil, badRequest(fmt.Sprintf("capabilities[%d] must be a name or an object", i))
			}
			if rc.Name, err = reqString(m, "name"); err != nil {
				return nil, badRequest(fmt.Sprintf("capabilities[%d].name must be a non-empty string", i))
			}
			if c, ok := m["constraints"]; ok && string(c) != "null" {
				cm, err := parseObject(c)
				if err != nil {
					return nil, badRequest(fmt.Sprintf("capabilities[%d].constraints must be an object", i))
				}
				if len(cm) > 0 {
					rc.Constraints = cm
				}
			}
		}
		if rc.Name == "" {
			return nil, badRequest(fmt.Sprintf("capabilities[%d] has an empty name", i))
		}
		if slices.ContainsFunc(out, func(o store.RequestedCapability) bool { return o.Name == rc.Name }) {
			return nil, badRequest(fmt.Sprintf("capability %q is requested twice", rc.Name))
		}
		if _, ok := p.reg.Lookup(rc.Name); !ok {
			unknown = append(unknown, rc.Name)
			continue
		}
		if err := agentauth.ValidateConstraints(rc.Constraints); err != nil {
			var uo *agentauth.UnknownOperatorError
			if errors.As(err, &uo) {
				unknownOps = append(unknownOps, collectUnknownOps(err)...)
				continue
			}
			return nil, badRequest(fmt.Sprintf("constraints of %s: %v", rc.Name, err))
		}
		out = append(out, rc)
	}
	if len(unknown) > 0 {
		return nil, agentcap.NewError(agentcap.CodeInvalidCapabilities, "one or more requested capabilities do not exist").
			With("invalid_capabilities", unknown)
	}
	if len(unknownOps) > 0 {
		slices.Sort(unknownOps)
		unknownOps = slices.Compact(unknownOps)
		// The spec names the member unknown_operators; the reference
		// provider sends operators. Both are sent so either reader finds
		// it.
		return nil, agentcap.NewError(agentcap.CodeUnknownConstraintOperator, "a constraint uses an operator this server does not know").
			With("unknown_operators", unknownOps).With("operators", unknownOps)
	}
	return out, nil
}

func collectUnknownOps(err error) []string {
	var names []string
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			names = append(names, collectUnknownOps(e)...)
		}
		return names
	}
	var uo *agentauth.UnknownOperatorError
	if errors.As(err, &uo) {
		names = append(names, uo.Operators...)
	}
	return names
}

// effectiveConstraints narrows a proposal with the server's constraints.
// A proposal the server's constraints contradict is refused as 400
// invalid_request naming the capability.
func (p *Provider) effectiveConstraints(ctx context.Context, a *store.Agent, def *core.Definition, proposed map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	if p.policy.Constraints == nil {
		return cloneConstraints(proposed), nil
	}
	c, err := Narrow(proposed, p.policy.Constraints(ctx, a, def))
	if err != nil {
		return nil, badRequest(fmt.Sprintf("the constraints proposed for %s conflict with the server's: %v", def.Name(), err))
	}
	return c, nil
}

// grantJSON is a grant as registration, status, reactivation and
// capability requests report it (protocol §5.3): active grants carry the
// capability's details, pending ones only their name and status, denied
// ones a reason.
type grantJSON struct {
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

func (p *Provider) renderGrants(gs []store.Grant, withGrantedBy bool) []grantJSON {
	out := make([]grantJSON, 0, len(gs))
	for _, g := range gs {
		j := grantJSON{Capability: g.Capability, Status: g.Status}
		switch g.Status {
		case agentcap.StatusActive:
			j.Constraints = g.Constraints
			j.ExpiresAt = g.ExpiresAt
			if withGrantedBy {
				j.GrantedBy = g.GrantedBy
			}
			if def, ok := p.reg.Lookup(g.Capability); ok {
				j.Description = def.Description()
				j.Location = def.Location()
				j.Input = def.InputSchema()
				j.Output = def.OutputSchema()
			}
		case agentcap.StatusDenied:
			j.Reason = g.Reason
		}
		out = append(out, j)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Capability < out[j].Capability })
	return out
}

// approvalJSON is the approval object of protocol §7.
type approvalJSON struct {
	Method                  string `json:"method"`
	VerificationURI         string `json:"verification_uri,omitempty"`
	VerificationURIComplete string `json:"verification_uri_complete,omitempty"`
	UserCode                string `json:"user_code,omitempty"`
	BindingMessage          string `json:"binding_message,omitempty"`
	ExpiresIn               int    `json:"expires_in"`
	Interval                int    `json:"interval"`
}

// agentJSON is the agent as registration, status and reactivation report
// it (protocol §5.3, §5.5).
type agentJSON struct {
	AgentID     string        `json:"agent_id"`
	HostID      string        `json:"host_id"`
	Name        string        `json:"name"`
	Status      string        `json:"status"`
	Mode        string        `json:"mode"`
	UserID      string        `json:"user_id,omitempty"`
	Grants      []grantJSON   `json:"agent_capability_grants"`
	Approval    *approvalJSON `json:"approval,omitempty"`
	CreatedAt   time.Time     `json:"created_at"`
	ActivatedAt *time.Time    `json:"activated_at,omitempty"`
	LastUsedAt  *time.Time    `json:"last_used_at,omitempty"`
	ExpiresAt   *time.Time    `json:"expires_at,omitempty"`
}

func (p *Provider) renderAgent(a *store.Agent, ap *approvalJSON, withGrantedBy bool) agentJSON {
	status := a.DirectoryAgent(p.now()).Status
	return agentJSON{
		AgentID:     a.ID,
		HostID:      a.HostID,
		Name:        a.Name,
		Status:      status,
		Mode:        a.Mode,
		UserID:      a.UserID,
		Grants:      p.renderGrants(a.Grants, withGrantedBy),
		Approval:    ap,
		CreatedAt:   a.CreatedAt,
		ActivatedAt: a.ActivatedAt,
		LastUsedAt:  a.LastUsedAt,
		ExpiresAt:   a.ExpiresAt,
	}
}
