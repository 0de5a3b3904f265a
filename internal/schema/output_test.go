package schema_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/internal/schema"
)

// Summary is an element of list results.
type Summary struct {
	ID   string `json:"id" minLength:"1"`
	Kind string `json:"kind" enum:"checking,savings"`
}

// selfDescribed is a result type that supplies its own schema.
type selfDescribed []string

func (selfDescribed) JSONSchema() json.RawMessage {
	return json.RawMessage(`{"type": "array", "items": {"type": "string"}, "maxItems": 2}`)
}

// describedIface promises a JSONSchema method, which a nil interface
// cannot run.
type describedIface interface {
	JSONSchema() json.RawMessage
}

func TestForOutput(t *testing.T) {
	const head = `{"$schema":"https://json-schema.org/draft/2020-12/schema",`
	const summary = `{"type":"object","properties":{"id":{"type":"string","minLength":1},` +
		`"kind":{"type":"string","enum":["checking","savings"]}},"required":["id","kind"],"additionalProperties":false}`
	tests := []struct {
		name    string
		typ     reflect.Type
		want    string
		valid   []string
		invalid []string
	}{
		{
			name:    "slice of structs",
			typ:     reflect.TypeFor[[]Summary](),
			want:    head + `"type":"array","items":` + summary + `}`,
			valid:   []string{`[]`, `[{"id":"a","kind":"checking"},{"id":"b","kind":"savings"}]`},
			invalid: []string{`null`, `{}`, `[{"id":"","kind":"checking"}]`, `[{"id":"a","kind":"loan"}]`, `[{"id":"a"}]`, `[null]`},
		},
		{
			name:    "slice of strings",
			typ:     reflect.TypeFor[[]string](),
			want:    head + `"type":"array","items":{"type":"string"}}`,
			valid:   []string{`[]`, `["a","b"]`},
			invalid: []string{`null`, `[1]`, `"a"`},
		},
		{
			name:    "slice of small integers",
			typ:     reflect.TypeFor[[]int8](),
			want:    head + `"type":"array","items":{"type":"integer","minimum":-128,"maximum":127}}`,
			valid:   []string{`[-128,0,127]`},
			invalid: []string{`[128]`, `[1.5]`, `null`},
		},
		{
			name:    "slice of pointers to structs",
			typ:     reflect.TypeFor[[]*Summary](),
			want:    head + `"type":"array","items":` + strings.Replace(summary, `"type":"object"`, `"type":["object","null"]`, 1) + `}`,
			valid:   []string{`[]`, `[null,{"id":"a","kind":"savings"}]`},
			invalid: []string{`null`, `[{"id":"a"}]`},
		},
		{
			name:    "slice of pointers to strings",
			typ:     reflect.TypeFor[[]*string](),
			want:    head + `"type":"array","items":{"type":["string","null"]}}`,
			valid:   []string{`["a",null]`},
			invalid: []string{`[1]`, `null`},
		},
		{
			name:    "nested slices keep null inside",
			typ:     reflect.TypeFor[[][]bool](),
			want:    head + `"type":"array","items":{"type":["array","null"],"items":{"type":"boolean"}}}`,
			valid:   []string{`[[true],null,[]]`},
			invalid: []string{`null`, `[[1]]`},
		},
		{
			name:    "pointer to a slice stands for the slice",
			typ:     reflect.TypeFor[*[]string](),
			want:    head + `"type":"array","items":{"type":"string"}}`,
			valid:   []string{`[]`, `["a"]`},
			invalid: []string{`null`, `[1]`},
		},
		{
			name:    "array",
			typ:     reflect.TypeFor[[2]float64](),
			want:    head + `"type":"array","items":{"type":"number"},"minItems":2,"maxItems":2}`,
			valid:   []string{`[1,2.5]`},
			invalid: []string{`[1]`, `[1,2,3]`, `null`},
		},
		{
			name:    "map with string keys",
			typ:     reflect.TypeFor[map[string]Summary](),
			want:    head + `"type":"object","properties":{},"additionalProperties":` + summary + `}`,
			valid:   []string{`{}`, `{"x":{"id":"a","kind":"checking"}}`},
			invalid: []string{`null`, `{"x":1}`, `[]`},
		},
		{
			name:    "map with string-kinded keys",
			typ:     reflect.TypeFor[map[Key]int](),
			want:    head + `"type":"object","properties":{},"additionalProperties":{"type":"integer"}}`,
			valid:   []string{`{"a":1}`},
			invalid: []string{`{"a":"1"}`},
		},
		{
			name:    "struct, as For describes it",
			typ:     reflect.TypeFor[Summary](),
			want:    head + summary[1:],
			valid:   []string{`{"id":"a","kind":"checking"}`},
			invalid: []string{`null`, `[]`},
		},
		{
			name:    "pointer to a struct stands for the struct",
			typ:     reflect.TypeFor[*Summary](),
			want:    head + summary[1:],
			valid:   []string{`{"id":"a","kind":"checking"}`},
			invalid: []string{`null`, `[]`},
		},
		{
			name:    "string",
			typ:     reflect.TypeFor[string](),
			want:    head + `"type":"string"}`,
			valid:   []string{`""`, `"x"`},
			invalid: []string{`null`, `1`},
		},
		{
			name:    "unsigned integer",
			typ:     reflect.TypeFor[uint16](),
			want:    head + `"type":"integer","minimum":0,"maximum":65535}`,
			valid:   []string{`0`, `65535`},
			invalid: []string{`-1`, `65536`},
		},
		{
			name:    "boolean",
			typ:     reflect.TypeFor[bool](),
			want:    head + `"type":"boolean"}`,
			valid:   []string{`true`},
			invalid: []string{`"true"`},
		},
		{
			name:    "time",
			typ:     reflect.TypeFor[time.Time](),
			want:    head + `"type":"string","format":"date-time"}`,
			valid:   []string{`"2024-01-02T03:04:05Z"`},
			invalid: []string{`"yesterday"`},
		},
		{
			name:    "text marshaler",
			typ:     reflect.TypeFor[Level](),
			want:    head + `"type":"string"}`,
			valid:   []string{`"high"`},
			invalid: []string{`1`},
		},
		{
			name:    "byte slice stays a nullable base64 string",
			typ:     reflect.TypeFor[[]byte](),
			want:    head + `"type":["string","null"],"contentEncoding":"base64"}`,
			valid:   []string{`"aGk="`, `null`},
			invalid: []string{`[]`},
		},
		{
			name:    "own schema is the whole document",
			typ:     reflect.TypeFor[selfDescribed](),
			want:    `{"type":"array","items":{"type":"string"},"maxItems":2}`,
			valid:   []string{`[]`, `["a","b"]`},
			invalid: []string{`["a","b","c"]`, `null`},
		},
		{
			name:    "pointers to an own schema stand for it",
			typ:     reflect.TypeFor[**selfDescribed](),
			want:    `{"type":"array","items":{"type":"string"},"maxItems":2}`,
			valid:   []string{`["a"]`},
			invalid: []string{`null`, `[1]`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := schema.ForOutput(tt.typ)
			if err != nil {
				t.Fatalf("ForOutput(%v) error: %v", tt.typ, err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("ForOutput(%v) mismatch (-want +got):\n%s", tt.typ, diff)
			}
			if again, _ := schema.ForOutput(tt.typ); string(again) != string(got) {
				t.Errorf("ForOutput(%v) is not deterministic", tt.typ)
			}
			v, err := schema.Compile(got)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if !schema.IsNative(v) {
				t.Errorf("ForOutput(%v) does not run on the native validator", tt.typ)
			}
			for _, doc := range tt.valid {
				if vs, err := v.ValidateJSON([]byte(doc)); err != nil || len(vs) > 0 {
					t.Errorf("%s: violations %v, error %v; want it valid", doc, vs, err)
				}
			}
			for _, doc := range tt.invalid {
				if vs, err := v.ValidateJSON([]byte(doc)); err != nil || len(vs) == 0 {
					t.Errorf("%s: no violation (error %v); want it invalid", doc, err)
				}
			}
		})
	}
}

// TestForOutputStructMatchesFor keeps the two entry points from drifting
// apart where both apply.
func TestForOutputStructMatchesFor(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[Summary](),
		reflect.TypeFor[*Summary](),
		reflect.TypeFor[struct {
			Items []Summary          `json:"items" minItems:"1"`
			Meta  map[string]float64 `json:"meta,omitempty"`
			When  *time.Time         `json:"when"`
		}](),
	} {
		in, err := schema.For(typ)
		if err != nil {
			t.Fatalf("For(%v): %v", typ, err)
		}
		out, err := schema.ForOutput(typ)
		if err != nil {
			t.Fatalf("ForOutput(%v): %v", typ, err)
		}
		if diff := cmp.Diff(string(in), string(out)); diff != "" {
			t.Errorf("%v: For and ForOutput differ (-For +ForOutput):\n%s", typ, diff)
		}
	}
}

func TestForOutputRejects(t *testing.T) {
	tests := []struct {
		name   string
		typ    reflect.Type
		field  string
		reason string // a part of the reason that must appear
	}{
		{"nil type", nil, "", "no type given"},
		{"channel", reflect.TypeFor[chan int](), "", "chan type chan int has no JSON form"},
		{"slice of channels", reflect.TypeFor[[]chan int](), "[]", "chan type"},
		{"func", reflect.TypeFor[func()](), "", "func type"},
		{"complex", reflect.TypeFor[complex64](), "", "complex64 type"},
		{"slice of complex", reflect.TypeFor[[]complex128](), "[]", "complex128 type"},
		{"interface", reflect.TypeFor[any](), "", "interface type interface {} cannot be described"},
		{"slice of interfaces", reflect.TypeFor[[]fmt.Stringer](), "[]", "interface type fmt.Stringer"},
		{"pointer to an interface", reflect.TypeFor[*error](), "", "interface type error"},
		{"interface with a JSONSchema method", reflect.TypeFor[describedIface](), "", "interface type schema_test.describedIface"},
		{"interface with a MarshalText method", reflect.TypeFor[[]interface{ MarshalText() ([]byte, error) }](), "[]", "interface type"},
		{"int map keys", reflect.TypeFor[map[int]string](), "", "map key type int is not string-kinded"},
		{"struct map keys", reflect.TypeFor[[]map[Summary]bool](), "[]", "not string-kinded"},
		{"bad field inside elements", reflect.TypeFor[[]struct{ Meta map[string]any }](), "[].Meta[key]", "interface type"},
		{"raw message", reflect.TypeFor[json.RawMessage](), "", "json.RawMessage cannot be described"},
		{"custom marshaler", reflect.TypeFor[[]Custom](), "[]", "has its own MarshalJSON or UnmarshalJSON"},
		{"recursive element", reflect.TypeFor[[]Node](), "[].Children", "recursive type []schema_test.Node"},
		{"recursive map", reflect.TypeFor[Tree](), "[key]", "recursive type schema_test.Tree"},
		{"bad tag inside elements", reflect.TypeFor[[]struct {
			N int `json:"n" minimum:"x"`
		}](), "[].N", `tag minimum: "x" is not a valid int`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := schema.ForOutput(tt.typ)
			if err == nil {
				t.Fatalf("ForOutput(%v) = %s, want an error", tt.typ, got)
			}
			var de *schema.DeriveError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DeriveError: %v", err, err)
			}
			if de.Type != tt.typ || de.Field != tt.field || !strings.Contains(de.Reason, tt.reason) {
				t.Errorf("got type %v, field %q, reason %q; want %v, %q, containing %q", de.Type, de.Field, de.Reason, tt.typ, tt.field, tt.reason)
			}
		})
	}
}

// TestSchemerInterfaceField is refused cleanly by For as well: there is
// no value whose JSONSchema method could run.
func TestSchemerInterfaceField(t *testing.T) {
	_, err := schema.For(reflect.TypeFor[struct{ V describedIface }]())
	if err == nil || !strings.Contains(err.Error(), "field V: interface type schema_test.describedIface cannot be described") {
		t.Errorf("err = %v", err)
	}
}

func TestNilEncoding(t *testing.T) {
	tests := []struct {
		typ  reflect.Type
		want string // "" for nil
	}{
		{reflect.TypeFor[[]Summary](), "[]"},
		{reflect.TypeFor[[]*string](), "[]"},
		{reflect.TypeFor[[][]byte](), "[]"},
		{reflect.TypeFor[map[string]int](), "{}"},
		{reflect.TypeFor[map[Key][]string](), "{}"},
		{reflect.TypeFor[[]byte](), ""},
		{reflect.TypeFor[json.RawMessage](), ""},
		{reflect.TypeFor[net.IP](), ""},
		{reflect.TypeFor[selfDescribed](), ""},
		{reflect.TypeFor[*[]string](), ""},
		{reflect.TypeFor[[2]int](), ""},
		{reflect.TypeFor[Summary](), ""},
		{reflect.TypeFor[*Summary](), ""},
		{reflect.TypeFor[string](), ""},
		{reflect.TypeFor[any](), ""},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := string(schema.NilEncoding(tt.typ)); got != tt.want {
			t.Errorf("NilEncoding(%v) = %q, want %q", tt.typ, got, tt.want)
		}
	}
}

// TestNilEncodingFitsForOutput checks the contract between the two: the
// text a nil value is sent as fits the schema of its type, where
// encoding/json's null would not.
func TestNilEncodingFitsForOutput(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[[]Summary](),
		reflect.TypeFor[[]string](),
		reflect.TypeFor[map[string]Summary](),
	} {
		doc, err := schema.ForOutput(typ)
		if err != nil {
			t.Fatal(err)
		}
		v, err := schema.Compile(doc)
		if err != nil {
			t.Fatal(err)
		}
		nilValue, err := json.Marshal(reflect.Zero(typ).Interface())
		if err != nil {
			t.Fatal(err)
		}
		if vs, _ := v.ValidateJSON(nilValue); len(vs) == 0 {
			t.Errorf("%v: encoding/json's %s fits %s; the nil encoding would not be needed", typ, nilValue, doc)
		}
		if vs, err := v.ValidateJSON(schema.NilEncoding(typ)); err != nil || len(vs) > 0 {
			t.Errorf("%v: %s does not fit %s: %v %v", typ, schema.NilEncoding(typ), doc, vs, err)
		}
	}
}
