package httpx_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

// flakySink fails while down is set, else writes to the store.
type flakySink struct {
	store audit.Store
	down  atomic.Bool
}

func (s *flakySink) Write(ctx context.Context, r audit.Record) error {
	if s.down.Load() {
		return errors.New("audit store down")
	}
	return s.store.Write(ctx, r)
}

func TestAuditRecordsNameTheRequest(t *testing.T) {
	send := core.MustDefine("send", "Send money",
		func(_ context.Context, _ struct{}, in sendIn) (sendOut, error) { return sendOut{Sent: in.Amount}, nil },
		core.WithAuditRequired())
	store := audit.NewMemory(nil)
	sink := &flakySink{store: store}
	newServer := func(audited bool, clientIP func(*httpx.Request) string) *httptest.Server {
		t.Helper()
		cfg := core.Config{Audit: core.AuditConfig{Writer: audit.ForExecutor(sink)}}
		reg := core.MustRegistry(send)
		if !audited {
			reg = core.MustRegistry(core.MustDefine("send", "Send money",
				func(_ context.Context, _ struct{}, in sendIn) (sendOut, error) { return sendOut{Sent: in.Amount}, nil }))
			cfg.Audit = core.AuditConfig{}
		}
		h, err := httpx.New(core.MustExecutor(reg, noContext, cfg), httpx.Config{
			Verifier: auth.VerifierFunc(func(context.Context, *auth.Request) (*auth.Identity, error) {
				return &auth.Identity{Subject: "agt_1", AgentID: "agt_1"}, nil
			}),
			ClientIP: clientIP,
		})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv
	}
	post := func(srv *httptest.Server, route, body string, header map[string]string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+route, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, string(data)
	}
	records := func() []audit.Record {
		t.Helper()
		page, err := store.Query(context.Background(), audit.Query{})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = store.Sweep(context.Background(), page.Records[0].Time.Add(1))
		return page.Records
	}
	const execute, batch = "/capability/execute", "/capability/batch-execute"
	const call = `{"capability":"send","arguments":{"amount":5}}`
	generated := regexp.MustCompile(`^[0-9a-f]{32}$`)

	srv := newServer(true, nil)
	tests := []struct {
		name   string
		header string
		want   string // "" means a generated id
	}{
		{"the caller's id", "req-42.a_b", "req-42.a_b"},
		{"none sent", "", ""},
		{"too long", strings.Repeat("a", 129), ""},
		{"not printable", "a b", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(srv, execute, call, map[string]string{"X-Request-Id": tt.header})
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			id := resp.Header.Get("X-Request-Id")
			if tt.want != "" && id != tt.want || tt.want == "" && !generated.MatchString(id) {
				t.Fatalf("X-Request-Id %q, want %q", id, tt.want)
			}
			recs := records()
			if len(recs) != 2 {
				t.Fatalf("%d records", len(recs))
			}
			for _, r := range recs {
				if r.RequestID != id || r.ClientIP != "127.0.0.1" || r.AgentID != "agt_1" || r.Capability != "send" {
					t.Errorf("record %+v", r)
				}
			}
		})
	}

	// The items of a batch share their request's id.
	resp, body := post(srv, batch, `{"requests":[`+call+`,`+call+`]}`, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("batch: %d %s", resp.StatusCode, body)
	}
	recs := records()
	if len(recs) != 4 {
		t.Fatalf("batch: %d records", len(recs))
	}
	for _, r := range recs {
		if r.RequestID != resp.Header.Get("X-Request-Id") {
			t.Errorf("batch record names request %q, answer %q", r.RequestID, resp.Header.Get("X-Request-Id"))
		}
	}

	// The store is down: the call is refused before its handler.
	sink.down.Store(true)
	resp, body = post(srv, execute, call, nil)
	var env struct{ Error, Message string }
	_ = json.Unmarshal([]byte(body), &env)
	if resp.StatusCode != http.StatusServiceUnavailable || env.Error != "audit_unavailable" {
		t.Fatalf("with the store down: %d %s", resp.StatusCode, body)
	}
	sink.down.Store(false)

	// A trusted proxy's address, read by Config.ClientIP.
	proxied := newServer(true, func(r *httpx.Request) string {
		parts := strings.Split(r.Header("X-Forwarded-For"), ",")
		return strings.TrimSpace(parts[len(parts)-1])
	})
	post(proxied, execute, call, map[string]string{"X-Forwarded-For": "203.0.113.7, 198.51.100.2"})
	for _, r := range records() {
		if r.ClientIP != "198.51.100.2" {
			t.Errorf("client %q, want the proxy's last entry", r.ClientIP)
		}
	}

	// Without an audit trail, requests are not named.
	resp, _ = post(newServer(false, nil), execute, call, map[string]string{"X-Request-Id": "r1"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Request-Id") != "" {
		t.Errorf("without audit: %d, X-Request-Id %q", resp.StatusCode, resp.Header.Get("X-Request-Id"))
	}
}

// A streamed answer names its request too, and the stream's record
// carries that name.
func TestAuditRecordsNameAStream(t *testing.T) {
	store := audit.NewMemory(nil)
	exec := core.MustExecutor(core.MustRegistry(pinger), subjectOf,
		core.Config{Audit: core.AuditConfig{Writer: audit.ForExecutor(store)}})
	h, err := httpx.New(exec, httpx.Config{Verifier: bearerName})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/capability/execute", strings.NewReader(`{"capability":"pings"}`))
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-Request-Id", "stream-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || resp.Header.Get("X-Request-Id") != "stream-1" {
		t.Fatalf("%d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	page, err := store.Query(context.Background(), audit.Query{})
	if err != nil || len(page.Records) != 1 || page.Records[0].RequestID != "stream-1" || page.Records[0].Outcome != audit.OutcomeOK {
		t.Fatalf("records %v %+v", err, page.Records)
	}
}
