package schema_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentcap/agentcap/internal/jsonvalue"
	"github.com/agentcap/agentcap/internal/schema"
)

type Transfer struct {
	Amount   float64        `json:"amount" exclusiveMinimum:"0" maximum:"10000"`
	Currency string         `json:"currency" enum:"EUR,USD"`
	To       Account        `json:"to"`
	Memo     string         `json:"memo,omitempty" maxLength:"20"`
	Tags     []string       `json:"tags,omitempty" maxItems:"2" uniqueItems:"true"`
	Notify   *Contact       `json:"notify,omitempty"`
	Meta     map[string]int `json:"meta,omitempty"`
	Count    int8           `json:"count,omitempty" multipleOf:"2"`
}

type Account struct {
	IBAN string `json:"iban" pattern:"^[A-Z]{2}[0-9]{2}" minLength:"6"`
	Name string `json:"name"`
}

type Contact struct {
	Email string    `json:"email" format:"email"`
	At    time.Time `json:"at,omitzero"`
}

func mustValidator(t testing.TB, typ reflect.Type) *schema.Validator {
	t.Helper()
	doc, err := schema.For(typ)
	if err != nil {
		t.Fatalf("For(%v): %v", typ, err)
	}
	v, err := schema.Compile(doc)
	if err != nil {
		t.Fatalf("Compile(For(%v)): %v", typ, err)
	}
	return v
}

func mustParse(t testing.TB, s string) any {
	t.Helper()
	v, err := jsonvalue.Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse(%s): %v", s, err)
	}
	return v
}

func TestValidate(t *testing.T) {
	v := mustValidator(t, reflect.TypeFor[Transfer]())
	tests := []struct {
		name string
		in   string
		want []schema.Violation
	}{
		{
			name: "valid minimal",
			in:   `{"amount":12.5,"currency":"EUR","to":{"iban":"DE89370400","name":"Ada"}}`,
		},
		{
			name: "valid with optional fields and nulls",
			in: `{"amount":10000,"currency":"USD","to":{"iban":"GB29NWBK","name":""},"memo":"rent",` +
				`"tags":null,"notify":{"email":"ada@example.com","at":"2024-07-01T12:00:00.123456789+02:00"},"meta":{"a":1},"count":-128}`,
		},
		{
			name: "null optional pointer",
			in:   `{"amount":1,"currency":"EUR","to":{"iban":"DE8937","name":"A"},"notify":null,"meta":null}`,
		},
		{
			name: "key differing by case is unknown and leaves the field missing",
			in:   `{"Amount":12.5,"currency":"EUR","to":{"iban":"DE89370400","name":"Ada"}}`,
			want: []schema.Violation{
				{Path: "/Amount", Message: "unknown field"},
				{Path: "/amount", Message: "missing required field"},
			},
		},
		{
			name: "every missing field of the root",
			in:   `{}`,
			want: []schema.Violation{
				{Path: "/amount", Message: "missing required field"},
				{Path: "/currency", Message: "missing required field"},
				{Path: "/to", Message: "missing required field"},
			},
		},
		{
			name: "nested required and unknown fields",
			in:   `{"amount":1,"currency":"EUR","to":{"extra":true,"more":1}}`,
			want: []schema.Violation{
				{Path: "/to/extra", Message: "unknown field"},
				{Path: "/to/iban", Message: "missing required field"},
				{Path: "/to/more", Message: "unknown field"},
				{Path: "/to/name", Message: "missing required field"},
			},
		},
		{
			name: "type errors",
			in:   `{"amount":"5","currency":null,"to":null,"tags":[1]}`,
			want: []schema.Violation{
				{Path: "/amount", Message: "got string, want number"},
				{Path: "/currency", Message: "got null, want string"},
				{Path: "/tags/0", Message: "got number, want string"},
				{Path: "/to", Message: "got null, want object"},
			},
		},
		{
			name: "every violation at once",
			in: `{"amount":0,"currency":"GBP","to":{"iban":"x","name":1,"extra":true},"memo":"123456789012345678901",` +
				`"tags":["a","a","b"],"notify":{"email":"nope","at":"yesterday"},"meta":{"a/b":"x","c~":1.5},` +
				`"count":201,"Amount":1,"a~b":null}`,
			want: []schema.Violation{
				{Path: "/Amount", Message: "unknown field"},
				{Path: "/amount", Message: "exclusiveMinimum: got 0, want 0"},
				{Path: "/a~0b", Message: "unknown field"},
				{Path: "/count", Message: "maximum: got 201, want 127"},
				{Path: "/count", Message: "multipleOf: got 201, want 2"},
				{Path: "/currency", Message: "value must be one of 'EUR', 'USD'"},
				{Path: "/memo", Message: "maxLength: got 21, want 20"},
				{Path: "/meta/a~1b", Message: "got string, want integer"},
				{Path: "/meta/c~0", Message: "got number, want integer"},
				{Path: "/notify/at", Message: "'yesterday' is not valid date-time: less than 20 characters long"},
				{Path: "/notify/email", Message: "'nope' is not valid email: missing @"},
				{Path: "/tags", Message: "items at 0 and 1 are equal"},
				{Path: "/tags", Message: "maxItems: got 3, want 2"},
				{Path: "/to/extra", Message: "unknown field"},
				{Path: "/to/iban", Message: "'x' does not match pattern '^[A-Z]{2}[0-9]{2}'"},
				{Path: "/to/iban", Message: "minLength: got 1, want 6"},
				{Path: "/to/name", Message: "got number, want string"},
			},
		},
		{
			name: "not an object",
			in:   `[]`,
			want: []schema.Violation{{Path: "", Message: "got array, want object"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := v.Validate(mustParse(t, tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate(%s) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestValidateNumbers(t *testing.T) {
	tests := []struct {
		schema string
		value  string
		valid  bool
	}{
		{`{"type":"integer"}`, `5`, true},
		{`{"type":"integer"}`, `5.0`, true},
		{`{"type":"integer"}`, `-0`, true},
		{`{"type":"integer"}`, `1.5e1`, true},
		{`{"type":"integer"}`, `5.5`, false},
		{`{"type":"integer"}`, `1e-1`, false},
		{`{"type":"integer"}`, `123456789012345678901234567890`, true},
		{`{"type":"integer"}`, `1e400`, true},
		{`{"type":"integer"}`, `"5"`, false},
		{`{"type":"number"}`, `1e400`, true},
		{`{"type":"number"}`, `true`, false},
		// Exact comparison: these differ in the last place of float64.
		{`{"type":"integer","maximum":9007199254740992}`, `9007199254740993`, false},
		{`{"type":"integer","maximum":9007199254740993}`, `9007199254740993`, true},
		{`{"type":"integer","minimum":0,"maximum":18446744073709551615}`, `18446744073709551616`, false},
		{`{"type":"integer","minimum":-9223372036854775808}`, `-9223372036854775809`, false},
		// Exact decimals: 0.3 is a multiple of 0.1 only without binary rounding.
		{`{"multipleOf":0.1}`, `0.3`, true},
		{`{"multipleOf":0.01}`, `19.99`, true},
		{`{"multipleOf":0.01}`, `19.999`, false},
		{`{"exclusiveMinimum":0.1}`, `0.1000000000000000000001`, true},
		{`{"enum":[1,2.5]}`, `1.0`, true},
		{`{"enum":[1,2.5]}`, `2.50`, true},
		{`{"enum":[1,2.5]}`, `2`, false},
		{`{"const":100}`, `1e2`, true},
	}
	for _, tt := range tests {
		v, err := schema.Compile([]byte(tt.schema))
		if err != nil {
			t.Fatalf("Compile(%s): %v", tt.schema, err)
		}
		got := v.Validate(mustParse(t, tt.value))
		if (got == nil) != tt.valid {
			t.Errorf("%s against %s: violations %v, want valid=%v", tt.value, tt.schema, got, tt.valid)
		}
	}

	// Go numbers work as well, for callers that build trees themselves.
	v, _ := schema.Compile([]byte(`{"type":"integer","maximum":10}`))
	for _, value := range []any{5, int64(10), uint8(3), 7.0, json.Number("8")} {
		if got := v.Validate(value); got != nil {
			t.Errorf("Validate(%#v) = %v, want valid", value, got)
		}
	}
	for _, value := range []any{11, 7.5, float32(0.5)} {
		if got := v.Validate(value); got == nil {
			t.Errorf("Validate(%#v) is valid, want a violation", value)
		}
	}
}

func TestValidateNoViolationsAllocatesNothingExtra(t *testing.T) {
	v := mustValidator(t, reflect.TypeFor[Transfer]())
	ok := mustParse(t, `{"amount":12.5,"currency":"EUR","to":{"iban":"DE89370400","name":"Ada"}}`)
	if got := v.Validate(ok); got != nil {
		t.Fatalf("Validate = %v", got)
	}
	// The library's own cost is what validating against the same schema
	// through the raw library allocates; Validate must not add to it.
	doc, _ := schema.For(reflect.TypeFor[Transfer]())
	raw := rawLibraryValidate(t, doc)
	libAllocs := testing.AllocsPerRun(100, func() { _ = raw(ok) })
	ours := testing.AllocsPerRun(100, func() { _ = v.Validate(ok) })
	if ours > libAllocs {
		t.Errorf("Validate allocates %v times per valid value, the library alone %v", ours, libAllocs)
	}
}

func TestCompileRejects(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   string
	}{
		{"not JSON", `{"type":`, "unexpected end of input"},
		{"duplicate key", `{"type":"object","type":"string"}`, "duplicate key"},
		{"unknown type", `{"type":"strin"}`, "strin"},
		{"bad minimum", `{"minimum":"1"}`, "minimum"},
		{"bad pattern", `{"pattern":"("}`, "pattern"},
		{"older draft", `{"$schema":"http://json-schema.org/draft-07/schema#"}`, "$schema must be"},
		{"unknown meta-schema", `{"$schema":"https://example.com/meta"}`, "$schema must be"},
		{"remote reference", `{"$ref":"https://example.com/schema.json"}`, "external references are not loaded"},
		{"relative reference", `{"$ref":"other.json"}`, "external references are not loaded"},
		{"absolute path reference", `{"$ref":"/other.json"}`, "external references are not loaded"},
		{"file reference", `{"$ref":"file:///etc/passwd"}`, "external references are not loaded"},
		{"missing definition", `{"$ref":"#/$defs/missing"}`, "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := schema.Compile([]byte(tt.schema))
			if err == nil {
				t.Fatalf("Compile(%s) succeeded", tt.schema)
			}
			if v != nil {
				t.Errorf("Compile(%s) returned a validator with its error", tt.schema)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compile(%s) error %q does not mention %q", tt.schema, err, tt.want)
			}
		})
	}
}

func TestCompileNeverFetches(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/schema+json")
		_, _ = w.Write([]byte(`{"type":"string"}`))
	}))
	defer srv.Close()
	for _, doc := range []string{
		`{"$ref":"` + srv.URL + `/s.json"}`,
		`{"$id":"` + srv.URL + `/root.json","$ref":"other.json"}`,
		`{"$schema":"` + srv.URL + `/meta.json"}`,
	} {
		if _, err := schema.Compile([]byte(doc)); err == nil {
			t.Errorf("Compile(%s) succeeded", doc)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("Compile made %d requests", n)
	}
}

func TestCompileAccepts(t *testing.T) {
	v, err := schema.Compile([]byte(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema#",
		"$defs": {"code": {"type": "string", "pattern": "^[A-Z]+$"}},
		"type": "object",
		"properties": {"a": {"$ref": "#/$defs/code"}, "b": {"type": "string", "format": "uuid"}}
	}`))
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	got := v.Validate(mustParse(t, `{"a":"abc","b":"not-a-uuid"}`))
	want := []schema.Violation{
		{Path: "/a", Message: "'abc' does not match pattern '^[A-Z]+$'"},
		{Path: "/b", Message: "'not-a-uuid' is not valid uuid: must have 5 elements"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations mismatch (-want +got):\n%s", diff)
	}
	if _, err := schema.Compile([]byte(`true`)); err != nil {
		t.Errorf("Compile(true): %v", err)
	}
}

func TestValidateMessages(t *testing.T) {
	long := strings.Repeat("x", 5000) + "é"
	v, err := schema.Compile([]byte(`{
		"type": "object",
		"properties": {
			"p": {"type": "string", "pattern": "^[a-z]{1,8}$"},
			"f": {"type": "string", "format": "email"},
			"never": false
		},
		"unevaluatedProperties": false
	}`))
	if err != nil {
		t.Fatal(err)
	}
	got := v.Validate(mustParse(t, `{"p":"`+long+`","f":"`+long+`","never":1,"other":2}`))
	want := []schema.Violation{
		{Path: "/f", Message: "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' is not valid email: more than 255 characters long"},
		{Path: "/never", Message: "value not allowed"},
		{Path: "/other", Message: "value not allowed"},
		{Path: "/p", Message: "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' does not match pattern '^[a-z]{1,8}$'"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations mismatch (-want +got):\n%s", diff)
	}
}

func TestCompileBooleanSchema(t *testing.T) {
	if _, err := schema.Compile([]byte(`true`)); err != nil {
		t.Errorf("Compile(true): %v", err)
	}
}

// TestDerivedSchemasAcceptEncodingJSON checks derivation against the
// encoder it describes: whatever encoding/json writes for a type, zero
// values and nils included, must validate against the type's schema.
func TestDerivedSchemasAcceptEncodingJSON(t *testing.T) {
	level := Level(1)
	at := time.Date(2024, 7, 1, 12, 30, 45, 123456789, time.FixedZone("", 2*3600))
	str := "s"
	values := []any{
		Transfer{
			Amount: 12.5, Currency: "EUR", To: Account{IBAN: "DE8937", Name: "Ada"},
			Tags: []string{"a", "b"}, Notify: &Contact{Email: "a@b.example", At: at},
			Meta: map[string]int{"k": 1}, Count: -2,
		},
		struct {
			Base
			*Audit
			Raw    []byte
			Octets [4]byte
			Level  Level
			Tier   *Level
			When   time.Time
			Maybe  *time.Time
			P      **string
			Grid   [][]int8
			Labels map[Key][]float64
			N      json.Number
			U64    uint64
			I64    int64
		}{
			Audit: &Audit{By: "x"}, Raw: []byte{0, 1, 255}, Octets: [4]byte{1, 2, 3, 4},
			Level: level, Tier: &level, When: at, Maybe: &at, P: func() **string { p := &str; return &p }(),
			Grid: [][]int8{{-128, 127}, nil}, Labels: map[Key][]float64{"a": {1.5}, "b": nil},
			N: "1e3", U64: 1<<64 - 1, I64: -1 << 63,
		},
		struct {
			Base
			*Audit
			Raw   []byte
			Tier  *Level
			Maybe *time.Time
			Grid  [][]int8
			N     json.Number `json:",omitempty"`
		}{},
	}
	for _, value := range values {
		typ := reflect.TypeOf(value)
		v := mustValidator(t, typ)
		out, err := json.Marshal(value)
		if err != nil {
			t.Fatalf("Marshal(%T): %v", value, err)
		}
		if got := v.Validate(mustParse(t, string(out))); got != nil {
			t.Errorf("encoding/json output %s violates the schema of %v: %v", out, typ, got)
		}
	}
}

func TestValidateConcurrent(t *testing.T) {
	v := mustValidator(t, reflect.TypeFor[Transfer]())
	good := mustParse(t, `{"amount":12.5,"currency":"EUR","to":{"iban":"DE89370400","name":"Ada"}}`)
	bad := mustParse(t, `{"amount":-1,"currency":"EUR","to":{"iban":"DE89370400","name":"Ada"},"x":1}`)
	want := v.Validate(bad)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if got := v.Validate(good); got != nil {
					t.Errorf("Validate(good) = %v", got)
					return
				}
				if got := v.Validate(bad); !cmp.Equal(want, got) {
					t.Errorf("Validate(bad) = %v, want %v", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// rawLibraryValidate compiles doc with the validation library alone, the
// baseline Validate's cost is measured against.
func rawLibraryValidate(t testing.TB, doc []byte) func(any) error {
	t.Helper()
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("urn:baseline", parsed); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("urn:baseline")
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate
}
