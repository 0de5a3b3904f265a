package client_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/agentauthtest"
	"github.com/agentcap/agentcap/testing/captest"
)

type noteIn struct {
	None bool `json:"none,omitempty"`
}

type note struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// notesCap answers a top-level JSON array: the client and its tool
// conversion must take it as it comes.
var notesCap = core.MustDefine("notes", "List the notes.",
	func(_ context.Context, _ struct{}, in noteIn) ([]note, error) {
		if in.None {
			return nil, nil
		}
		return []note{{ID: "n1", Text: "first"}, {ID: "n2", Text: "second"}}, nil
	})

func TestArrayOutputThroughTheClient(t *testing.T) {
	p := newFakeProvider(t)
	exec := captest.NewExecutor(t, captest.Static[struct{}, agentauth.Caller[struct{}]](struct{}{}), []core.Definer{echoCap, notesCap})
	p.Loc = agentauthtest.NewServer(t, exec, agentauth.HTTPOptions[struct{}]{})
	p.Caps = append(p.Caps, client.Capability{Name: "notes", Description: "List the notes.",
		Input: notesCap.Definition().InputSchema(), Output: notesCap.Definition().OutputSchema()})
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
		if !strings.HasPrefix(string(tool.OutputSchema), `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"result":{"items":`) {
			t.Errorf("MCP tool output schema %s, want the array schema wrapped", tool.OutputSchema)
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
