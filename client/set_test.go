package client_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/client"
)

func TestSetNamespacesFiltersAndCollisions(t *testing.T) {
	bank, shop := newFakeProvider(t), newFakeProvider(t)
	shop.Caps = append(shop.Caps, client.Capability{Name: "orders.list", Description: "List orders.",
		Output: json.RawMessage(`{"type":"object","properties":{"orders":{"type":"array"}}}`)})
	c, _, _ := newClient(t)
	members := []client.Member{
		{Provider: "bank", Agent: connect(t, c, bank, client.Capabilities("echo", "transfer")...)},
		{Provider: "shop", Agent: connect(t, c, shop, client.Capabilities("echo")...)},
	}
	ctx := context.Background()
	tests := []struct {
		name           string
		opts           client.SetOptions
		wantNames      []string
		wantCollisions []client.Collision
	}{
		{"default namespace", client.SetOptions{},
			[]string{"bank__echo", "bank__transfer", "shop__echo", "shop__transfer", "shop__orders_list"}, nil},
		{"granted only", client.SetOptions{GrantedOnly: true},
			[]string{"bank__echo", "bank__transfer", "shop__echo"}, nil},
		{"include and exclude", client.SetOptions{Include: []string{"shop/*", "bank__transfer"}, Exclude: []string{"*echo"}},
			[]string{"bank__transfer", "shop__transfer", "shop__orders_list"}, nil},
		{"raw names collide", client.SetOptions{Namespace: func(_, name string) string { return name }},
			[]string{"orders.list"}, []client.Collision{
				{Name: "echo", Sources: []string{"bank/echo", "shop/echo"}},
				{Name: "transfer", Sources: []string{"bank/transfer", "shop/transfer"}},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := client.NewSet(ctx, members, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range s.Entries() {
				names = append(names, e.Name)
			}
			if diff := cmp.Diff(tt.wantNames, names); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCollisions, s.Collisions()); diff != "" {
				t.Errorf("collisions (-want +got):\n%s", diff)
			}
		})
	}

	s, err := client.NewSet(ctx, members, client.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lookups := []struct{ name, want, wantErr string }{
		{"bank__echo", "bank/echo", ""},
		{"orders.list", "shop/orders.list", ""},
		{"shop/echo", "shop/echo", ""},
		{"echo", "", "ambiguous"},
		{"nothing", "", "no capability"},
	}
	for _, l := range lookups {
		e, err := s.Lookup(l.name)
		if l.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), l.wantErr) {
				t.Errorf("Lookup(%q) err = %v, want %q", l.name, err, l.wantErr)
			}
			continue
		}
		if err != nil || e.Provider+"/"+e.Capability.Name != l.want {
			t.Errorf("Lookup(%q) = %s/%s, %v", l.name, e.Provider, e.Capability.Name, err)
		}
	}
	// Dispatch goes to the agent and raw name the entry came from.
	res, err := s.Call(ctx, "shop__echo", map[string]string{"message": "from the shop"})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Data) != `{"message":"from the shop"}` {
		t.Errorf("data %s", res.Data)
	}
	if _, err := s.Call(ctx, "shop__transfer", map[string]any{"amount": 1, "currency": "EUR"}); !client.IsCode(err, "capability_not_granted") {
		t.Errorf("ungranted capability through the set: %v", err)
	}

	if _, err := client.NewSet(ctx, []client.Member{members[0], members[0]}, client.SetOptions{}); err == nil {
		t.Error("duplicate provider accepted")
	}
	if _, err := client.NewSet(ctx, members, client.SetOptions{Include: []string{"["}}); err == nil {
		t.Error("bad pattern accepted")
	}
}

func TestTools(t *testing.T) {
	p := newFakeProvider(t)
	p.Caps = []client.Capability{
		{Name: "echo", Description: "Echo a message.", Input: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`),
			Output: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`),
			Title:  "Echo a message", ReadOnly: true, Risk: "low"},
		{Name: "ping", Description: "No arguments.", Output: json.RawMessage(`{"type":"string"}`), Risk: "high"},
	}
	c, _, _ := newClient(t)
	s, err := client.NewSet(context.Background(), []client.Member{{Provider: "svc", Agent: connect(t, c, p)}}, client.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	render := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct{ name, got, want string }{
		{"openai", render(s.OpenAITools()),
			`[{"type":"function","function":{"name":"svc__echo","description":"Echo a message.","parameters":{"type":"object","properties":{"message":{"type":"string"}}}}},` +
				`{"type":"function","function":{"name":"svc__ping","description":"No arguments.","parameters":{"type":"object","properties":{}}}}]`},
		{"anthropic", render(s.AnthropicTools()),
			`[{"name":"svc__echo","description":"Echo a message.","input_schema":{"type":"object","properties":{"message":{"type":"string"}}}},` +
				`{"name":"svc__ping","description":"No arguments.","input_schema":{"type":"object","properties":{}}}]`},
		{"mcp", render(s.MCPTools()),
			// Titled and annotated as mcpx titles and annotates the tools.
			`[{"name":"svc__echo","title":"Echo a message","description":"Echo a message.","annotations":{"title":"Echo a message","readOnlyHint":true},` +
				`"inputSchema":{"type":"object","properties":{"message":{"type":"string"}}},"outputSchema":{"type":"object","properties":{"message":{"type":"string"}}}},` +
				`{"name":"svc__ping","title":"Ping","description":"No arguments.","annotations":{"title":"Ping","destructiveHint":true},` +
				`"inputSchema":{"type":"object","properties":{}},"outputSchema":{"type":"object","properties":{"result":{"type":"string"}},"required":["result"]}}]`},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.got); diff != "" {
			t.Errorf("%s tools (-want +got):\n%s", tt.name, diff)
		}
	}
}
