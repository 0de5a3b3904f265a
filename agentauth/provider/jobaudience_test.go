package provider_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/jobs"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// TestJobPollNeedsTheExecutionAudience: a job's status URL is a resource
// of the location that ran it, so the provider answers a poll or a
// cancellation only with an agent JWT made for where the job's capability
// executes, as it does an execution: a token made for the issuer (the
// provider's own endpoints) or for another capability's location is 401
// invalid_jwt there.
func TestJobPollNeedsTheExecutionAudience(t *testing.T) {
	ctx := context.Background()
	const issuer = "https://provider.example"
	elsewhere := issuer + "/elsewhere/capability/execute"
	release := make(chan struct{})
	defer close(release)
	report := core.MustDefine("report", "A report, as a job.", func(ctx context.Context, _ struct{}, _ struct{}) (struct{}, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return struct{}{}, nil
	}, core.WithAsync())
	remote := core.MustDefine("remote", "Runs elsewhere.", func(context.Context, struct{}, struct{}) (struct{}, error) {
		return struct{}{}, nil
	}, core.WithLocation(elsewhere))
	reg := core.MustRegistry(report, remote)
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", UserID: "usr_1"})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agt_1"})
	st := store.NewMemory(nil)
	if err := st.CreateHost(ctx, &store.Host{ID: host.ID, PublicKey: host.PublicJWK(), UserID: "usr_1", Status: agentcap.StatusActive}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateAgent(ctx, &store.Agent{ID: agent.ID, HostID: host.ID, UserID: "usr_1", Mode: agentcap.ModeDelegated,
		Status: agentcap.StatusActive, AgentKey: store.AgentKey{PublicKey: agent.PublicJWK()},
		Grants: []store.Grant{{Capability: "report", Status: agentcap.StatusActive}, {Capability: "remote", Status: agentcap.StatusActive}}}); err != nil {
		t.Fatal(err)
	}
	prov, err := provider.New(provider.Config{Issuer: issuer, ProviderName: "test", Store: st, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	exec := core.MustExecutor(reg, func(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) { return struct{}{}, nil }, core.Config{})
	m, err := jobs.New(jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	h, err := httpx.New(exec, httpx.Config{Verifier: prov, LongRunning: httpx.LongRunning{Jobs: m, BaseURL: issuer + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	do := func(method, target, aud, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+agent.Token(agentauthtest.Token{Audience: aud}))
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
	status, body := do(http.MethodPost, srv.URL+"/capability/execute", prov.DefaultLocation(), `{"capability":"report"}`)
	if status != http.StatusAccepted {
		t.Fatalf("report: %d %v", status, body)
	}
	statusURL := strings.Replace(body["status_url"].(string), issuer, srv.URL, 1)
	for _, aud := range []string{issuer, elsewhere} {
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			status, body := do(method, statusURL, aud, "")
			if status != http.StatusUnauthorized || body["error"] != string(agentcap.CodeInvalidJWT) {
				t.Errorf("%s with a token for %s: %d %v; want 401 invalid_jwt", method, aud, status, body)
			}
		}
	}
	if status, body := do(http.MethodGet, statusURL, prov.DefaultLocation(), ""); status != http.StatusOK || body["status"] != "pending" {
		t.Fatalf("poll with a token for the default location: %d %v; want the pending job", status, body)
	}
}
