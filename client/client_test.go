package client_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
)

func TestDiscoverCachesAsCacheControlSays(t *testing.T) {
	tests := []struct {
		name         string
		cacheControl string
		advance      time.Duration
		wantFetches  int
	}{
		{"fresh max-age", "public, max-age=300", 299 * time.Second, 1},
		{"stale max-age", "public, max-age=300", 301 * time.Second, 2},
		{"no header means an hour", "", 59 * time.Minute, 1},
		{"no header expires after an hour", "", 61 * time.Minute, 2},
		{"no-store", "no-store", time.Second, 2},
		{"no-cache", "no-cache, max-age=600", time.Second, 2},
		{"capped at a day", "max-age=31536000", 25 * time.Hour, 2},
		{"a day is allowed", "max-age=31536000", 23 * time.Hour, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newFakeProvider(t)
			p.CacheControl = tt.cacheControl
			now := time.Unix(1767268800, 0)
			c, _, _ := newClient(t, func(cfg *client.Config) { cfg.Now = func() time.Time { return now } })
			ctx := context.Background()
			d, err := c.Discover(ctx, p.URL)
			if err != nil {
				t.Fatal(err)
			}
			if d.Issuer != p.URL || d.DefaultLocationURL() != p.Loc.Audience() {
				t.Errorf("issuer %s, default location %s", d.Issuer, d.DefaultLocationURL())
			}
			now = now.Add(tt.advance)
			if _, err := c.Discover(ctx, p.URL); err != nil {
				t.Fatal(err)
			}
			if p.discoveries != tt.wantFetches {
				t.Errorf("fetches = %d, want %d", p.discoveries, tt.wantFetches)
			}
		})
	}
}

func TestDiscoverStaleCopyWhenProviderIsDown(t *testing.T) {
	p := newFakeProvider(t)
	now := time.Unix(1767268800, 0)
	c, _, _ := newClient(t, func(cfg *client.Config) { cfg.Now = func() time.Time { return now } })
	if _, err := c.Discover(context.Background(), p.URL); err != nil {
		t.Fatal(err)
	}
	p.srv.Close()
	now = now.Add(time.Hour)
	if _, err := c.Discover(context.Background(), p.URL); err != nil {
		t.Errorf("stale copy within a day: %v", err)
	}
	now = now.Add(24 * time.Hour)
	if _, err := c.Discover(context.Background(), p.URL); err == nil {
		t.Error("a copy older than a day was used")
	}
}

func TestDiscoverRefuses(t *testing.T) {
	tests := []struct {
		name    string
		doc     func(map[string]any)
		wantErr string
	}{
		{"major version 2", func(d map[string]any) { d["version"] = "2.0" }, "unsupported protocol version"},
		{"no version", func(d map[string]any) { delete(d, "version") }, "unsupported protocol version"},
		{"garbage version", func(d map[string]any) { d["version"] = "one" }, "unsupported protocol version"},
		{"no issuer", func(d map[string]any) { delete(d, "issuer") }, "no issuer"},
		{"http issuer off loopback", func(d map[string]any) { d["issuer"] = "http://example.com" }, "must use https"},
		{"no Ed25519", func(d map[string]any) { d["algorithms"] = []string{"RS256"} }, "do not include Ed25519"},
		{"endpoint off origin", func(d map[string]any) {
			d["endpoints"] = map[string]string{"register": "https://evil.example/agent/register"}
		}, "not on the issuer's origin"},
		{"http location off loopback", func(d map[string]any) { d["default_location"] = "http://example.com/x" }, "must use https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newFakeProvider(t)
			p.Doc = tt.doc
			c, _, _ := newClient(t)
			_, err := c.Discover(context.Background(), p.URL)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
	t.Run("version error is typed", func(t *testing.T) {
		p := newFakeProvider(t)
		p.Doc = func(d map[string]any) { d["version"] = "2.0-draft" }
		c, _, _ := newClient(t)
		if _, err := c.Discover(context.Background(), p.URL); !errors.Is(err, client.ErrUnsupportedVersion) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestDiscoverLoopbackNeedsOptIn(t *testing.T) {
	p := newFakeProvider(t)
	c, _, _ := newClient(t, func(cfg *client.Config) { cfg.AllowInsecureLoopback = false })
	if _, err := c.Discover(context.Background(), p.URL); !errors.Is(err, client.ErrInsecureURL) {
		t.Errorf("plain http to loopback without opt-in: err = %v", err)
	}
	if _, err := c.Discover(context.Background(), "http://example.com"); !errors.Is(err, client.ErrInsecureURL) {
		t.Errorf("plain http to a public host: err = %v", err)
	}
}

func TestDiscoverLocations(t *testing.T) {
	// A provider mounted under a path, serving its document at
	// <base>/agent-configuration with absolute endpoint URLs.
	var srvURL string
	var paths []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if r.URL.Path != "/api/auth/agent-configuration" {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"version": "1.0-draft", "provider_name": "mounted", "issuer": srvURL + "/api/auth",
			"algorithms": []string{"Ed25519"}, "modes": []string{"delegated"},
			"endpoints": map[string]string{"execute": srvURL + "/api/auth/capability/execute", "status": "agent/status"},
		})
	}))
	defer srv.Close()
	srvURL = srv.URL
	c, _, _ := newClient(t)
	d, err := c.Discover(context.Background(), srv.URL+"/api/auth/")
	if err != nil {
		t.Fatal(err)
	}
	wantPaths := []string{"/.well-known/agent-configuration/api/auth", "/api/auth/agent-configuration"}
	if diff := cmp.Diff(wantPaths, paths); diff != "" {
		t.Errorf("paths tried (-want +got):\n%s", diff)
	}
	got := map[string]string{"location": d.DefaultLocationURL()}
	for _, name := range []string{"status", "register"} {
		got[name], _ = d.EndpointURL(name)
	}
	want := map[string]string{
		"location": srv.URL + "/api/auth/capability/execute",
		"status":   srv.URL + "/api/auth/agent/status",
		"register": srv.URL + "/api/auth/agent/register",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resolved URLs (-want +got):\n%s", diff)
	}
}

func TestConnectDelegatedWaitsForApproval(t *testing.T) {
	p := newFakeProvider(t)
	p.Pending = true
	p.ApproveAfter = 2
	p.StatusErrors = []scripted{{400, agentcap.CodeSlowDown}, {400, agentcap.CodeAuthorizationPending}, {503, "unavailable"}}
	c, _, sl := newClient(t)
	var approvals []client.Approval
	var polls []string
	a, st, err := c.Connect(context.Background(), p.URL, client.ConnectOptions{
		Name:         "reader",
		Capabilities: []client.CapabilityRequest{{Name: "echo"}, {Name: "transfer", Constraints: map[string]json.RawMessage{"amount": json.RawMessage(`{"max":100}`)}}},
		Reason:       "tests",
		OnApproval:   func(ap client.Approval) { approvals = append(approvals, ap) },
		OnPoll:       func(s client.AgentStatus) { polls = append(polls, s.Status) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != agentcap.StatusActive || a.ID() == "" {
		t.Fatalf("status %+v", st)
	}
	wantApproval := []client.Approval{{
		Method: "device_authorization", VerificationURI: p.URL + "/device", VerificationURIComplete: p.URL + "/device?code=ABCD-1234",
		UserCode: "ABCD-1234", ExpiresIn: 300, Interval: 1, AgentID: a.ID(),
	}}
	if diff := cmp.Diff(wantApproval, approvals); diff != "" {
		t.Errorf("approvals (-want +got):\n%s", diff)
	}
	// interval 1 s; slow_down adds 5 s; authorization_pending keeps it;
	// a 503 doubles the wait once; then back to the interval.
	want := []time.Duration{time.Second, 6 * time.Second, 6 * time.Second, 12 * time.Second, 6 * time.Second}
	if diff := cmp.Diff(want, sl.waits()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"pending", "active"}, polls); diff != "" {
		t.Errorf("polls (-want +got):\n%s", diff)
	}
	wantBody := map[string]any{
		"name": "reader", "mode": "delegated", "host_name": "test-host", "reason": "tests",
		"capabilities": []any{"echo", map[string]any{"name": "transfer", "constraints": map[string]any{"amount": map[string]any{"max": 100.0}}}},
	}
	if diff := cmp.Diff(wantBody, p.lastRegister); diff != "" {
		t.Errorf("registration body (-want +got):\n%s", diff)
	}
	res, err := a.Execute(context.Background(), "echo", map[string]string{"message": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Data) != `{"message":"hi"}` {
		t.Errorf("data %s", res.Data)
	}
}

func TestConnectOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(*fakeProvider)
		mode    string
		ctx     func() (context.Context, context.CancelFunc)
		wantErr error
		status  string
	}{
		{"autonomous is active at once", func(p *fakeProvider) { p.Pending = true }, agentcap.ModeAutonomous, nil, nil, agentcap.StatusActive},
		{"rejected", func(p *fakeProvider) { p.Pending, p.Deny = true, true }, agentcap.ModeDelegated, nil, client.ErrApprovalDenied, agentcap.StatusPending},
		{"access_denied while polling", func(p *fakeProvider) {
			p.Pending, p.ApproveAfter = true, 5
			p.StatusErrors = []scripted{{403, agentcap.CodeAccessDenied}}
		}, agentcap.ModeDelegated, nil, client.ErrApprovalDenied, agentcap.StatusPending},
		{"expired_token while polling", func(p *fakeProvider) {
			p.Pending, p.ApproveAfter = true, 5
			p.StatusErrors = []scripted{{400, agentcap.CodeExpiredToken}}
		}, agentcap.ModeDelegated, nil, client.ErrApprovalExpired, agentcap.StatusPending},
		{"context ends while waiting", func(p *fakeProvider) { p.Pending, p.ApproveAfter = true, 1000 },
			agentcap.ModeDelegated, func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 50*time.Millisecond)
			},
			context.DeadlineExceeded, agentcap.StatusPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newFakeProvider(t)
			tt.setup(p)
			c, keys, _ := newClient(t, func(cfg *client.Config) {
				cfg.Sleep = func(ctx context.Context, d time.Duration) error {
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(time.Millisecond):
						return nil
					}
				}
			})
			ctx, cancel := context.Background(), func() {}
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			a, st, err := c.Connect(ctx, p.URL, client.ConnectOptions{Mode: tt.mode, Capabilities: client.Capabilities("echo")})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if a == nil || st == nil {
				t.Fatal("no agent or status returned")
			}
			if st.Status != tt.status {
				t.Errorf("status %s, want %s", st.Status, tt.status)
			}
			_, kerr := keys.Load(context.Background(), a.Connection().AgentKey)
			if kept := kerr == nil; kept != (tt.wantErr == nil || errors.Is(tt.wantErr, context.DeadlineExceeded)) {
				t.Errorf("agent key kept: %v (err %v)", kept, kerr)
			}
		})
	}
}

func TestConnectRefusesUnsupportedMode(t *testing.T) {
	p := newFakeProvider(t)
	p.Doc = func(d map[string]any) { d["modes"] = []string{"delegated"} }
	c, keys, _ := newClient(t)
	_, _, err := c.Connect(context.Background(), p.URL, client.ConnectOptions{Mode: agentcap.ModeAutonomous})
	if err == nil || !strings.Contains(err.Error(), "does not support autonomous") {
		t.Fatalf("err = %v", err)
	}
	if len(keys.Names()) != 0 {
		t.Errorf("keys created for a refused connection: %v", keys.Names())
	}
}

func TestIdentities(t *testing.T) {
	p := newFakeProvider(t)
	dir := t.TempDir()
	newFileClient := func() *client.Client {
		c, err := client.New(client.Config{AllowInsecureLoopback: true, Keys: client.FileKeyStore{Dir: dir}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a1 := connect(t, newFileClient(), p, client.Capabilities("echo")...)
	a2 := connect(t, newFileClient(), p, client.Capabilities("echo")...)
	c1, c2 := a1.Connection(), a2.Connection()
	if c1.HostKey != c2.HostKey {
		t.Errorf("host key changed between clients: %s, %s", c1.HostKey, c2.HostKey)
	}
	if c1.AgentKey == c2.AgentKey {
		t.Errorf("two connections share the agent key %s", c1.AgentKey)
	}
	if c1.AgentID == c2.AgentID || p.agents[c1.AgentID].hostID != p.agents[c2.AgentID].hostID {
		t.Errorf("agents %s and %s should be distinct under one host", c1.AgentID, c2.AgentID)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Errorf("key files: %d, want 3 (one host, two agents)", len(entries))
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v", e.Name(), info.Mode().Perm())
		}
	}
	// A resumed agent signs with the same key.
	resumed, err := newFileClient().Resume(context.Background(), c1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resumed.Execute(context.Background(), "echo", map[string]string{"message": "again"}); err != nil {
		t.Errorf("resumed agent: %v", err)
	}
	// A key file others can read is refused.
	name := filepath.Join(dir, c1.AgentKey+".jwk")
	if err := os.Chmod(name, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := newFileClient().Resume(context.Background(), c1); err == nil || !strings.Contains(err.Error(), "accessible to other users") {
		t.Errorf("world-readable key: err = %v", err)
	}
}

// tokenClaims decodes the claims of a compact JWT without verifying it.
func tokenClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWT: %q", tok)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func tokenHeader(t *testing.T, tok string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h
}
