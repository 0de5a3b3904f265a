package agentauth_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
)

// violation is a ConstraintViolation with its raw members as strings, for
// readable tables.
type violation struct{ Field, Constraint, Actual string }

func raws(m map[string]string) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = json.RawMessage(v)
	}
	return out
}

func simplify(vs []agentcap.ConstraintViolation) []violation {
	var out []violation
	for _, v := range vs {
		out = append(out, violation{v.Field, string(v.Constraint), string(v.Actual)})
	}
	return out
}

// check evaluates a single constraint on field "x".
func check(t *testing.T, constraint string, arg *string) []violation {
	t.Helper()
	args := map[string]string{}
	if arg != nil {
		args["x"] = *arg
	}
	vs, err := agentauth.CheckConstraints(raws(map[string]string{"x": constraint}), raws(args))
	if err != nil {
		t.Fatalf("CheckConstraints(%s, %v): unexpected error %v", constraint, args, err)
	}
	return simplify(vs)
}

func arg(s string) *string { return &s }

// missing marks an argument that is not sent.
var missing *string

type opCase struct {
	name       string
	constraint string
	arg        *string
	// fails lists the failed parts: "exact", or operator names.
	fails []string
}

func runOpCases(t *testing.T, cases []opCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := check(t, tc.constraint, tc.arg)
			var want []violation
			actual := "null"
			if tc.arg != nil {
				actual = compact(t, *tc.arg)
			}
			for _, f := range tc.fails {
				c := compact(t, tc.constraint)
				if f != "exact" {
					var ops map[string]json.RawMessage
					if err := json.Unmarshal([]byte(tc.constraint), &ops); err != nil {
						t.Fatal(err)
					}
					c = `{"` + f + `":` + compact(t, string(ops[f])) + `}`
				}
				want = append(want, violation{"x", c, actual})
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("test JSON %q: %v", s, err)
	}
	return b.String()
}

func TestCheckConstraintsExact(t *testing.T) {
	runOpCases(t, []opCase{
		{"string equal", `"acc_456"`, arg(`"acc_456"`), nil},
		{"string differs", `"acc_456"`, arg(`"acc_457"`), []string{"exact"}},
		{"string escapes decode", `"A\u00e9"`, arg(`"\u0041é"`), nil},
		{"string case matters", `"usd"`, arg(`"USD"`), []string{"exact"}},
		{"lone surrogate is not U+FFFD", `"\ud800"`, arg(`"\ufffd"`), []string{"exact"}},
		{"surrogate pair equals the character", `"\ud83d\ude00"`, arg(`"😀"`), nil},
		{"string is not number", `"5"`, arg(`5`), []string{"exact"}},
		{"number is not string", `5`, arg(`"5"`), []string{"exact"}},
		{"number equal", `5`, arg(`5`), nil},
		{"number equals its decimal form", `5`, arg(`5.0`), nil},
		{"number equals its exponent form", `5`, arg(`0.5e1`), nil},
		{"number 50e-1", `5`, arg(`50E-1`), nil},
		{"negative zero equals zero", `0`, arg(`-0.0`), nil},
		{"tiny difference counts", `5`, arg(`5.0000000000000000000001`), []string{"exact"}},
		{"beyond float64 precision", `9007199254740993`, arg(`9007199254740992`), []string{"exact"}},
		{"bool equal", `true`, arg(`true`), nil},
		{"bool is not string", `true`, arg(`"true"`), []string{"exact"}},
		{"bool is not number", `false`, arg(`0`), []string{"exact"}},
		{"null equals null", `null`, arg(`null`), nil},
		{"null is not missing", `null`, missing, []string{"exact"}},
		{"null is not false", `null`, arg(`false`), []string{"exact"}},
		{"missing fails", `"acc_456"`, missing, []string{"exact"}},
		{"array in order", `[1,"a",[true]]`, arg(` [ 1.0 , "a", [true] ] `), nil},
		{"array order matters", `[1,2]`, arg(`[2,1]`), []string{"exact"}},
		{"array length matters", `[1,2]`, arg(`[1,2,2]`), []string{"exact"}},
		{"array is not object", `[]`, arg(`{}`), []string{"exact"}},
	})
}

func TestCheckConstraintsEq(t *testing.T) {
	runOpCases(t, []opCase{
		{"equal", `{"eq":"USD"}`, arg(`"USD"`), nil},
		{"differs", `{"eq":"USD"}`, arg(`"EUR"`), []string{"eq"}},
		{"missing", `{"eq":"USD"}`, missing, []string{"eq"}},
		{"no coercion", `{"eq":1}`, arg(`true`), []string{"eq"}},
		{"decimal value", `{"eq":0.3}`, arg(`0.30`), nil},
		{"decimal rounding does not matter", `{"eq":0.3}`, arg(`0.30000000000000001`), []string{"eq"}},
		{"object regardless of key order", `{"eq":{"city":"Paris","zip":"75001","geo":{"lat":48.85,"lng":2.35}}}`,
			arg(`{"geo":{"lng":2.350,"lat":48.85},"zip":"75001","city":"Paris"}`), nil},
		{"object nested value differs", `{"eq":{"city":"Paris","geo":{"lat":48.85}}}`,
			arg(`{"city":"Paris","geo":{"lat":48.86}}`), []string{"eq"}},
		{"object extra member", `{"eq":{"city":"Paris"}}`, arg(`{"city":"Paris","zip":"75001"}`), []string{"eq"}},
		{"object missing member", `{"eq":{"city":"Paris","zip":"75001"}}`, arg(`{"city":"Paris"}`), []string{"eq"}},
		{"object member null is not absent", `{"eq":{"city":"Paris","zip":null}}`, arg(`{"city":"Paris"}`), []string{"eq"}},
		{"object in array", `{"eq":[{"a":1,"b":2}]}`, arg(`[{"b":2,"a":1}]`), nil},
		{"null", `{"eq":null}`, arg(`null`), nil},
	})
}

func TestCheckConstraintsMinMax(t *testing.T) {
	runOpCases(t, []opCase{
		{"min inclusive", `{"min":0}`, arg(`0`), nil},
		{"min negative zero", `{"min":0}`, arg(`-0`), nil},
		{"min just below", `{"min":0}`, arg(`-0.0000001`), []string{"min"}},
		{"min above", `{"min":0}`, arg(`12.5`), nil},
		{"min negative bound", `{"min":-10}`, arg(`-11`), []string{"min"}},
		{"min negative bound ok", `{"min":-10}`, arg(`-9.5`), nil},
		{"max inclusive", `{"max":1000}`, arg(`1000`), nil},
		{"max exponent form", `{"max":1000}`, arg(`1e3`), nil},
		{"max exponent form 2", `{"max":1000}`, arg(`0.1E+4`), nil},
		{"max just above", `{"max":1000}`, arg(`1000.0000000000000001`), []string{"max"}},
		{"max above", `{"max":1000}`, arg(`5000`), []string{"max"}},
		{"max decimal bound", `{"max":0.3}`, arg(`0.30000000000000001`), []string{"max"}},
		{"min decimal bound", `{"min":0.3}`, arg(`0.29999999999999999`), []string{"min"}},
		{"max big integer", `{"max":9007199254740993}`, arg(`9007199254740994`), []string{"max"}},
		{"max big integer ok", `{"max":9007199254740993}`, arg(`9007199254740993.0`), nil},
		{"max huge", `{"max":123456789012345678901234567890}`, arg(`123456789012345678901234567891`), []string{"max"}},
		{"max huge exponent", `{"max":1e400}`, arg(`1e401`), []string{"max"}},
		{"min tiny exponent", `{"min":1e-400}`, arg(`1e-401`), []string{"min"}},
		{"enormous exponents compare exactly", `{"max":1e99999999999999999999}`, arg(`1e100000000000000000000`), []string{"max"}},
		{"enormous exponents equal", `{"max":10e99999999999999999999}`, arg(`1e100000000000000000000`), nil},
		{"enormous negative exponents", `{"min":1e-99999999999999999999}`, arg(`1e-100000000000000000000`), []string{"min"}},
		{"enormous exponent against small", `{"max":5}`, arg(`1e-99999999999999999999`), nil},
		{"negative enormous against small", `{"min":-5}`, arg(`-1e99999999999999999999`), []string{"min"}},
		{"string is not a number", `{"max":1000}`, arg(`"5"`), []string{"max"}},
		{"bool is not a number", `{"min":0}`, arg(`true`), []string{"min"}},
		{"null is not a number", `{"min":0}`, arg(`null`), []string{"min"}},
		{"array is not a number", `{"min":0}`, arg(`[1]`), []string{"min"}},
		{"missing fails min", `{"min":0}`, missing, []string{"min"}},
		{"missing fails max", `{"max":0}`, missing, []string{"max"}},
		{"range inside", `{"min":0,"max":1000}`, arg(`500`), nil},
		{"range above", `{"min":0,"max":1000}`, arg(`1001`), []string{"max"}},
		{"range below", `{"min":0,"max":1000}`, arg(`-1`), []string{"min"}},
		{"range wrong type fails both", `{"min":0,"max":1000}`, arg(`"500"`), []string{"max", "min"}},
		{"range missing fails both", `{"max":1000,"min":0}`, missing, []string{"max", "min"}},
		{"empty range", `{"min":10,"max":5}`, arg(`7`), []string{"max", "min"}},
	})
}

func TestCheckConstraintsInNotIn(t *testing.T) {
	runOpCases(t, []opCase{
		{"in member", `{"in":["USD","EUR"]}`, arg(`"EUR"`), nil},
		{"in not member", `{"in":["USD","EUR"]}`, arg(`"GBP"`), []string{"in"}},
		{"in missing", `{"in":["USD"]}`, missing, []string{"in"}},
		{"in no coercion", `{"in":["1","2"]}`, arg(`1`), []string{"in"}},
		{"in no coercion 2", `{"in":[1,2]}`, arg(`"1"`), []string{"in"}},
		{"in number value", `{"in":[1,2.5]}`, arg(`2.50`), nil},
		{"in rounding does not matter", `{"in":[0.1]}`, arg(`0.1000000000000000055511151231257827`), []string{"in"}},
		{"in array is not membership of its items", `{"in":["USD"]}`, arg(`["USD"]`), []string{"in"}},
		{"in array value", `{"in":[["USD"]]}`, arg(`["USD"]`), nil},
		{"in object value", `{"in":[{"a":1,"b":[1,2]}]}`, arg(`{"b":[1,2.0],"a":1.0}`), nil},
		{"in object value differs", `{"in":[{"a":1}]}`, arg(`{"a":"1"}`), []string{"in"}},
		{"in null", `{"in":[null]}`, arg(`null`), nil},
		{"in empty list", `{"in":[]}`, arg(`"USD"`), []string{"in"}},
		{"not_in missing passes", `{"not_in":["x"]}`, missing, nil},
		{"not_in member", `{"not_in":["acc_1","acc_2"]}`, arg(`"acc_2"`), []string{"not_in"}},
		{"not_in other", `{"not_in":["acc_1","acc_2"]}`, arg(`"acc_3"`), nil},
		{"not_in number value", `{"not_in":[100]}`, arg(`1e2`), []string{"not_in"}},
		{"not_in no coercion", `{"not_in":[100]}`, arg(`"100"`), nil},
		{"not_in null", `{"not_in":[null]}`, arg(`null`), []string{"not_in"}},
		{"not_in object", `{"not_in":[{"k":"v","n":1}]}`, arg(`{"n":1.0,"k":"v"}`), []string{"not_in"}},
		{"not_in empty list", `{"not_in":[]}`, arg(`"x"`), nil},
		{"combined all pass", `{"in":[1,2,3],"not_in":[2],"min":1,"max":3,"eq":3}`, arg(`3`), nil},
		{"combined several fail", `{"in":[1,2,3],"not_in":[2],"min":1,"max":3,"eq":3}`, arg(`2`), []string{"eq", "not_in"}},
		{"combined all fail", `{"eq":1,"in":[1],"max":1,"min":8,"not_in":[7]}`, arg(`7`), []string{"eq", "in", "max", "min", "not_in"}},
	})
}

func TestCheckConstraintsSeveralFields(t *testing.T) {
	constraints := raws(map[string]string{
		"destination_account": `"acc_456"`,
		"amount":              `{ "min": 0, "max": 1000 }`,
		"currency":            `{"in": ["USD", "EUR"]}`,
		"memo":                `{"not_in": [""]}`,
	})
	tests := []struct {
		name string
		args map[string]string
		want []violation
	}{
		{"all good", map[string]string{"destination_account": `"acc_456"`, "amount": `500`, "currency": `"USD"`}, nil},
		{"every failure, sorted by field", map[string]string{"amount": `5000`, "currency": `"GBP"`, "memo": `""`}, []violation{
			{"amount", `{"max":1000}`, `5000`},
			{"currency", `{"in":["USD","EUR"]}`, `"GBP"`},
			{"destination_account", `"acc_456"`, `null`},
			{"memo", `{"not_in":[""]}`, `""`},
		}},
		{"case-variant key does not count", map[string]string{"destination_account": `"acc_456"`, "Amount": `5`, "currency": `"USD"`}, []violation{
			{"amount", `{"max":1000}`, `null`},
			{"amount", `{"min":0}`, `null`},
		}},
		{"actual is compacted", map[string]string{"destination_account": `"acc_456"`, "amount": `5`, "currency": ` [ "USD" ] `}, []violation{
			{"currency", `{"in":["USD","EUR"]}`, `["USD"]`},
		}},
		{"no arguments at all", nil, []violation{
			{"amount", `{"max":1000}`, `null`},
			{"amount", `{"min":0}`, `null`},
			{"currency", `{"in":["USD","EUR"]}`, `null`},
			{"destination_account", `"acc_456"`, `null`},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vs, err := agentauth.CheckConstraints(constraints, raws(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, simplify(vs)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckConstraintsNoConstraints(t *testing.T) {
	for _, c := range []map[string]json.RawMessage{nil, {}} {
		vs, err := agentauth.CheckConstraints(c, raws(map[string]string{"amount": "5"}))
		if vs != nil || err != nil {
			t.Errorf("CheckConstraints(%v) = %v, %v; want nil, nil", c, vs, err)
		}
	}
}

func TestCheckConstraintsUnreadableArguments(t *testing.T) {
	deep := strings.Repeat("[", agentauth.MaxConstraintDepth+1) + strings.Repeat("]", agentauth.MaxConstraintDepth+1)
	shallow := strings.Repeat("[", agentauth.MaxConstraintDepth) + strings.Repeat("]", agentauth.MaxConstraintDepth)
	tests := []struct {
		name, constraint, arg string
		want                  []violation
	}{
		{"too deep fails not_in", `{"not_in":[1]}`, deep, []violation{{"x", `{"not_in":[1]}`, `null`}}},
		{"too deep fails eq", `{"eq":1}`, deep, []violation{{"x", `{"eq":1}`, `null`}}},
		{"at the limit is read", `{"not_in":[1]}`, shallow, nil},
		{"invalid JSON fails not_in", `{"not_in":[1]}`, `{"a":`, []violation{{"x", `{"not_in":[1]}`, `null`}}},
		{"duplicate keys fail not_in", `{"not_in":[1]}`, `{"a":1,"a":2}`, []violation{{"x", `{"not_in":[1]}`, `null`}}},
		{"invalid UTF-8 fails exact", `"a"`, "\"\xff\"", []violation{{"x", `"a"`, `null`}}},
		{"empty value fails", `{"not_in":[1]}`, ``, []violation{{"x", `{"not_in":[1]}`, `null`}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, check(t, tc.constraint, &tc.arg)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestViolationJSON(t *testing.T) {
	vs, err := agentauth.CheckConstraints(
		raws(map[string]string{"amount": `{"max": 1000}`, "currency": `{"in":["USD"]}`}),
		raws(map[string]string{"amount": `5000`, "currency": `"GBP"`}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(vs)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"field":"amount","constraint":{"max":1000},"actual":5000},{"field":"currency","constraint":{"in":["USD"]},"actual":"GBP"}]`
	if string(got) != want {
		t.Errorf("violations JSON\n got %s\nwant %s", got, want)
	}
}

// problem is a simplified UnknownOperatorError or ConstraintError.
type problem struct {
	Field   string
	Unknown []string
	Reason  string // a regular expression for ConstraintError.Reason
}

func problems(t *testing.T, err error) []problem {
	t.Helper()
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else if err != nil {
		errs = []error{err}
	}
	var out []problem
	for _, e := range errs {
		var uo *agentauth.UnknownOperatorError
		var ce *agentauth.ConstraintError
		switch {
		case errors.As(e, &uo):
			out = append(out, problem{Field: uo.Field, Unknown: uo.Operators})
		case errors.As(e, &ce):
			out = append(out, problem{Field: ce.Field, Reason: ce.Reason})
		default:
			t.Fatalf("unexpected error type %T: %v", e, e)
		}
	}
	return out
}

func TestMalformedConstraints(t *testing.T) {
	deep := strings.Repeat(`{"eq":`, 1) + strings.Repeat("[", agentauth.MaxConstraintDepth) + strings.Repeat("]", agentauth.MaxConstraintDepth) + "}"
	tests := []struct {
		name        string
		constraints map[string]string
		want        []problem
	}{
		{"unknown operator", map[string]string{"amount": `{"gt":5}`}, []problem{{Field: "amount", Unknown: []string{"gt"}}}},
		{"unknown with known", map[string]string{"amount": `{"min":1,"lte":2,"abc":3}`}, []problem{{Field: "amount", Unknown: []string{"abc", "lte"}}}},
		{"unknown before malformed operands", map[string]string{"amount": `{"min":"1","gt":2,"in":3}`}, []problem{{Field: "amount", Unknown: []string{"gt"}}}},
		{"object without operators is operators", map[string]string{"address": `{"city":"Paris"}`}, []problem{{Field: "address", Unknown: []string{"city"}}}},
		{"operator names are case-sensitive", map[string]string{"amount": `{"MAX":5}`}, []problem{{Field: "amount", Unknown: []string{"MAX"}}}},
		{"empty operator object", map[string]string{"amount": `{}`}, []problem{{Field: "amount", Reason: "empty operator object"}}},
		{"min not a number", map[string]string{"amount": `{"min":"5"}`}, []problem{{Field: "amount", Reason: "min must be a number"}}},
		{"max not a number", map[string]string{"amount": `{"max":null}`}, []problem{{Field: "amount", Reason: "max must be a number"}}},
		{"in not an array", map[string]string{"currency": `{"in":"USD"}`}, []problem{{Field: "currency", Reason: "in must be an array"}}},
		{"not_in not an array", map[string]string{"currency": `{"not_in":{"USD":true}}`}, []problem{{Field: "currency", Reason: "not_in must be an array"}}},
		{"invalid JSON", map[string]string{"amount": `{"max":}`}, []problem{{Field: "amount", Reason: "invalid JSON at offset 7"}}},
		{"empty raw value", map[string]string{"amount": ``}, []problem{{Field: "amount", Reason: "invalid JSON at offset 0"}}},
		{"trailing data", map[string]string{"amount": `5 6`}, []problem{{Field: "amount", Reason: "after the value"}}},
		{"leading zero", map[string]string{"amount": `{"max":01}`}, []problem{{Field: "amount", Reason: "invalid JSON"}}},
		{"duplicate operator", map[string]string{"amount": `{"max":1,"max":1000}`}, []problem{{Field: "amount", Reason: "duplicate key"}}},
		{"duplicate nested key", map[string]string{"a": `{"eq":{"k":1,"k":1}}`}, []problem{{Field: "a", Reason: "duplicate key"}}},
		{"too deep", map[string]string{"a": deep}, []problem{{Field: "a", Reason: "nesting too deep"}}},
		{"invalid UTF-8", map[string]string{"a": "\"\xc3\x28\""}, []problem{{Field: "a", Reason: "invalid UTF-8"}}},
		{"control character", map[string]string{"a": "\"a\tb\""}, []problem{{Field: "a", Reason: "control character"}}},
		{"bad escape", map[string]string{"a": `"\x41"`}, []problem{{Field: "a", Reason: "invalid escape"}}},
		{"bad unicode escape", map[string]string{"a": `"\u12G4"`}, []problem{{Field: "a", Reason: `invalid \\u escape`}}},
		{"every field, sorted", map[string]string{"z": `{"gt":1}`, "a": `{"min":"x"}`, "m": `5`, "b": `{"regex":"x","in":[]}`}, []problem{
			{Field: "a", Reason: "min must be a number"},
			{Field: "b", Unknown: []string{"regex"}},
			{Field: "z", Unknown: []string{"gt"}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := raws(tc.constraints)
			validateErr := agentauth.ValidateConstraints(c)
			vs, checkErr := agentauth.CheckConstraints(c, raws(map[string]string{"amount": "5", "a": `"x"`}))
			if vs != nil {
				t.Errorf("CheckConstraints returned violations %v with a malformed constraint", vs)
			}
			if validateErr == nil || checkErr == nil {
				t.Fatalf("ValidateConstraints = %v, CheckConstraints = %v; want errors", validateErr, checkErr)
			}
			if validateErr.Error() != checkErr.Error() {
				t.Errorf("ValidateConstraints and CheckConstraints disagree:\n%v\n%v", validateErr, checkErr)
			}
			got := problems(t, checkErr)
			if len(got) != len(tc.want) {
				t.Fatalf("problems = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				w, g := tc.want[i], got[i]
				if w.Field != g.Field || !slices.Equal(w.Unknown, g.Unknown) || !regexp.MustCompile(w.Reason).MatchString(g.Reason) || (w.Reason == "") != (g.Reason == "") {
					t.Errorf("problem %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestErrorMessages(t *testing.T) {
	err := agentauth.ValidateConstraints(raws(map[string]string{"amount": `{"lte":1,"gt":0}`}))
	if got, want := err.Error(), `agentauth: constraint on "amount" has unknown operators: gt, lte`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	err = agentauth.ValidateConstraints(raws(map[string]string{"amount": `{"min":"1"}`}))
	if got, want := err.Error(), `agentauth: constraint on "amount": min must be a number`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestValidateConstraintsAccepts(t *testing.T) {
	for _, c := range []string{
		`"acc_456"`, `5`, `-0.5e-3`, `true`, `false`, `null`, `[]`, `[1,{"a":[]}]`,
		`{"eq":{"city":"Paris"}}`, `{"eq":{}}`, `{"min":0,"max":1e3}`, `{"in":[]}`, `{"not_in":[null,{"a":1}]}`,
		` { "in" : [ "USD" ] } `, `"\ud800"`,
	} {
		if err := agentauth.ValidateConstraints(raws(map[string]string{"f": c})); err != nil {
			t.Errorf("ValidateConstraints(%s) = %v, want nil", c, err)
		}
	}
	if err := agentauth.ValidateConstraints(nil); err != nil {
		t.Errorf("ValidateConstraints(nil) = %v", err)
	}
}

func TestOperatorsSorted(t *testing.T) {
	if !slices.IsSorted(agentauth.Operators) {
		t.Errorf("Operators %v are not sorted", agentauth.Operators)
	}
	// Every listed operator is accepted with a suitable operand.
	operand := map[string]string{"eq": `1`, "in": `[1]`, "max": `1`, "min": `1`, "not_in": `[1]`}
	for _, op := range agentauth.Operators {
		c := fmt.Sprintf(`{%q:%s}`, op, operand[op])
		if err := agentauth.ValidateConstraints(raws(map[string]string{"f": c})); err != nil {
			t.Errorf("operator %s: %v", op, err)
		}
	}
}

// referenceCompare compares two JSON numbers with math/big.Rat when their
// exponents are small enough to expand; ok is false otherwise.
func referenceCompare(a, b string) (cmp int, ok bool) {
	ra, okA := referenceRat(a)
	rb, okB := referenceRat(b)
	if !okA || !okB {
		return 0, false
	}
	return ra.Cmp(rb), true
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?([0-9]+))?$`)

func referenceRat(s string) (*big.Rat, bool) {
	m := jsonNumber.FindStringSubmatch(s)
	if m == nil || len(s) > 200 {
		return nil, false
	}
	if m[4] != "" && (len(m[4]) > 3) {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

func TestNumberComparisonAgainstReference(t *testing.T) {
	nums := []string{"0", "-0", "1", "-1", "0.1", "0.10", "1e-1", "10e-2", "0.3", "0.30000000000000001",
		"5", "5.0", "50e-1", "0.5E1", "1000", "1e3", "999.9999999999999999", "-999.99", "12345678901234567890",
		"12345678901234567891", "1.5e2", "150", "149.99", "-1e-5", "-0.00001", "-0.000011", "7e0", "7E+0", "7e-0"}
	for _, a := range nums {
		for _, b := range nums {
			want, ok := referenceCompare(a, b)
			if !ok {
				t.Fatalf("reference cannot read %s or %s", a, b)
			}
			vs, err := agentauth.CheckConstraints(
				raws(map[string]string{"x": `{"min":` + b + `}`, "y": `{"max":` + b + `}`, "z": `{"eq":` + b + `}`}),
				raws(map[string]string{"x": a, "y": a, "z": a}))
			if err != nil {
				t.Fatal(err)
			}
			failed := map[string]bool{}
			for _, v := range vs {
				failed[v.Field] = true
			}
			if failed["x"] != (want < 0) || failed["y"] != (want > 0) || failed["z"] != (want != 0) {
				t.Errorf("%s vs %s: reference %d, min failed %v, max failed %v, eq failed %v", a, b, want, failed["x"], failed["y"], failed["z"])
			}
		}
	}
}

func FuzzCheckConstraints(f *testing.F) {
	f.Add("1000", "999.5", `{"in":["USD"]}`, `"USD"`)
	f.Add("0.3", "0.30000000000000001", `{"not_in":[1,2]}`, `2.0`)
	f.Add("1e400", "-1e-400", `{"eq":{"a":[1,{"b":null}]}}`, `{"a":[1.0,{"b":null}]}`)
	f.Add("-0", "0", `"\ud800"`, `"\ufffd"`)
	f.Add("12345678901234567890", "12345678901234567890.000", `{"min":1,"gt":2}`, `3`)
	f.Add("1e99999999999999999999", "1e99999999999999999998", `[[[[[]]]]]`, `{"a":1,"a":2}`)
	f.Fuzz(func(t *testing.T, bound, value, constraint, argument string) {
		// Arbitrary constraint and argument: never panics, and reports are
		// valid JSON.
		c := map[string]json.RawMessage{"f": json.RawMessage(constraint)}
		a := map[string]json.RawMessage{"f": json.RawMessage(argument)}
		vs, err := agentauth.CheckConstraints(c, a)
		if err != nil && vs != nil {
			t.Fatalf("violations %v together with error %v", vs, err)
		}
		if verr := agentauth.ValidateConstraints(c); (verr == nil) != (err == nil) {
			t.Fatalf("ValidateConstraints = %v but CheckConstraints = %v", verr, err)
		}
		for _, v := range vs {
			if !json.Valid(v.Constraint) || !json.Valid(v.Actual) {
				t.Fatalf("violation is not valid JSON: %s / %s", v.Constraint, v.Actual)
			}
		}
		// A non-object value used as an exact constraint is satisfied by
		// itself.
		self := map[string]json.RawMessage{"f": json.RawMessage(argument)}
		if agentauth.ValidateConstraints(self) == nil && !strings.HasPrefix(strings.TrimLeft(argument, " \t\r\n"), "{") {
			if vs, err := agentauth.CheckConstraints(self, a); err != nil || len(vs) != 0 {
				t.Fatalf("argument %q does not equal itself: %v, %v", argument, vs, err)
			}
		}

		// Numbers: agree with math/big where both are representable.
		want, ok := referenceCompare(value, bound)
		if !ok {
			return
		}
		vs, err = agentauth.CheckConstraints(
			map[string]json.RawMessage{
				"min": json.RawMessage(`{"min":` + bound + `}`),
				"max": json.RawMessage(`{"max":` + bound + `}`),
				"eq":  json.RawMessage(`{"eq":` + bound + `}`),
				"in":  json.RawMessage(`{"in":[` + bound + `]}`),
			},
			map[string]json.RawMessage{"min": json.RawMessage(value), "max": json.RawMessage(value), "eq": json.RawMessage(value), "in": json.RawMessage(value)})
		if err != nil {
			t.Fatalf("numbers %s, %s: %v", value, bound, err)
		}
		failed := map[string]bool{}
		for _, v := range vs {
			failed[v.Field] = true
		}
		if failed["min"] != (want < 0) || failed["max"] != (want > 0) || failed["eq"] != (want != 0) || failed["in"] != (want != 0) {
			t.Fatalf("%s vs %s: reference %d, got failures %v", value, bound, want, failed)
		}
	})
}

func BenchmarkCheckConstraints(b *testing.B) {
	constraints := map[string]json.RawMessage{
		"destination_account": json.RawMessage(`"acc_456"`),
		"amount":              json.RawMessage(`{"min":0,"max":1000}`),
		"currency":            json.RawMessage(`{"in":["USD","EUR"]}`),
	}
	args := map[string]json.RawMessage{
		"destination_account": json.RawMessage(`"acc_456"`),
		"amount":              json.RawMessage(`250.75`),
		"currency":            json.RawMessage(`"EUR"`),
		"memo":                json.RawMessage(`"rent"`),
	}
	b.ReportAllocs()
	for b.Loop() {
		vs, err := agentauth.CheckConstraints(constraints, args)
		if err != nil || vs != nil {
			b.Fatal(vs, err)
		}
	}
}
