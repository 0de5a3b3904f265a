package httpx_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/idempotency"
)

type sendIn struct {
	Amount int `json:"amount"`
}

type sendOut struct {
	Sent int `json:"sent"`
}

func TestExecuteWithConfirmation(t *testing.T) {
	send := core.MustDefine("send", "Send money",
		func(_ context.Context, _ struct{}, in sendIn) (sendOut, error) { return sendOut{Sent: in.Amount}, nil },
		core.WithConfirmation(),
		core.WithPreview(func(_ context.Context, _ struct{}, in sendIn) (sendOut, error) { return sendOut{Sent: in.Amount}, nil }))
	mgr, err := confirm.New(confirm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	exec := core.MustExecutor(core.MustRegistry(send), core.ExecutorConfig[struct{}, string]{
		CreateContext: func(context.Context, string, *core.Definition, any) (struct{}, error) { return struct{}{}, nil },
		Confirmation:  core.ConfirmationConfig[string]{Confirmer: mgr, Subject: func(p string) string { return p }},
	})
	guard, err := idempotency.New(idempotency.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpx.New(exec, httpx.Config[string]{
		Authenticate: func(_ context.Context, r *httpx.Request) (string, error) {
			return strings.TrimPrefix(r.Header("Authorization"), "Bearer "), nil
		},
		LongRunning: httpx.LongRunning[string]{Owner: func(p string) string { return p }, Idempotency: guard},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	route := "/capability/execute"
	post := func(who, key, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+route, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+who)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		return resp.StatusCode, m
	}
	status, body := post("alice", "k1", `{"capability":"send","arguments":{"amount":5}}`)
	if status != 428 || body["error"] != "confirmation_required" {
		t.Fatalf("without a token: %d %v", status, body)
	}
	if p, _ := body["preview"].(map[string]any); p["sent"] != 5.0 {
		t.Errorf("preview %v", body["preview"])
	}
	token, _ := body["confirmation"].(map[string]any)["token"].(string)
	with := func(amount string) string {
		return `{"capability":"send","arguments":{"amount":` + amount + `},"confirmation_token":"` + token + `"}`
	}
	for _, x := range []struct {
		who, key, body string
		status         int
		code           string
	}{
		{"mallory", "", with("5"), 403, "invalid_confirmation"},
		{"alice", "", with("6"), 409, "confirmation_mismatch"},
		// The same key, now with the token: the 428 was not stored.
		{"alice", "k1", with("5"), 200, ""},
		// A replay returns the stored answer without spending a token.
		{"alice", "k1", with("5"), 200, ""},
		{"alice", "", with("5"), 409, "confirmation_used"},
	} {
		status, body := post(x.who, x.key, x.body)
		if status != x.status || (x.code != "" && body["error"] != x.code) {
			t.Errorf("%s %s: %d %v, want %d %s", x.who, x.body, status, body, x.status, x.code)
		}
	}

	// A preview answers the preview and a token, which then confirms.
	route = "/capability/preview"
	status, body = post("alice", "", `{"capability":"send","arguments":{"amount":7}}`)
	conf, _ := body["confirmation"].(map[string]any)
	if p, _ := body["preview"].(map[string]any); status != 200 || p["sent"] != 7.0 || conf["token"] == nil || conf["expires_at"] == nil {
		t.Fatalf("preview: %d %v", status, body)
	}
	token = conf["token"].(string)
	route = "/capability/execute"
	if status, body := post("alice", "", with("7")); status != 200 {
		t.Errorf("execute after preview: %d %v", status, body)
	}
}
