package agentauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
)

// AuthorizeCall decides whether s may run call at now. It returns nil or a
// *agentcap.Error carrying the protocol's status and code. The checks run
// in this order:
//
//  1. The token's capabilities claim, when present, must list the
//     capability (403 capability_not_granted). A host's default
//     capabilities are no exception.
//  2. The agent must hold at least one effective grant (active and
//     unexpired) for it (403 capability_not_granted).
//  3. A compact session (from remote introspection) carries no
//     constraints, so a capability with required constraints is refused
//     (403 capability_not_granted with missing_constraints): nothing
//     proves the fields are constrained.
//  4. Each effective grant is evaluated. A grant is satisfied when its
//     constraints are well formed, the arguments violate none of them, and
//     it constrains every required field, and the unit field of every
//     field it constrains that has one (auth.Call.Units). One satisfied grant
//     is enough.
//  5. The arguments that run must be the ones that were checked: for the
//     fields a satisfied grant constrains, the raw value and the decoded
//     value must be the same JSON value. If every satisfied grant has such
//     a changed field, the call fails with 400 invalid_request and
//     transformed_fields, listing those of the first satisfied grant.
//
// When no grant is satisfied, one failure is reported, chosen by kind in
// this order and, within a kind, from the first grant in the agent's grant
// order unless stated otherwise:
//
//   - unknown operators: 400 unknown_constraint_operator with the unknown
//     names, sorted, in both unknown_operators (the protocol's member) and
//     operators (the reference server's member), since the protocol
//     requires them to be surfaced;
//   - violations: 403 constraint_violated with every violation of the
//     grant with the fewest violations (ties: the earlier grant), which
//     lets the agent correct its arguments;
//   - missing required constraints: 403 capability_not_granted with
//     missing_constraints, sorted, of the grant missing the fewest (ties:
//     the earlier grant);
//   - malformed constraints (see ConstraintError): 500 internal_error, as
//     the grant is broken on the server side; the details stay in the
//     hidden cause.
//
// A grant with no constraints is unconstrained, as the protocol says, so a
// SessionSource that knows or suspects a grant is constrained but cannot
// supply its constraints must not present it as a plain grant: it marks
// the session Compact or leaves the grant out. Under a compact session a
// capability without required constraints runs on grants whose scope is
// unknown; give every capability whose grants may be scoped required
// constraints, so that such sessions fail closed for it.
func AuthorizeCall(s *Session, call *auth.Call, now time.Time) error {
	if s == nil || s.Agent == nil {
		return agentcap.NewError(agentcap.CodeInternalError, "internal error").
			WithCause(errors.New("agentauth: AuthorizeCall without an agent session"))
	}
	if s.Claims.Capabilities != nil && !slices.Contains(s.Claims.Capabilities, call.Capability) {
		return agentcap.NewError(agentcap.CodeCapabilityNotGranted,
			fmt.Sprintf("the token's capabilities claim does not include %q", call.Capability))
	}

	var grants []*Grant
	for i := range s.Agent.Grants {
		g := &s.Agent.Grants[i]
		if g.Capability == call.Capability && g.Effective(now) {
			grants = append(grants, g)
		}
	}
	if len(grants) == 0 {
		return agentcap.NewError(agentcap.CodeCapabilityNotGranted,
			fmt.Sprintf("the agent holds no active grant for %q", call.Capability))
	}

	required := sortedUnique(call.RequiredConstraints)
	if s.Compact && len(required) > 0 {
		return missingConstraintsError(call.Capability, required).
			WithCause(errors.New("agentauth: compact session grants carry no constraints"))
	}

	var (
		unknown        *grantFailure
		malformed      *grantFailure
		violated       *grantFailure
		missing        *grantFailure
		firstSatisfied *Grant
		firstChanged   []string
	)
	for _, g := range grants {
		violations, err := CheckConstraints(g.Constraints, call.Arguments)
		if err != nil {
			var uo *UnknownOperatorError
			if errors.As(err, &uo) {
				if unknown == nil {
					unknown = &grantFailure{err: err, unknownOps: unknownOperators(err)}
				}
			} else if malformed == nil {
				malformed = &grantFailure{err: err}
			}
			continue
		}
		if len(violations) > 0 {
			if violated == nil || len(violations) < len(violated.violations) {
				violated = &grantFailure{violations: violations}
			}
			continue
		}
		lacks := MissingConstraints(g.Constraints, required, call.Units)
		if len(lacks) > 0 {
			if missing == nil || len(lacks) < len(missing.missing) {
				missing = &grantFailure{missing: lacks}
			}
			continue
		}
		changed := transformedFields(g, call)
		if len(changed) == 0 {
			return nil
		}
		if firstSatisfied == nil {
			firstSatisfied, firstChanged = g, changed
		}
	}

	switch {
	case firstSatisfied != nil:
		return agentcap.NewError(agentcap.CodeInvalidRequest,
			"constrained arguments changed when decoded; send them in the form the capability's input uses").
			With("transformed_fields", firstChanged)
	case unknown != nil:
		return agentcap.NewError(agentcap.CodeUnknownConstraintOperator,
			"a grant for this capability holds constraint operators this server does not know").
			With("unknown_operators", unknown.unknownOps).
			With("operators", slices.Clone(unknown.unknownOps)).
			WithCause(unknown.err)
	case violated != nil:
		return agentcap.NewError(agentcap.CodeConstraintViolated,
			"the arguments violate the grant's constraints").
			With("violations", violated.violations)
	case missing != nil:
		return missingConstraintsError(call.Capability, missing.missing)
	default:
		return agentcap.NewError(agentcap.CodeInternalError, "internal error").
			WithCause(malformed.err)
	}
}

// GrantStatus reports "granted" or "not_granted" for the capability
// listing: granted when the token's capabilities claim (if any) lists the
// capability and the agent holds an effective grant for it, that is, when
// AuthorizeCall would get past its grant checks for arguments that satisfy
// the constraints.
func GrantStatus(s *Session, capability string, now time.Time) string {
	if s == nil || s.Agent == nil {
		return agentcap.GrantStatusNotGranted
	}
	if s.Claims.Capabilities != nil && !slices.Contains(s.Claims.Capabilities, capability) {
		return agentcap.GrantStatusNotGranted
	}
	for _, g := range s.Agent.Grants {
		if g.Capability == capability && g.Effective(now) {
			return agentcap.GrantStatusGranted
		}
	}
	return agentcap.GrantStatusNotGranted
}

// MissingConstraints returns, sorted, the fields a grant with
// constraints lacks a constraint on: the required ones, and the unit
// field of each constrained field that has one in units (see auth.Call).
func MissingConstraints(constraints map[string]json.RawMessage, required []string, units map[string]string) []string {
	var lacks []string
	for _, f := range required {
		if _, ok := constraints[f]; !ok {
			lacks = append(lacks, f)
		}
	}
	for f, unit := range units {
		if _, bounded := constraints[f]; !bounded {
			continue
		}
		if _, ok := constraints[unit]; !ok {
			lacks = append(lacks, unit)
		}
	}
	return sortedUnique(lacks)
}

type grantFailure struct {
	err        error
	unknownOps []string
	violations []agentcap.ConstraintViolation
	missing    []string
}

func missingConstraintsError(capability string, missing []string) *agentcap.Error {
	return agentcap.NewError(agentcap.CodeCapabilityNotGranted,
		fmt.Sprintf("no grant for %q constrains every field the capability requires", capability)).
		With("missing_constraints", missing)
}

// unknownOperators collects the unknown names of every field of one
// grant, sorted and without repeats.
func unknownOperators(err error) []string {
	var names []string
	var collect func(error)
	collect = func(err error) {
		var uo *UnknownOperatorError
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				collect(e)
			}
		} else if errors.As(err, &uo) {
			names = append(names, uo.Operators...)
		}
	}
	collect(err)
	return sortedUnique(names)
}

// transformedFields lists, sorted, the fields g constrains whose decoded
// value differs from the raw one.
func transformedFields(g *Grant, call *auth.Call) []string {
	if call.Normalized == nil || len(g.Constraints) == 0 {
		return nil
	}
	var changed []string
	for f := range g.Constraints {
		raw, hasRaw := call.Arguments[f]
		norm, hasNorm := call.Normalized(f)
		// A field that was missing when checked but has a value after
		// decoding (a default, for example) changed too: not_in passed on
		// absence, not on that value.
		if hasRaw != hasNorm || (hasRaw && !bytes.Equal(raw, norm) && !equalRawJSON(raw, norm)) {
			changed = append(changed, f)
		}
	}
	slices.Sort(changed)
	return changed
}

func sortedUnique(names []string) []string {
	if len(names) == 0 {
		return nil
	}
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}
