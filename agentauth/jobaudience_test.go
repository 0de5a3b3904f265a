package agentauth_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/jobs"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// TestJobPollNeedsTheLocationsAudience: with Config.Audience, a job's
// status URL answers only agent JWTs made for where the job's capability
// executes, as an execution of it does: a token the verifier accepts for
// another audience (the issuer, another capability's location) is 401
// invalid_jwt, for a poll and for a cancellation, which then cancels
// nothing.
func TestJobPollNeedsTheLocationsAudience(t *testing.T) {
	const (
		issuer = "https://bank.example"
		locA   = "https://bank.example/a/capability/execute"
		locB   = "https://bank.example/b/capability/execute"
	)
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", UserID: "user_1"})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("report", nil).Grant("other", nil)
	dir, err := agentauthtest.NewDirectory([]*agentauthtest.Host{host}, []*agentauthtest.Agent{agent})
	if err != nil {
		t.Fatal(err)
	}
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{issuer, locA, locB}})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	report := core.MustDefine("report", "A report, as a job.",
		func(ctx context.Context, _ struct{}, in lrIn) (lrOut, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return lrOut{}, ctx.Err()
			}
			return lrOut(in), nil
		}, core.WithAsync(), core.WithLocation(locA))
	other := core.MustDefine("other", "Another capability.",
		func(_ context.Context, _ struct{}, in lrIn) (lrOut, error) { return lrOut(in), nil }, core.WithLocation(locB))
	exec := core.MustExecutor(core.MustRegistry(report, other), func(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) {
		return struct{}{}, nil
	}, core.Config{})
	location, err := agentauth.New(agentauth.Config{Sessions: v, Issuer: issuer, Audience: func(capability string) string {
		if def, ok := exec.Registry().Lookup(capability); ok {
			return def.Location()
		}
		return issuer
	}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := jobs.New(jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	h, err := httpx.New(exec, httpx.Config{Verifier: location, LongRunning: httpx.LongRunning{Jobs: m, BaseURL: issuer + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	do := func(method, target, aud, body string) (int, map[string]any) {
		t.Helper()
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, target, r)
		req.Header.Set("Authorization", "Bearer "+agent.Token(agentauthtest.Token{Audience: aud}))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, m
	}
	// An execution needs the capability's location.
	if status, body := do(http.MethodPost, srv.URL+"/capability/execute", locB, `{"capability":"report","arguments":{"text":"x"}}`); status != 401 || body["error"] != string(agentcap.CodeInvalidJWT) {
		t.Fatalf("report with a token for another location: %d %v", status, body)
	}
	status, body := do(http.MethodPost, srv.URL+"/capability/execute", locA, `{"capability":"report","arguments":{"text":"x"}}`)
	if status != http.StatusAccepted {
		t.Fatalf("report: %d %v", status, body)
	}
	statusURL := strings.Replace(body["status_url"].(string), issuer, srv.URL, 1)
	for _, aud := range []string{issuer, locB} {
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			status, body := do(method, statusURL, aud, "")
			if status != 401 || body["error"] != string(agentcap.CodeInvalidJWT) || body["message"] != "agent JWT audience is not this capability's location" {
				t.Errorf("%s of the job with a token for %s: %d %v; want 401 invalid_jwt", method, aud, status, body)
			}
		}
	}
	// The job was not cancelled: the token for its location polls it.
	if status, body := do(http.MethodGet, statusURL, locA, ""); status != 200 || body["status"] != "pending" {
		t.Fatalf("poll with the location's token: %d %v", status, body)
	}
	release <- struct{}{}
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, body := do(http.MethodGet, statusURL, locA, "")
		if status == 200 && body["status"] == "completed" {
			break
		}
		if status != 200 || body["status"] != "pending" || time.Now().After(deadline) {
			t.Fatalf("poll: %d %v", status, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
