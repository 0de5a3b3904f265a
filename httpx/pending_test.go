package httpx_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/idempotency"
)

// deskPerson is a HumanConfirmer whose person says yes when the test
// asks: the token the status URL would then hand out.
type deskPerson struct {
	m    *confirm.Manager
	mu   sync.Mutex
	last core.ConfirmationBinding
}

func (d *deskPerson) RequestHumanConfirmation(_ context.Context, r core.HumanConfirmationRequest) (*core.HumanConfirmationPending, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.last = r.Binding
	d.last.Arguments = append([]byte(nil), r.Binding.Arguments...)
	return &core.HumanConfirmationPending{
		Approval: core.ConfirmationApproval{Method: "device_authorization", VerificationURI: "https://p.example/approve",
			VerificationURIComplete: "https://p.example/approve?code=BCDF-GHJK", UserCode: "BCDF-GHJK", ExpiresIn: 600, Interval: 5},
		StatusURL: "https://p.example/agent/confirmation?id=apr_1",
	}, nil
}

func (d *deskPerson) approve(t *testing.T) string {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	c, err := d.m.Issue(context.Background(), d.last)
	if err != nil {
		t.Fatal(err)
	}
	return c.Token
}

// TestConfirmationPending serves a capability of which calls above 100
// need a person's confirmation.
func TestConfirmationPending(t *testing.T) {
	mgr, err := confirm.New(confirm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	person := &deskPerson{m: mgr}
	send := core.MustDefine("send", "Send money",
		func(_ context.Context, _ struct{}, in sendIn) (sendOut, error) { return sendOut{Sent: in.Amount}, nil },
		core.WithPreview(func(_ context.Context, _ struct{}, in sendIn) (sendOut, error) { return sendOut{Sent: in.Amount}, nil }),
		core.WithHumanConfirmation(func(_ context.Context, _ struct{}, in sendIn) (bool, error) { return in.Amount > 100, nil }))
	exec := core.MustExecutor(core.MustRegistry(send), noContext,
		core.Config{Confirmation: core.ConfirmationConfig{Confirmer: mgr, Human: person}})
	guard, err := idempotency.New(idempotency.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpx.New(exec, httpx.Config{Verifier: bearerName, LongRunning: httpx.LongRunning{Idempotency: guard}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	post := func(route, key, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+route, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer agt_1")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	const call = `{"capability":"send","arguments":{"amount":500}}`

	// The preview says a person must confirm, and hands out no token.
	if resp, body := post("/capability/preview", "", call); resp.StatusCode != 200 || body != `{"preview":{"sent":500},"requires_human_confirmation":true}`+"\n" {
		t.Errorf("preview: %d %s", resp.StatusCode, body)
	}

	// Executed, it waits for the person: 202, not kept under its key.
	resp, body := post("/capability/execute", "k1", call)
	want := `{"status":"confirmation_pending","message":"a person must confirm this call: poll status_url for the decision, then execute it again with the confirmation token",` +
		`"approval":{"method":"device_authorization","verification_uri":"https://p.example/approve","verification_uri_complete":"https://p.example/approve?code=BCDF-GHJK","user_code":"BCDF-GHJK","expires_in":600,"interval":5},` +
		`"status_url":"https://p.example/agent/confirmation?id=apr_1","preview":{"sent":500}}` + "\n"
	if resp.StatusCode != http.StatusAccepted || body != want || resp.Header.Get("Retry-After") != "5" ||
		resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("execute: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	if diff := cmp.Diff(core.ConfirmationBinding{Subject: "agt_1", Capability: "send", Arguments: []byte(`{"amount":500}`), Human: true}, person.last); diff != "" {
		t.Errorf("asked (-want +got):\n%s", diff)
	}

	// With the person's token, the same key runs the call once.
	confirmed := strings.TrimSuffix(call, "}") + `,"confirmation_token":"` + person.approve(t) + `"}`
	if resp, body := post("/capability/execute", "k1", confirmed); resp.StatusCode != 200 || body != `{"data":{"sent":500}}`+"\n" || resp.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("confirmed: %d %s", resp.StatusCode, body)
	}
	if resp, body := post("/capability/execute", "k1", confirmed); resp.StatusCode != 200 || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replayed: %d %s", resp.StatusCode, body)
	}

	// A batch item waits alone.
	_, body = post("/capability/batch-execute", "", `{"requests":[{"id":"a","capability":"send","arguments":{"amount":500}}]}`)
	var batch struct {
		Responses []struct {
			Status string         `json:"status"`
			Error  map[string]any `json:"error"`
		} `json:"responses"`
	}
	if err := json.Unmarshal([]byte(body), &batch); err != nil || len(batch.Responses) != 1 {
		t.Fatalf("batch: %s", body)
	}
	if r := batch.Responses[0]; r.Status != "failed" || r.Error["code"] != "confirmation_pending" || r.Error["status_url"] != "https://p.example/agent/confirmation?id=apr_1" {
		t.Errorf("batch item: %s", body)
	}
}
