package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/core"
)

// User is the user signed in to the approval page.
type User struct {
	// ID is the user's stable id: hosts are linked to it and grants
	// record it.
	ID string
	// Name is shown on the page.
	Name string
	// AuthenticatedAt is when the user last proved who they are. The page
	// refuses to approve with a sign-in older than Config.FreshAuth.
	AuthenticatedAt time.Time
}

// NewHost describes a host that registers for the first time, for
// Policy.HostDefaults.
type NewHost struct {
	// Name is the host's self-chosen display name: never trust it.
	Name string
	// Thumbprint identifies the host's key.
	Thumbprint string
	// Mode is the mode of the agent it registers.
	Mode string
}

// Policy decides what the provider approves without asking a user. The
// zero Policy approves nothing by itself: every delegated registration
// and capability request goes to the user, and autonomous agents are
// registered without grants.
type Policy struct {
	// HostDefaults returns the default capabilities of a host created by
	// dynamic registration. Nil means none.
	HostDefaults func(ctx context.Context, h NewHost) []string

	// AllowAutonomous decides whether a host may register autonomous
	// agents; host is nil for a host registering for the first time.
	// An allowed autonomous agent is active at once, granted the
	// requested capabilities GrantAutonomous allows (never one of
	// approval strength webauthn, which needs a person); the others are
	// denied. Nil allows every host, which is safe while hosts have no
	// defaults. A refusal is 403 unauthorized.
	AllowAutonomous func(ctx context.Context, host *store.Host) bool

	// GrantAutonomous decides whether an autonomous agent of an active
	// host is granted def when it asks, at registration or through a
	// capability request; no user is ever asked, so a capability it does
	// not grant is denied with a reason. Nil means DefaultGrantAutonomous:
	// def is one of the host's default capabilities and its approval
	// strength is not webauthn. An application that offers public
	// capabilities to every autonomous agent (approval strength none, no
	// user's data) says so here; see examples/bank. Reactivation still
	// returns an autonomous agent to its host's defaults only (protocol
	// §2.5); it asks again for the rest.
	GrantAutonomous func(ctx context.Context, host *store.Host, def *core.Definition) bool

	// AutoApprove decides whether a delegated agent of a host linked to a
	// user gets def without asking the user again. Nil means: def is one
	// of the host's default capabilities and its approval strength is not
	// webauthn (protocol §8.10: no silent escalation of what needs proof
	// of presence).
	AutoApprove func(ctx context.Context, host *store.Host, def *core.Definition) bool

	// ApprovalMethod chooses how the user is asked (protocol §7.5) when a
	// request needs approval. Nil means CIBA when the client prefers it,
	// the provider offers it and there is someone to address (a known
	// user, or a login hint), device authorization otherwise. The choice
	// is honoured when it is a method the provider offers and, for CIBA,
	// when there is someone to address; otherwise device authorization
	// is used. A policy that looks at anything that depends on whether a
	// login hint names a user would tell the client so: MethodContext
	// carries only the hint itself.
	ApprovalMethod func(ctx context.Context, c MethodContext) string

	// GrantTTL returns how long a grant of def lasts once active, counted
	// from the moment it becomes active (approval, or a grant without a
	// user); zero or less means until the agent loses it otherwise. The
	// grant's expires_at is then reported in status and registration
	// answers (protocol §3.3), and a call after it is 403
	// capability_not_granted: an expired grant is not an effective one.
	// Nil gives every grant no expiry. GrantTTLs builds one from a table.
	GrantTTL func(ctx context.Context, agent *store.Agent, def *core.Definition) time.Duration

	// Constraints returns constraints the server imposes on a grant of
	// def, whatever the agent proposed: a transfer limit, say. They are
	// combined with the proposal so that the grant is at most as wide as
	// either (see Narrow). Nil imposes none.
	Constraints func(ctx context.Context, agent *store.Agent, def *core.Definition) map[string]json.RawMessage
}

func (p *Provider) autonomousAllowed(ctx context.Context, h *store.Host) bool {
	if p.policy.AllowAutonomous == nil {
		return true
	}
	return p.policy.AllowAutonomous(ctx, h)
}

// GrantTTLs returns a Policy.GrantTTL that gives each capability named in
// ttls that lifetime, and every other capability none.
func GrantTTLs(ttls map[string]time.Duration) func(context.Context, *store.Agent, *core.Definition) time.Duration {
	return func(_ context.Context, _ *store.Agent, def *core.Definition) time.Duration {
		return ttls[def.Name()]
	}
}

// grantExpiry is when a grant of def that becomes active at now ends
// under Policy.GrantTTL; nil for never.
func (p *Provider) grantExpiry(ctx context.Context, a *store.Agent, def *core.Definition, now time.Time) *time.Time {
	if p.policy.GrantTTL == nil || def == nil {
		return nil
	}
	ttl := p.policy.GrantTTL(ctx, a, def)
	if ttl <= 0 {
		return nil
	}
	t := now.Add(ttl)
	return &t
}

// DefaultGrantAutonomous is the rule Policy.GrantAutonomous falls back
// on: def is one of host's default capabilities and does not need proof
// of presence (approval strength webauthn), which an agent without a
// user can never give.
func DefaultGrantAutonomous(_ context.Context, host *store.Host, def *core.Definition) bool {
	return host != nil && def.Approval() != core.ApprovalWebAuthn && slices.Contains(host.DefaultCapabilities, def.Name())
}

// grantAutonomous applies Policy.GrantAutonomous; capabilities of
// approval strength webauthn are never granted to an autonomous agent,
// whatever the policy says.
func (p *Provider) grantAutonomous(ctx context.Context, h *store.Host, def *core.Definition) bool {
	if h == nil || h.Status != agentcap.StatusActive || def.Approval() == core.ApprovalWebAuthn {
		return false
	}
	if p.policy.GrantAutonomous != nil {
		return p.policy.GrantAutonomous(ctx, h, def)
	}
	return DefaultGrantAutonomous(ctx, h, def)
}

func (p *Provider) autoApprove(ctx context.Context, h *store.Host, def *core.Definition) bool {
	if h == nil || h.Status != agentcap.StatusActive || h.UserID == "" {
		return false
	}
	if p.policy.AutoApprove != nil {
		return p.policy.AutoApprove(ctx, h, def)
	}
	return def.Approval() != core.ApprovalWebAuthn && slices.Contains(h.DefaultCapabilities, def.Name())
}

// Narrow combines two constraint sets into one that admits a call only if
// both admit it, so that a server constraint can narrow an agent's
// proposal but never widen it. Fields constrained by one side keep that
// side's constraint. On a field both constrain: min takes the larger
// bound, max the smaller, in the intersection, not_in the union; an exact
// value (or eq) survives only if the other side admits it. Two sides
// that admit no common value are an error, and so is anything
// agentauth.ValidateConstraints refuses.
func Narrow(a, b map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	if err := agentauth.ValidateConstraints(a); err != nil {
		return nil, err
	}
	if err := agentauth.ValidateConstraints(b); err != nil {
		return nil, err
	}
	if len(a) == 0 {
		return cloneConstraints(b), nil
	}
	out := cloneConstraints(a)
	for field, cb := range b {
		ca, ok := out[field]
		if !ok {
			out[field] = bytes.Clone(cb)
			continue
		}
		merged, err := narrowField(field, ca, cb)
		if err != nil {
			return nil, err
		}
		out[field] = merged
	}
	return out, nil
}

func cloneConstraints(m map[string]json.RawMessage) map[string]json.RawMessage {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = bytes.Clone(v)
	}
	return out
}

// operators reads a constraint as an operator object; an exact value is
// read as {"eq": value}.
func operators(raw json.RawMessage) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		m, err := parseObject(raw)
		if err != nil {
			return nil, err
		}
		isOps := len(m) > 0
		for k := range m {
			if !slices.Contains(agentauth.Operators, k) {
				isOps = false
			}
		}
		if isOps {
			return m, nil
		}
	}
	return map[string]json.RawMessage{"eq": raw}, nil
}

func narrowField(field string, a, b json.RawMessage) (json.RawMessage, error) {
	oa, err := operators(a)
	if err != nil {
		return nil, err
	}
	ob, err := operators(b)
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	for _, op := range agentauth.Operators {
		va, ina := oa[op]
		vb, inb := ob[op]
		switch {
		case !ina && !inb:
			continue
		case !ina:
			out[op] = vb
			continue
		case !inb:
			out[op] = va
			continue
		}
		switch op {
		case "min", "max":
			na, nb, err := numbers(va, vb)
			if err != nil {
				return nil, fmt.Errorf("constraint on %s: %w", field, err)
			}
			keepA := na.Cmp(nb) >= 0
			if op == "max" {
				keepA = na.Cmp(nb) <= 0
			}
			if keepA {
				out[op] = va
			} else {
				out[op] = vb
			}
		case "in":
			out[op] = intersect(va, vb)
		case "not_in":
			out[op] = union(va, vb)
		case "eq":
			if !jsonEqual(va, vb) {
				return nil, fmt.Errorf("constraint on %s: the exact values %s and %s cannot both hold", field, va, vb)
			}
			out[op] = va
		}
	}
	if eq, ok := out["eq"]; ok {
		// An exact value is the narrowest constraint there is: keep it
		// alone, if the rest admits it.
		vs, err := agentauth.CheckConstraints(map[string]json.RawMessage{field: mustJSON(out)}, map[string]json.RawMessage{field: eq})
		if err != nil {
			return nil, err
		}
		if len(vs) > 0 {
			return nil, fmt.Errorf("constraint on %s: the exact value %s is outside the other constraint", field, eq)
		}
		return eq, nil
	}
	return mustJSON(out), nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func numbers(a, b json.RawMessage) (*big.Float, *big.Float, error) {
	na, _, err := big.ParseFloat(string(bytes.TrimSpace(a)), 10, 256, big.ToNearestEven)
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not a number", a)
	}
	nb, _, err := big.ParseFloat(string(bytes.TrimSpace(b)), 10, 256, big.ToNearestEven)
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not a number", b)
	}
	return na, nb, nil
}

func rawArray(raw json.RawMessage) []json.RawMessage {
	var items []json.RawMessage
	_ = json.Unmarshal(raw, &items)
	return items
}

func intersect(a, b json.RawMessage) json.RawMessage {
	out := []json.RawMessage{}
	ib := rawArray(b)
	for _, x := range rawArray(a) {
		if slices.ContainsFunc(ib, func(y json.RawMessage) bool { return jsonEqual(x, y) }) {
			out = append(out, x)
		}
	}
	return mustJSON(out)
}

func union(a, b json.RawMessage) json.RawMessage {
	out := rawArray(a)
	for _, y := range rawArray(b) {
		if !slices.ContainsFunc(out, func(x json.RawMessage) bool { return jsonEqual(x, y) }) {
			out = append(out, y)
		}
	}
	return mustJSON(out)
}

// jsonEqual compares two JSON values exactly as a constraint does: one
// is an exact-value constraint and the other the argument.
func jsonEqual(a, b json.RawMessage) bool {
	vs, err := agentauth.CheckConstraints(map[string]json.RawMessage{"v": a}, map[string]json.RawMessage{"v": b})
	return err == nil && len(vs) == 0
}
