package client_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/client"
)

// notesOutput is the output schema of "notes": a top-level JSON array,
// which the client and its tool conversion must take as it comes.
// Its members are in key order, as the wrapping writes them.
const notesOutput = `{"$schema":"https://json-schema.org/draft/2020-12/schema","items":{"properties":{"id":{"type":"string"},"text":{"type":"string"}},"type":"object"},"type":"array"}`

func TestArrayOutputThroughTheClient(t *testing.T) {
	p := newFakeProvider(t)
	p.Loc.handle("notes", fakeCapability{fields: []string{"none"}, run: func(_ string, args json.RawMessage) (any, error) {
		var in struct {
			None bool `json:"none"`
		}
		_ = json.Unmarshal(args, &in)
		if in.None {
			return []any{}, nil
		}
		return []map[string]string{{"id": "n1", "text": "first"}, {"id": "n2", "text": "second"}}, nil
	}})
	p.Caps = append(p.Caps, client.Capability{Name: "notes", Description: "List the notes.",
		Input:  json.RawMessage(`{"type":"object","properties":{"none":{"type":"boolean"}}}`),
		Output: json.RawMessage(notesOutput)})
	c, _, _ := newClient(t)
	a := connect(t, c, p, client.Capabilities("echo", "notes")...)
	ctx := context.Background()

	tests := []struct {
		name string
		args any
		want string
	}{
		{"array", nil, `[{"id":"n1","text":"first"},{"id":"n2","text":"second"}]`},
		{"nothing to list", map[string]bool{"none": true}, `[]`},
	}
	for _, tt := range tests {
		res, err := a.Execute(ctx, "notes", tt.args)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if string(res.Data) != tt.want {
			t.Errorf("%s: data %s, want %s", tt.name, res.Data, tt.want)
		}
	}

	results, err := a.BatchExecute(ctx, []client.BatchCall{{ID: "a", Capability: "notes"}, {ID: "b", Capability: "notes", Arguments: map[string]bool{"none": true}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || string(results[0].Data) != tests[0].want || string(results[1].Data) != `[]` {
		t.Errorf("batch results %+v", results)
	}

	// MCP wants an object output schema: an array one is wrapped as
	// {"result": ...}, and so are its results.
	s, err := client.NewSet(ctx, []client.Member{{Provider: "svc", Agent: a}}, client.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tool := range s.MCPTools() {
		if tool.Name != "svc__notes" {
			continue
		}
		found = true
		want := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"result":` +
			strings.Replace(notesOutput, `"$schema":"https://json-schema.org/draft/2020-12/schema",`, "", 1) + `},"required":["result"]}`
		if string(tool.OutputSchema) != want {
			t.Errorf("MCP tool output schema %s, want the array schema wrapped: %s", tool.OutputSchema, want)
		}
		if !json.Valid(tool.InputSchema) {
			t.Errorf("input schema %s", tool.InputSchema)
		}
	}
	if !found {
		t.Error("no MCP tool for notes")
	}
	res, err := s.Call(ctx, "svc__notes", nil)
	if err != nil || string(res.Data) != tests[0].want {
		t.Fatalf("call through the set: %v, %v", res, err)
	}
	entry, err := s.Lookup("svc__notes")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(client.MCPStructured(entry.Capability, res.Data)); got != `{"result":`+tests[0].want+`}` {
		t.Errorf("MCP structured content %s", got)
	}
}
