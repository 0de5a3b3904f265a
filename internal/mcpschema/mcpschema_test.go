package mcpschema_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/internal/mcpschema"
)

func TestSchemas(t *testing.T) {
	tests := []struct {
		name, schema, input, output string
		wrapped                     bool
	}{
		{"object", `{"type":"object","properties":{"a":{"type":"string"}}}`,
			`{"type":"object","properties":{"a":{"type":"string"}}}`, `{"type":"object","properties":{"a":{"type":"string"}}}`, false},
		{"array", `{"type":"array","items":{"type":"string"}}`,
			`{"type":"object","allOf":[{"type":"array","items":{"type":"string"}}]}`,
			`{"type":"object","properties":{"result":{"type":"array","items":{"type":"string"}}},"required":["result"]}`, true},
		{"untyped", `{"properties":{"a":{}}}`,
			`{"type":"object","allOf":[{"properties":{"a":{}}}]}`,
			`{"type":"object","properties":{"result":{"properties":{"a":{}}}},"required":["result"]}`, true},
		{"with a dialect", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array"}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","allOf":[{"type":"array"}]}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"result":{"type":"array"}},"required":["result"]}`, true},
		{"absent", ``, `{"type":"object","properties":{}}`, ``, false},
		{"null", `null`, `{"type":"object","properties":{}}`, ``, false},
	}
	for _, tt := range tests {
		if got := string(mcpschema.Input(json.RawMessage(tt.schema))); got != tt.input {
			t.Errorf("%s: input %s, want %s", tt.name, got, tt.input)
		}
		out, wrapped := mcpschema.Output(json.RawMessage(tt.schema))
		if diff := cmp.Diff(tt.output, string(out)); diff != "" || wrapped != tt.wrapped {
			t.Errorf("%s: output wrapped %v (-want +got):\n%s", tt.name, wrapped, diff)
		}
		if tt.output != "" && !json.Valid(out) {
			t.Errorf("%s: output schema %s is not JSON", tt.name, out)
		}
	}
	if got := string(mcpschema.Structured(json.RawMessage(`[1,2]`), true)); got != `{"result":[1,2]}` {
		t.Errorf("wrapped result %s", got)
	}
	if got := string(mcpschema.Structured(json.RawMessage(`{"a":1}`), false)); got != `{"a":1}` {
		t.Errorf("object result %s", got)
	}
}
