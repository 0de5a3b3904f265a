package httpx_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/jobs"
)

// jobGate is an Authorizer that is also an auth.JobAuthorizer: it lets
// its caller read jobs of the capabilities in allow only.
type jobGate struct {
	authorizer
	mu    sync.Mutex
	allow map[string]bool
	asked []string
}

func (g *jobGate) set(capability string, allow bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.allow[capability] = allow
}

func (g *jobGate) questions() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	q := g.asked
	g.asked = nil
	return q
}

func (g *jobGate) AuthorizeJob(_ context.Context, capability string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked = append(g.asked, capability)
	if !g.allow[capability] {
		return errors.New("the token was made for another location")
	}
	return nil
}

// TestStatusAsksTheJobAuthorizer: a poll or cancellation of the caller's
// own job is answered only when the identity's auth.JobAuthorizer admits
// it for the job's capability; a refusal that is not an *agentcap.Error
// is 403 unauthorized, and a refused DELETE cancels nothing.
func TestStatusAsksTheJobAuthorizer(t *testing.T) {
	m, err := jobs.New(jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	gate := &jobGate{allow: map[string]bool{"sleep_async": true}}
	verifier := auth.VerifierFunc(func(context.Context, *auth.Request) (*auth.Identity, error) {
		return &auth.Identity{Subject: "alice", Authorizer: gate}, nil
	})
	h, err := httpx.New(longExecutor(t, asyncSleeper), httpx.Config{Verifier: verifier,
		LongRunning: httpx.LongRunning{Jobs: m, BaseURL: "https://example.test/"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	do := func(method, target, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer alice")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, out
	}
	status, body := do(http.MethodPost, srv.URL+"/capability/execute", `{"capability":"sleep_async","arguments":{"millis":200}}`)
	if status != http.StatusAccepted {
		t.Fatalf("execute: %d %v", status, body)
	}
	statusURL := strings.Replace(body["status_url"].(string), "https://example.test", srv.URL, 1)
	gate.set("sleep_async", false)
	for _, method := range []string{http.MethodDelete, http.MethodGet} {
		if status, body := do(method, statusURL, ""); status != http.StatusForbidden || body["error"] != "unauthorized" {
			t.Errorf("%s refused by the job authorizer: %d %v; want 403 unauthorized", method, status, body)
		}
	}
	gate.set("sleep_async", true)
	if status, body := do(http.MethodGet, statusURL, ""); status != http.StatusOK || body["status"] == "failed" {
		t.Fatalf("poll once admitted: %d %v; want the job, not cancelled", status, body)
	}
	if asked := gate.questions(); len(asked) != 3 || asked[0] != "sleep_async" {
		t.Fatalf("the job authorizer was asked about %q", asked)
	}
	// A job that is not the caller's is not found, before anything is
	// asked.
	if status, _ := do(http.MethodGet, srv.URL+"/capability/status?id=job_nobody", ""); status != http.StatusNotFound {
		t.Fatalf("unknown job: %d", status)
	}
	if asked := gate.questions(); len(asked) != 0 {
		t.Fatalf("asked %q about a job that is not the caller's", asked)
	}
}
