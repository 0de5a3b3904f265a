package schema_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/internal/jsonvalue"
	"github.com/agentcap/agentcap/internal/schema"
)

func TestProperties(t *testing.T) {
	derived, err := schema.For(reflect.TypeFor[Transfer]())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		schema string
		want   []string
	}{
		{"derived, in Go field order", string(derived), []string{"amount", "currency", "to", "memo", "tags", "notify", "meta", "count"}},
		{"document order, not sorted", `{"type":"object","properties":{"z":{},"a":{"properties":{"inner":{}}},"m":true}}`, []string{"z", "a", "m"}},
		{"nullable object", `{"type":["null","object"],"properties":{"a":{}}}`, []string{"a"}},
		{"escaped names", `{"properties":{"a\"b":{},"\u00e9":{}},"type":"object"}`, []string{`a"b`, "é"}},
		{"empty", `{"type":"object","properties":{}}`, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := schema.Properties([]byte(tt.schema))
			if err != nil {
				t.Fatalf("Properties(%s): %v", tt.schema, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Properties(%s) mismatch (-want +got):\n%s", tt.schema, diff)
			}
		})
	}
}

func TestPropertiesRejects(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   string
	}{
		{"not JSON", `{"type":"object",`, "unexpected end of input"},
		{"not an object", `["object"]`, "value must be an object"},
		{"boolean schema", `true`, "value must be an object"},
		{"no type", `{"properties":{"a":{}}}`, "not an object schema"},
		{"string type", `{"type":"string","properties":{"a":{}}}`, "not an object schema"},
		{"type list without object", `{"type":["string","null"],"properties":{"a":{}}}`, "not an object schema"},
		{"no properties", `{"type":"object"}`, `no "properties" object`},
		{"properties not an object", `{"type":"object","properties":["a"]}`, `no "properties" object`},
		{"duplicate property", `{"type":"object","properties":{"a":{},"a":{}}}`, "duplicate key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := schema.Properties([]byte(tt.schema))
			if err == nil {
				t.Fatalf("Properties(%s) = %v, want an error", tt.schema, got)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Properties(%s) error %q does not mention %q", tt.schema, err, tt.want)
			}
		})
	}
}

// FuzzProperties checks that Properties never panics and that the names it
// returns are exactly the keys of the schema's "properties" object.
func FuzzProperties(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{},"b":{"type":"string"}}}`))
	f.Add([]byte(`{"type":["object","null"],"properties":{"\u00e9":true}}`))
	f.Add([]byte(`{"type":"object","properties":{"a":1,"a":2}}`))
	f.Add([]byte(`{"type":"object","properties":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		names, err := schema.Properties(data)
		if err != nil {
			return
		}
		obj, err := jsonvalue.Parse(data)
		if err != nil {
			t.Fatalf("Properties accepted %q, which does not parse: %v", data, err)
		}
		props := obj.(map[string]any)["properties"].(map[string]any)
		if len(names) != len(props) {
			t.Fatalf("Properties(%q) = %q, want the %d keys of %v", data, names, len(props), props)
		}
		for _, n := range names {
			if _, ok := props[n]; !ok {
				t.Fatalf("Properties(%q) returned %q, not a key of %v", data, n, props)
			}
		}
	})
}
