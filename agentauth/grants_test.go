package agentauth_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func grant(capability, status string, constraints map[string]string) agentauth.Grant {
	return agentauth.Grant{Capability: capability, Status: status, Constraints: raws(constraints)}
}

func expiring(g agentauth.Grant, at time.Time) agentauth.Grant {
	g.ExpiresAt = &at
	return g
}

func session(grants ...agentauth.Grant) *agentauth.Session {
	return &agentauth.Session{
		Agent: &agentauth.Agent{ID: "agt_1", HostID: "hst_1", Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive, Grants: grants},
		Host:  &agentauth.Host{ID: "hst_1", Status: agentcap.StatusActive, DefaultCapabilities: []string{"transfer"}},
	}
}

func withClaim(s *agentauth.Session, caps ...string) *agentauth.Session {
	if caps == nil {
		caps = []string{}
	}
	s.Claims.Capabilities = caps
	return s
}

func compactSession(s *agentauth.Session) *agentauth.Session {
	s.Compact = true
	return s
}

// outcome is the caller-visible part of an authorization error.
type outcome struct {
	Status int
	Code   agentcap.Code
	Fields map[string]any
}

func outcomeOf(t *testing.T, err error) *outcome {
	t.Helper()
	if err == nil {
		return nil
	}
	var ae *agentcap.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not a *agentcap.Error", err, err)
	}
	if ae.Message == "" {
		t.Errorf("error %v has no public message", err)
	}
	return &outcome{Status: ae.HTTPStatus(), Code: ae.Code, Fields: ae.Fields}
}

func notGranted(fields map[string]any) *outcome {
	return &outcome{http.StatusForbidden, agentcap.CodeCapabilityNotGranted, fields}
}

func violated(vs ...violation) *outcome {
	var out []agentcap.ConstraintViolation
	for _, v := range vs {
		out = append(out, agentcap.ConstraintViolation{Field: v.Field, Constraint: json.RawMessage(v.Constraint), Actual: json.RawMessage(v.Actual)})
	}
	return &outcome{http.StatusForbidden, agentcap.CodeConstraintViolated, map[string]any{"violations": out}}
}

func unknownOps(names ...string) *outcome {
	return &outcome{http.StatusBadRequest, agentcap.CodeUnknownConstraintOperator, map[string]any{"unknown_operators": names, "operators": names}}
}

func missingConstraints(fields ...string) *outcome {
	return notGranted(map[string]any{"missing_constraints": fields})
}

func transformed(fields ...string) *outcome {
	return &outcome{http.StatusBadRequest, agentcap.CodeInvalidRequest, map[string]any{"transformed_fields": fields}}
}

var internalError = &outcome{http.StatusInternalServerError, agentcap.CodeInternalError, nil}

// normalized builds Call.Normalized from a map; fields not in it are absent.
func normalized(m map[string]string) func(string) (json.RawMessage, bool) {
	return func(f string) (json.RawMessage, bool) {
		v, ok := m[f]
		return json.RawMessage(v), ok
	}
}

func TestAuthorizeCall(t *testing.T) {
	transferArgs := map[string]string{"amount": "500", "currency": `"USD"`, "destination_account": `"acc_456"`}
	scoped := map[string]string{"amount": `{"min":0,"max":1000}`, "currency": `{"in":["USD","EUR"]}`, "destination_account": `"acc_456"`}
	allRequired := []string{"destination_account", "amount", "currency"}

	tests := []struct {
		name     string
		session  *agentauth.Session
		required []string
		args     map[string]string
		norm     map[string]string // nil: no Normalized function
		want     *outcome
	}{
		// Capabilities claim.
		{name: "no claim, granted",
			session: session(grant("transfer", "active", nil)), args: transferArgs},
		{name: "claim lists the capability",
			session: withClaim(session(grant("transfer", "active", nil)), "read", "transfer"), args: transferArgs},
		{name: "claim without the capability refuses despite a grant and host defaults",
			session: withClaim(session(grant("transfer", "active", nil)), "read"), args: transferArgs, want: notGranted(nil)},
		{name: "empty claim allows nothing",
			session: withClaim(session(grant("transfer", "active", nil))), args: transferArgs, want: notGranted(nil)},

		// Effective grants.
		{name: "no grants", session: session(), want: notGranted(nil)},
		{name: "host default capabilities are no grant", session: session(grant("read", "active", nil)), want: notGranted(nil)},
		{name: "pending grant", session: session(grant("transfer", "pending", nil)), want: notGranted(nil)},
		{name: "denied grant", session: session(grant("transfer", "denied", nil)), want: notGranted(nil)},
		{name: "unknown grant status", session: session(grant("transfer", "granted", nil)), want: notGranted(nil)},
		{name: "expired grant",
			session: session(expiring(grant("transfer", "active", nil), now.Add(-time.Second))), want: notGranted(nil)},
		{name: "grant expiring now is expired",
			session: session(expiring(grant("transfer", "active", nil), now)), want: notGranted(nil)},
		{name: "grant expiring later",
			session: session(expiring(grant("transfer", "active", nil), now.Add(time.Second)))},
		{name: "capability names are exact",
			session: session(grant("Transfer", "active", nil), grant("transfer.extra", "active", nil)), want: notGranted(nil)},
		{name: "ineffective grants are not evaluated",
			session: session(grant("transfer", "denied", map[string]string{"amount": `{"gt":1}`}), grant("transfer", "active", scoped)),
			args:    map[string]string{"amount": "5000", "currency": `"USD"`, "destination_account": `"acc_456"`},
			want:    violated(violation{"amount", `{"max":1000}`, "5000"})},

		// Constraints.
		{name: "unconstrained grant allows any arguments",
			session: session(grant("transfer", "active", nil)), args: map[string]string{"amount": "1e9"}},
		{name: "empty constraints are unconstrained",
			session: session(grant("transfer", "active", map[string]string{})), args: map[string]string{"amount": "1e9"}},
		{name: "constraints satisfied",
			session: session(grant("transfer", "active", scoped)), args: transferArgs},
		{name: "every violation reported",
			session: session(grant("transfer", "active", scoped)),
			args:    map[string]string{"amount": "5000", "currency": `"GBP"`},
			want: violated(
				violation{"amount", `{"max":1000}`, "5000"},
				violation{"currency", `{"in":["USD","EUR"]}`, `"GBP"`},
				violation{"destination_account", `"acc_456"`, "null"})},
		{name: "no coercion",
			session: session(grant("transfer", "active", scoped)),
			args:    map[string]string{"amount": `"500"`, "currency": `"USD"`, "destination_account": `"acc_456"`},
			want:    violated(violation{"amount", `{"max":1000}`, `"500"`}, violation{"amount", `{"min":0}`, `"500"`})},

		// Several grants.
		{name: "one satisfied grant is enough",
			session: session(
				grant("transfer", "active", map[string]string{"amount": `{"max":10}`}),
				grant("transfer", "active", map[string]string{"amount": `{"max":1000}`})),
			args: transferArgs},
		{name: "fewest violations reported",
			session: session(
				grant("transfer", "active", map[string]string{"amount": `{"max":10}`, "currency": `"EUR"`}),
				grant("transfer", "active", map[string]string{"amount": `{"max":100}`})),
			args: transferArgs,
			want: violated(violation{"amount", `{"max":100}`, "500"})},
		{name: "ties go to the earlier grant",
			session: session(
				grant("transfer", "active", map[string]string{"currency": `"EUR"`}),
				grant("transfer", "active", map[string]string{"amount": `{"max":100}`})),
			args: transferArgs,
			want: violated(violation{"currency", `"EUR"`, `"USD"`})},
		{name: "unknown operator with a satisfied grant is allowed",
			session: session(
				grant("transfer", "active", map[string]string{"amount": `{"lt":1000}`}),
				grant("transfer", "active", scoped)),
			args: transferArgs},
		{name: "unknown operator reported before violations",
			session: session(
				grant("transfer", "active", map[string]string{"amount": `{"max":10}`}),
				grant("transfer", "active", map[string]string{"amount": `{"lt":1000,"gte":0}`, "currency": `{"regex":"^U"}`}),
				grant("transfer", "active", map[string]string{"amount": `{"approx":1}`})),
			args: transferArgs,
			want: unknownOps("gte", "lt", "regex")},
		{name: "malformed grant with a satisfied grant is allowed",
			session: session(
				grant("transfer", "active", map[string]string{"amount": `{"max":"1000"}`}),
				grant("transfer", "active", nil)),
			args: transferArgs},
		{name: "violations reported before a malformed grant",
			session: session(
				grant("transfer", "active", map[string]string{"amount": `{"max":"1000"}`}),
				grant("transfer", "active", map[string]string{"amount": `{"max":10}`})),
			args: transferArgs,
			want: violated(violation{"amount", `{"max":10}`, "500"})},
		{name: "missing constraints reported before a malformed grant",
			session: session(
				grant("transfer", "active", map[string]string{"amount": `{"max":[1000]}`}),
				grant("transfer", "active", nil)),
			required: []string{"amount"}, args: transferArgs,
			want: missingConstraints("amount")},
		{name: "malformed grant alone fails closed",
			session: session(grant("transfer", "active", map[string]string{"amount": `{"max":1000,}`})),
			args:    transferArgs, want: internalError},
		{name: "empty operator object fails closed",
			session: session(grant("transfer", "active", map[string]string{"amount": `{}`})),
			args:    transferArgs, want: internalError},

		// Required constraints.
		{name: "unconstrained grant lacks required constraints",
			session: session(grant("transfer", "active", nil)), required: allRequired, args: transferArgs,
			want: missingConstraints("amount", "currency", "destination_account")},
		{name: "partly constrained grant",
			session: session(grant("transfer", "active", map[string]string{"currency": `"USD"`})), required: allRequired, args: transferArgs,
			want: missingConstraints("amount", "destination_account")},
		{name: "fewest missing reported",
			session: session(
				grant("transfer", "active", nil),
				grant("transfer", "active", map[string]string{"amount": `{"max":1000}`, "currency": `"USD"`})),
			required: allRequired, args: transferArgs,
			want: missingConstraints("destination_account")},
		{name: "violations reported before missing constraints",
			session: session(
				grant("transfer", "active", nil),
				grant("transfer", "active", map[string]string{"amount": `{"max":100}`})),
			required: []string{"amount"}, args: transferArgs,
			want: violated(violation{"amount", `{"max":100}`, "500"})},
		{name: "fully scoped grant satisfies required constraints",
			session: session(grant("transfer", "active", nil), grant("transfer", "active", scoped)), required: allRequired, args: transferArgs},
		{name: "not_in counts as constraining",
			session: session(grant("transfer", "active", map[string]string{"amount": `{"not_in":[0]}`})), required: []string{"amount"}, args: transferArgs},
		{name: "repeated required fields",
			session: session(grant("transfer", "active", nil)), required: []string{"b", "a", "b"},
			want: missingConstraints("a", "b")},

		// Fields changed by decoding.
		{name: "same value in another form is not a change",
			session: session(grant("transfer", "active", scoped)),
			args:    map[string]string{"amount": "500.00", "currency": `"\u0055SD"`, "destination_account": `"acc_456"`},
			norm:    map[string]string{"amount": "500", "currency": `"USD"`, "destination_account": `"acc_456"`}},
		{name: "rounded number is a change",
			session: session(grant("transfer", "active", scoped)),
			args:    map[string]string{"amount": "999.99999999999999999", "currency": `"USD"`, "destination_account": `"acc_456"`},
			norm:    map[string]string{"amount": "1000", "currency": `"USD"`, "destination_account": `"acc_456"`},
			want:    transformed("amount")},
		{name: "every changed field, sorted",
			session: session(grant("transfer", "active", scoped)),
			args:    map[string]string{"amount": "1", "currency": `"USD"`, "destination_account": `"acc_456"`},
			norm:    map[string]string{"amount": "2", "currency": `"EUR"`, "destination_account": `"acc_456"`},
			want:    transformed("amount", "currency")},
		{name: "a value appearing after decoding is a change",
			session: session(grant("transfer", "active", map[string]string{"memo": `{"not_in":[""]}`})),
			args:    map[string]string{"amount": "1"},
			norm:    map[string]string{"amount": "1", "memo": `""`},
			want:    transformed("memo")},
		{name: "a value disappearing after decoding is a change",
			session: session(grant("transfer", "active", map[string]string{"memo": `{"not_in":["x"]}`})),
			args:    map[string]string{"memo": `"y"`},
			norm:    map[string]string{},
			want:    transformed("memo")},
		{name: "unconstrained fields may change",
			session: session(grant("transfer", "active", map[string]string{"currency": `"USD"`})),
			args:    map[string]string{"amount": "1.00000000000000000001", "currency": `"USD"`},
			norm:    map[string]string{"amount": "1", "currency": `"USD"`}},
		{name: "a satisfied grant without the changed field allows",
			session: session(
				grant("transfer", "active", map[string]string{"amount": `{"max":1000}`}),
				grant("transfer", "active", map[string]string{"currency": `"USD"`})),
			args: map[string]string{"amount": "999.99999999999999999", "currency": `"USD"`},
			norm: map[string]string{"amount": "1000", "currency": `"USD"`}},
		{name: "changes reported for the first satisfied grant",
			session: session(
				grant("transfer", "active", map[string]string{"amount": `{"max":10}`}),
				grant("transfer", "active", map[string]string{"amount": `{"max":1000}`, "currency": `"USD"`}),
				grant("transfer", "active", map[string]string{"currency": `{"in":["USD"]}`})),
			args: map[string]string{"amount": "999.99999999999999999", "currency": `"\u0055SD"`},
			norm: map[string]string{"amount": "1000", "currency": `"EUR"`},
			want: transformed("amount", "currency")},

		// Compact sessions.
		{name: "compact session without required constraints",
			session: compactSession(session(grant("transfer", "active", nil))), args: transferArgs},
		{name: "compact session fails closed on required constraints",
			session: compactSession(session(grant("transfer", "active", nil))), required: []string{"currency", "amount"}, args: transferArgs,
			want: missingConstraints("amount", "currency")},
		{name: "compact session fails closed even with constraints present",
			session: compactSession(session(grant("transfer", "active", scoped))), required: allRequired, args: transferArgs,
			want: missingConstraints("amount", "currency", "destination_account")},
		{name: "compact session still needs a grant",
			session: compactSession(session(grant("transfer", "pending", nil))), want: notGranted(nil)},
		{name: "compact session still checks the claim",
			session: compactSession(withClaim(session(grant("transfer", "active", nil)), "read")), want: notGranted(nil)},
		{name: "compact session enforces constraints it has",
			session: compactSession(session(grant("transfer", "active", map[string]string{"amount": `{"max":10}`}))), args: transferArgs,
			want: violated(violation{"amount", `{"max":10}`, "500"})},

		// Misuse.
		{name: "nil session", session: nil, want: internalError},
		{name: "session without agent", session: &agentauth.Session{}, want: internalError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			call := &auth.Call{Capability: "transfer", RequiredConstraints: tc.required, Arguments: raws(tc.args)}
			if tc.norm != nil {
				call.Normalized = normalized(tc.norm)
			}
			err := agentauth.AuthorizeCall(tc.session, call, now)
			got := outcomeOf(t, err)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("AuthorizeCall (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

// TestAuthorizeCallUnits calls a capability whose amount has its
// currency for unit: a grant bounding the amount is satisfied only when
// it constrains the currency too, since "at most 500" lets 500 GBP
// through when the caller picks the currency.
func TestAuthorizeCallUnits(t *testing.T) {
	units := map[string]string{"amount": "currency"}
	args := map[string]string{"amount": "500", "currency": `"GBP"`, "destination_account": `"acc_456"`}
	tests := []struct {
		name    string
		session *agentauth.Session
		want    *outcome
	}{
		{name: "amount bounded, currency free",
			session: session(grant("transfer", "active", map[string]string{"destination_account": `"acc_456"`, "amount": `{"max":500}`})),
			want:    missingConstraints("currency")},
		{name: "exact amount, currency free",
			session: session(grant("transfer", "active", map[string]string{"destination_account": `"acc_456"`, "amount": "500"})),
			want:    missingConstraints("currency")},
		{name: "amount and currency, another currency sent",
			session: session(grant("transfer", "active", map[string]string{"destination_account": `"acc_456"`, "amount": `{"max":500}`, "currency": `"USD"`})),
			want:    violated(violation{"currency", `"USD"`, `"GBP"`})},
		{name: "amount and currency",
			session: session(grant("transfer", "active", map[string]string{"destination_account": `"acc_456"`, "amount": `{"max":500}`, "currency": `{"in":["GBP","USD"]}`}))},
		{name: "amount free, currency free",
			session: session(grant("transfer", "active", map[string]string{"destination_account": `"acc_456"`}))},
		{name: "a grant without its unit beside one with it",
			session: session(grant("transfer", "active", map[string]string{"destination_account": `"acc_456"`, "amount": `{"max":500}`}),
				grant("transfer", "active", map[string]string{"destination_account": `"acc_456"`, "amount": `{"max":500}`, "currency": `"GBP"`}))},
		{name: "required and unit fields missing, sorted",
			session: session(grant("transfer", "active", map[string]string{"amount": `{"max":500}`})),
			want:    missingConstraints("currency", "destination_account")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			call := &auth.Call{Capability: "transfer", RequiredConstraints: []string{"destination_account"}, Units: units, Arguments: raws(args)}
			err := agentauth.AuthorizeCall(tc.session, call, now)
			if diff := cmp.Diff(tc.want, outcomeOf(t, err), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("AuthorizeCall (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

func TestAuthorizeCallCauses(t *testing.T) {
	// Unknown operators keep the typed error as the hidden cause.
	err := agentauth.AuthorizeCall(session(grant("transfer", "active", map[string]string{"amount": `{"lt":5}`})),
		&auth.Call{Capability: "transfer"}, now)
	var uo *agentauth.UnknownOperatorError
	if !errors.As(err, &uo) || uo.Field != "amount" {
		t.Errorf("AuthorizeCall error %v does not wrap the UnknownOperatorError", err)
	}
	// A malformed grant's details stay hidden in the cause.
	err = agentauth.AuthorizeCall(session(grant("transfer", "active", map[string]string{"amount": `{"min":"0"}`})),
		&auth.Call{Capability: "transfer"}, now)
	var ce *agentauth.ConstraintError
	var ae *agentcap.Error
	if !errors.As(err, &ce) || !errors.As(err, &ae) || ae.Message != "internal error" {
		t.Errorf("AuthorizeCall error %v: want a redacted internal error wrapping the ConstraintError", err)
	}
}

func TestAuthorizeCallEnvelopeJSON(t *testing.T) {
	err := agentauth.AuthorizeCall(session(grant("transfer", "active", map[string]string{"amount": `{"max": 1000}`})),
		&auth.Call{Capability: "transfer", Arguments: raws(map[string]string{"amount": "5000"})}, now)
	var ae *agentcap.Error
	if !errors.As(err, &ae) {
		t.Fatal(err)
	}
	got, jerr := json.Marshal(ae.Fields)
	if jerr != nil {
		t.Fatal(jerr)
	}
	if want := `{"violations":[{"field":"amount","constraint":{"max":1000},"actual":5000}]}`; string(got) != want {
		t.Errorf("envelope members\n got %s\nwant %s", got, want)
	}
}

func TestGrantStatus(t *testing.T) {
	tests := []struct {
		name    string
		session *agentauth.Session
		want    string
	}{
		{"active grant", session(grant("transfer", "active", nil)), "granted"},
		{"constrained grant", session(grant("transfer", "active", map[string]string{"amount": `{"max":1}`})), "granted"},
		{"no grant", session(grant("read", "active", nil)), "not_granted"},
		{"pending", session(grant("transfer", "pending", nil)), "not_granted"},
		{"denied", session(grant("transfer", "denied", nil)), "not_granted"},
		{"expired", session(expiring(grant("transfer", "active", nil), now)), "not_granted"},
		{"one of several", session(grant("transfer", "denied", nil), grant("transfer", "active", nil)), "granted"},
		{"claim allows", withClaim(session(grant("transfer", "active", nil)), "transfer"), "granted"},
		{"claim excludes", withClaim(session(grant("transfer", "active", nil)), "read"), "not_granted"},
		{"compact", compactSession(session(grant("transfer", "active", nil))), "granted"},
		{"nil session", nil, "not_granted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := agentauth.GrantStatus(tc.session, "transfer", now); got != tc.want {
				t.Errorf("GrantStatus = %q, want %q", got, tc.want)
			}
		})
	}
}

func ExampleAuthorizeCall() {
	s := &agentauth.Session{
		Agent: &agentauth.Agent{ID: "agt_1", Status: agentcap.StatusActive, Grants: []agentauth.Grant{{
			Capability: "transfer_money",
			Status:     agentcap.StatusActive,
			Constraints: map[string]json.RawMessage{
				"amount":   json.RawMessage(`{"min": 0, "max": 1000}`),
				"currency": json.RawMessage(`{"in": ["USD", "EUR"]}`),
			},
		}}},
	}
	call := &auth.Call{
		Capability:          "transfer_money",
		RequiredConstraints: []string{"amount"},
		Arguments: map[string]json.RawMessage{
			"amount":   json.RawMessage(`5000`),
			"currency": json.RawMessage(`"USD"`),
		},
	}
	err := agentauth.AuthorizeCall(s, call, time.Now())
	var ae *agentcap.Error
	if errors.As(err, &ae) {
		body, _ := json.Marshal(ae.Fields["violations"])
		fmt.Println(ae.HTTPStatus(), ae.Code, string(body))
	}
	// Output:
	// 403 constraint_violated [{"field":"amount","constraint":{"max":1000},"actual":5000}]
}

func ExampleCheckConstraints() {
	constraints := map[string]json.RawMessage{
		"destination_account": json.RawMessage(`"acc_456"`),
		"amount":              json.RawMessage(`{"min": 0, "max": 1000}`),
		"currency":            json.RawMessage(`{"in": ["USD", "EUR"]}`),
	}
	args := map[string]json.RawMessage{
		"destination_account": json.RawMessage(`"acc_456"`),
		"amount":              json.RawMessage(`1000.00`),
		"currency":            json.RawMessage(`"usd"`),
	}
	violations, err := agentauth.CheckConstraints(constraints, args)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range violations {
		fmt.Printf("%s: %s, got %s\n", v.Field, v.Constraint, v.Actual)
	}
	// Output:
	// currency: {"in":["USD","EUR"]}, got "usd"
}

func ExampleValidateConstraints() {
	err := agentauth.ValidateConstraints(map[string]json.RawMessage{
		"amount": json.RawMessage(`{"max": 1000, "lt": 2000}`),
	})
	var uo *agentauth.UnknownOperatorError
	if errors.As(err, &uo) {
		fmt.Println(uo.Field, uo.Operators)
	}
	// Output:
	// amount [lt]
}

func ExampleGrantStatus() {
	s := &agentauth.Session{Agent: &agentauth.Agent{ID: "agt_1", Grants: []agentauth.Grant{
		{Capability: "read_balance", Status: agentcap.StatusActive},
		{Capability: "transfer_money", Status: agentcap.StatusPending},
	}}}
	now := time.Now()
	fmt.Println(agentauth.GrantStatus(s, "read_balance", now))
	fmt.Println(agentauth.GrantStatus(s, "transfer_money", now))
	// Output:
	// granted
	// not_granted
}
