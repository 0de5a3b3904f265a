package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
)

type sendIn struct {
	Amount int `json:"amount"`
}

type sendPreview struct {
	WouldSend int `json:"would_send"`
}

// testClock is a clock tests move forward.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newConfirmingProvider is a fake provider whose location has, beside
// echo and transfer, "send": it needs a confirmation, has a preview, and
// its tokens age by clock.
func newConfirmingProvider(t *testing.T, clock *testClock) *fakeProvider {
	t.Helper()
	p := newFakeProvider(t)
	p.Loc.setClock(clock.Now)
	p.Loc.handle("send", fakeCapability{
		fields:  []string{"amount"},
		confirm: true,
		run: func(_ string, args json.RawMessage) (any, error) {
			var in sendIn
			_ = json.Unmarshal(args, &in)
			return in, nil
		},
		preview: func(args json.RawMessage) any {
			var in sendIn
			_ = json.Unmarshal(args, &in)
			return sendPreview{WouldSend: in.Amount}
		},
	})
	p.Caps = append(p.Caps, client.Capability{Name: "send", Description: "Send money.",
		Risk: "high", SupportsPreview: true, RequiresConfirmation: true})
	return p
}

func TestPreviewAndConfirm(t *testing.T) {
	clock := &testClock{now: time.Now()}
	p := newConfirmingProvider(t, clock)
	c, _, _ := newClient(t)
	a := connect(t, c, p, client.Capabilities("echo", "send")...)
	ctx := context.Background()

	pv, err := a.Preview(ctx, "send", sendIn{Amount: 5})
	if err != nil {
		t.Fatal(err)
	}
	if string(pv.Preview) != `{"would_send":5}` || pv.Confirmation == nil || pv.Confirmation.Token == "" {
		t.Fatalf("preview %s, confirmation %+v", pv.Preview, pv.Confirmation)
	}
	if d := pv.Confirmation.ExpiresAt.Sub(clock.Now()); d < 59*time.Second || d > time.Minute {
		t.Errorf("token expires in %v", d)
	}
	token := pv.Confirmation.Token
	if _, err := a.Execute(ctx, "send", sendIn{Amount: 6}, client.WithConfirmationToken(token)); !client.IsCode(err, agentcap.CodeConfirmationMismatch) || !client.IsConfirmationRefused(err) {
		t.Errorf("other arguments: %v", err)
	}
	res, err := a.Execute(ctx, "send", sendIn{Amount: 5}, client.WithConfirmationToken(token))
	if err != nil || string(res.Data) != `{"amount":5}` {
		t.Fatalf("confirmed execute: %v %v", res, err)
	}
	_, err = a.Execute(ctx, "send", sendIn{Amount: 5}, client.WithConfirmationToken(token))
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 409 || e.Code != agentcap.CodeConfirmationUsed {
		t.Errorf("token used twice: %v", err)
	}

	// A preview without a confirmation, and a capability without one.
	pv, err = a.Preview(ctx, "send", sendIn{Amount: 1})
	if err != nil || pv.Confirmation == nil {
		t.Fatalf("preview: %v", err)
	}
	if _, err := a.Preview(ctx, "echo", map[string]string{"message": "hi"}); !client.IsCode(err, agentcap.CodePreviewNotSupported) {
		t.Errorf("preview of echo: %v", err)
	}

	// Expired.
	clock.Add(2 * time.Minute)
	if _, err := a.Execute(ctx, "send", sendIn{Amount: 1}, client.WithConfirmationToken(pv.Confirmation.Token)); !client.IsCode(err, agentcap.CodeConfirmationExpired) {
		t.Errorf("expired token: %v", err)
	}
	// Forged.
	if _, err := a.Execute(ctx, "send", sendIn{Amount: 1}, client.WithConfirmationToken("cfm_forged")); !client.IsCode(err, agentcap.CodeInvalidConfirmation) {
		t.Errorf("forged token: %v", err)
	}
	// A capability without confirmation ignores the option.
	if res, err := a.Execute(ctx, "echo", map[string]string{"message": "hi"}, client.WithConfirmationToken("unused")); err != nil || string(res.Data) != `{"message":"hi"}` {
		t.Errorf("echo with a token: %v %v", res, err)
	}
}

func TestExecuteConfirmationRequired(t *testing.T) {
	clock := &testClock{now: time.Now()}
	p := newConfirmingProvider(t, clock)
	c, _, _ := newClient(t)
	a := connect(t, c, p, client.Capabilities("send")...)
	ctx := context.Background()

	_, err := a.Execute(ctx, "send", sendIn{Amount: 9})
	var cr *client.ConfirmationRequired
	if !errors.As(err, &cr) {
		t.Fatalf("without a token: %v", err)
	}
	if cr.Capability != "send" || string(cr.Preview) != `{"would_send":9}` || cr.Confirmation.Token == "" || cr.Err.Status != 428 {
		t.Errorf("confirmation required: %+v", cr)
	}
	if !client.IsCode(err, agentcap.CodeConfirmationRequired) || client.IsConfirmationRefused(err) {
		t.Errorf("codes of %v", err)
	}
	// One more call confirms.
	res, err := a.Execute(ctx, "send", sendIn{Amount: 9}, client.WithConfirmationToken(cr.Confirmation.Token))
	if err != nil || string(res.Data) != `{"amount":9}` {
		t.Fatalf("confirmed: %v %v", res, err)
	}

	// Another agent cannot use the first one's token.
	_, err = a.Execute(ctx, "send", sendIn{Amount: 3})
	if !errors.As(err, &cr) {
		t.Fatal(err)
	}
	c2, _, _ := newClient(t)
	b := connect(t, c2, p, client.Capabilities("send")...)
	if _, err := b.Execute(ctx, "send", sendIn{Amount: 3}, client.WithConfirmationToken(cr.Confirmation.Token)); !client.IsCode(err, agentcap.CodeInvalidConfirmation) {
		t.Errorf("another agent's token: %v", err)
	}
}

func TestBatchConfirmation(t *testing.T) {
	clock := &testClock{now: time.Now()}
	p := newConfirmingProvider(t, clock)
	c, _, _ := newClient(t)
	a := connect(t, c, p, client.Capabilities("echo", "send")...)
	ctx := context.Background()
	pv, err := a.Preview(ctx, "send", sendIn{Amount: 2})
	if err != nil {
		t.Fatal(err)
	}
	results, err := a.BatchExecute(ctx, []client.BatchCall{
		{ID: "confirmed", Capability: "send", Arguments: sendIn{Amount: 2}, ConfirmationToken: pv.Confirmation.Token},
		{ID: "unconfirmed", Capability: "send", Arguments: sendIn{Amount: 4}},
		{ID: "echo", Capability: "echo", Arguments: map[string]string{"message": "x"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if results[0].Err != nil || string(results[0].Data) != `{"amount":2}` {
		t.Errorf("confirmed item: %s %v", results[0].Data, results[0].Err)
	}
	if results[2].Err != nil || string(results[2].Data) != `{"message":"x"}` {
		t.Errorf("echo item: %s %v", results[2].Data, results[2].Err)
	}
	var cr *client.ConfirmationRequired
	if !errors.As(results[1].Err, &cr) {
		t.Fatalf("unconfirmed item: %v", results[1].Err)
	}
	if cr.Capability != "send" || cr.Confirmation.Token == "" || string(cr.Preview) != `{"would_send":4}` {
		t.Errorf("unconfirmed item: %+v", cr)
	}
	again, err := a.BatchExecute(ctx, []client.BatchCall{{Capability: "send", Arguments: sendIn{Amount: 4}, ConfirmationToken: cr.Confirmation.Token}})
	if err != nil || again[0].Err != nil || string(again[0].Data) != `{"amount":4}` {
		t.Errorf("item confirmed with the item's token: %v %+v", err, again)
	}
}

func TestCapabilityExtensionMembers(t *testing.T) {
	tests := []struct {
		name, in string
		want     client.Capability
	}{
		{"absent", `{"name":"a","description":"d"}`, client.Capability{Name: "a", Description: "d"}},
		{"present", `{"name":"a","risk":"high","supports_preview":true,"requires_confirmation":true,"preview_schema":{"type":"object"}}`,
			client.Capability{Name: "a", Risk: "high", SupportsPreview: true, RequiresConfirmation: true,
				PreviewSchema: json.RawMessage(`{"type":"object"}`)}},
		{"other types", `{"name":"a","risk":3,"supports_preview":"yes","requires_confirmation":true}`,
			client.Capability{Name: "a", RequiresConfirmation: true}},
		{"null", `{"name":"a","risk":null,"supports_preview":null,"requires_confirmation":null,"grant_status":"granted"}`,
			client.Capability{Name: "a", GrantStatus: "granted"}},
	}
	for _, tt := range tests {
		var got client.Capability
		if err := json.Unmarshal([]byte(tt.in), &got); err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	var c client.Capability
	if err := json.Unmarshal([]byte(`{"name":5}`), &c); err == nil {
		t.Error("a name of the wrong type was accepted")
	}
	b, _ := json.Marshal(client.Capability{Name: "a", Risk: "low", RequiresConfirmation: true})
	if string(b) != `{"name":"a","description":"","risk":"low","requires_confirmation":true}` {
		t.Errorf("marshalled %s", b)
	}
}

func TestToolsMarkConfirmation(t *testing.T) {
	clock := &testClock{now: time.Now()}
	p := newConfirmingProvider(t, clock)
	c, _, _ := newClient(t)
	a := connect(t, c, p, client.Capabilities("echo", "send")...)
	s, err := client.NewSet(context.Background(), []client.Member{{Provider: "bank", Agent: a}}, client.SetOptions{Include: []string{"echo", "send"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		desc    string
		confirm bool
	}{
		"bank__echo": {"Echo a message.", false},
		"bank__send": {"Send money. " + client.ConfirmationNote, true},
	}
	for _, tool := range s.OpenAITools() {
		if w := want[tool.Function.Name]; tool.Function.Description != w.desc || tool.NeedsConfirmation != w.confirm {
			t.Errorf("openai %s: %q %v", tool.Function.Name, tool.Function.Description, tool.NeedsConfirmation)
		}
	}
	for _, tool := range s.AnthropicTools() {
		if w := want[tool.Name]; tool.Description != w.desc || tool.NeedsConfirmation != w.confirm {
			t.Errorf("anthropic %s: %q %v", tool.Name, tool.Description, tool.NeedsConfirmation)
		}
	}
	for _, tool := range s.MCPTools() {
		if w := want[tool.Name]; tool.Description != w.desc || tool.NeedsConfirmation != w.confirm {
			t.Errorf("mcp %s: %q %v", tool.Name, tool.Description, tool.NeedsConfirmation)
		}
	}
	if len(s.Entries()) != 2 {
		t.Errorf("%d entries", len(s.Entries()))
	}
	// A call through the set needs the confirmation too.
	_, err = s.Call(context.Background(), "bank__send", sendIn{Amount: 1})
	var cr *client.ConfirmationRequired
	if !errors.As(err, &cr) {
		t.Fatalf("set call: %v", err)
	}
	if res, err := s.Call(context.Background(), "bank__send", sendIn{Amount: 1}, client.WithConfirmationToken(cr.Confirmation.Token)); err != nil || string(res.Data) != `{"amount":1}` {
		t.Errorf("confirmed set call: %v %v", res, err)
	}
}
