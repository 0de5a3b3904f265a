package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wire "github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/agentauthtest"
	"github.com/agentcap/agentcap/testing/captest"
)

type echoIn struct {
	Message string `json:"message"`
}

var echoCap = core.MustDefine("echo", "Echo a message.",
	func(_ context.Context, _ struct{}, in echoIn) (echoIn, error) { return in, nil })

// provider is a small Agent Auth provider for the command's tests. Its
// default location is an agentcap resource server whose directory it
// fills as agents register, so executions are verified for real.
type provider struct {
	t       *testing.T
	URL     string
	loc     *agentauthtest.Server
	mu      sync.Mutex
	pending bool
	agents  map[string]*agentauth.Agent
	polls   int
	// deny names the capabilities whose requests the user refuses.
	deny map[string]bool
	// locations are the locations of capabilities served elsewhere than
	// at loc.
	locations map[string]string
}

func claimsOf(t *testing.T, r *http.Request) map[string]any {
	t.Helper()
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Errorf("no JWT on %s", r.URL.Path)
		return nil
	}
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c map[string]any
	_ = json.Unmarshal(b, &c)
	return c
}

func newProvider(t *testing.T) *provider {
	t.Helper()
	return newProviderWith(t, []core.Definer{echoCap})
}

// newProviderWith is newProvider with defs at its location, served with
// opts; describe answers for each of them.
func newProviderWith(t *testing.T, defs []core.Definer, opts ...agentauthtest.Options) *provider {
	t.Helper()
	return newProviderExec(t, captest.NewExecutor(t, captest.Static(struct{}{}), core.Config{}, defs...), opts...)
}

// newProviderExec is newProvider with exec at its location.
func newProviderExec(t *testing.T, exec *core.Executor, opts ...agentauthtest.Options) *provider {
	t.Helper()
	p := &provider{t: t, loc: agentauthtest.NewServer(t, exec, agentauth.Config{}, opts...), agents: map[string]*agentauth.Agent{}}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	answer := func(a *agentauth.Agent) map[string]any {
		return map[string]any{"agent_id": a.ID, "host_id": a.HostID, "mode": a.Mode, "status": a.Status, "agent_capability_grants": a.Grants}
	}
	mux.HandleFunc("GET /.well-known/agent-configuration", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, map[string]any{
			"version": "1.0-draft", "provider_name": "test", "issuer": p.URL, "default_location": p.loc.Audience(),
			"algorithms": []string{"Ed25519"}, "modes": []string{"delegated", "autonomous"},
			"approval_methods": []string{"device_authorization"}, "endpoints": map[string]string{},
		})
	})
	mux.HandleFunc("POST /agent/register", func(w http.ResponseWriter, r *http.Request) {
		c := claimsOf(t, r)
		var body struct {
			Mode         string            `json:"mode"`
			Capabilities []json.RawMessage `json:"capabilities"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		hostKey, _ := json.Marshal(c["host_public_key"])
		agentKey, _ := json.Marshal(c["agent_public_key"])
		p.mu.Lock()
		defer p.mu.Unlock()
		hostID := "hst_" + c["iss"].(string)[:6]
		if err := p.loc.Directory.PutHost(&agentauth.Host{ID: hostID, PublicKey: stripKID(hostKey), Status: wire.StatusActive}); err != nil {
			t.Error(err)
		}
		a := &agentauth.Agent{ID: "agt_" + string(rune('a'+len(p.agents))), HostID: hostID, Mode: body.Mode, Status: wire.StatusActive, PublicKey: stripKID(agentKey), Grants: []agentauth.Grant{}}
		for _, raw := range body.Capabilities {
			var name string
			var obj struct {
				Name        string                     `json:"name"`
				Constraints map[string]json.RawMessage `json:"constraints"`
			}
			if json.Unmarshal(raw, &name) != nil {
				_ = json.Unmarshal(raw, &obj)
				name = obj.Name
			}
			a.Grants = append(a.Grants, agentauth.Grant{Capability: name, Status: wire.StatusActive, Constraints: obj.Constraints})
		}
		resp := map[string]any{}
		if p.pending {
			a.Status = wire.StatusPending
			resp["approval"] = map[string]any{"method": "device_authorization", "verification_uri": p.URL + "/device", "user_code": "WXYZ-0000", "interval": 1, "expires_in": 60}
		}
		p.agents[a.ID] = a
		if err := p.loc.Directory.PutAgent(a); err != nil {
			t.Error(err)
		}
		for k, v := range answer(a) {
			resp[k] = v
		}
		reply(w, resp)
	})
	mux.HandleFunc("GET /agent/status", func(w http.ResponseWriter, r *http.Request) {
		if typ := claimsOf(t, r)["host_public_key"]; typ == nil {
			t.Error("status without a host JWT")
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		a := p.agents[r.URL.Query().Get("agent_id")]
		p.polls++
		if p.polls >= 2 && a.Status == wire.StatusPending {
			a.Status = wire.StatusActive
			_ = p.loc.Directory.PutAgent(a)
		}
		// The user decides on requested capabilities at once.
		for i, g := range a.Grants {
			if g.Status == wire.StatusPending && a.Status == wire.StatusActive {
				a.Grants[i].Status = wire.StatusActive
				if p.deny[g.Capability] {
					a.Grants[i].Status = wire.StatusDenied
				}
				_ = p.loc.Directory.PutAgent(a)
			}
		}
		reply(w, answer(a))
	})
	mux.HandleFunc("POST /agent/request-capability", func(w http.ResponseWriter, r *http.Request) {
		id, _ := claimsOf(t, r)["sub"].(string)
		var body struct {
			Capabilities []json.RawMessage `json:"capabilities"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		p.mu.Lock()
		defer p.mu.Unlock()
		a := p.agents[id]
		if a == nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		for _, raw := range body.Capabilities {
			var name string
			_ = json.Unmarshal(raw, &name)
			a.Grants = slices.DeleteFunc(a.Grants, func(g agentauth.Grant) bool { return g.Capability == name })
			a.Grants = append(a.Grants, agentauth.Grant{Capability: name, Status: wire.StatusPending})
		}
		if err := p.loc.Directory.PutAgent(a); err != nil {
			t.Error(err)
		}
		resp := answer(a)
		resp["approval"] = map[string]any{"method": "device_authorization", "verification_uri": p.URL + "/device", "user_code": "MORE-0001", "interval": 1, "expires_in": 60}
		reply(w, resp)
	})
	mux.HandleFunc("POST /agent/revoke", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			AgentID string `json:"agent_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		p.mu.Lock()
		defer p.mu.Unlock()
		a := p.agents[body.AgentID]
		a.Status = wire.StatusRevoked
		_ = p.loc.Directory.PutAgent(a)
		reply(w, map[string]string{"agent_id": a.ID, "status": "revoked"})
	})
	mux.HandleFunc("GET /capability/list", func(w http.ResponseWriter, _ *http.Request) {
		var caps []map[string]string
		for _, d := range exec.Registry().All() {
			caps = append(caps, map[string]string{"name": d.Name(), "description": d.Description(), "grant_status": "granted"})
		}
		p.mu.Lock()
		for name := range p.locations {
			caps = append(caps, map[string]string{"name": name, "description": name, "grant_status": "granted"})
		}
		p.mu.Unlock()
		reply(w, map[string]any{"capabilities": caps, "has_more": false})
	})
	mux.HandleFunc("GET /capability/describe", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		p.mu.Lock()
		loc, elsewhere := p.locations[name]
		p.mu.Unlock()
		if elsewhere {
			reply(w, map[string]any{"name": name, "description": name, "location": loc})
			return
		}
		d, ok := exec.Registry().Lookup(name)
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"capability_not_found","message":"no such capability"}`))
			return
		}
		entry := map[string]any{"name": d.Name(), "description": d.Description(), "input": d.InputSchema(),
			"risk": d.Risk(), "supports_preview": d.SupportsPreview(), "requires_confirmation": exec.NeedsConfirmation(d)}
		if d.SupportsPreview() {
			entry["preview_schema"] = d.PreviewSchema()
		}
		// As httpx describes a capability that declares them.
		if d.Title() != "" {
			entry["title"] = d.Title()
		}
		if d.ReadOnly() {
			entry["read_only"] = true
		}
		reply(w, entry)
	})
	return p
}

// stripKID drops the kid member, which agentauth's directory does not
// take in a stored key.
func stripKID(jwk []byte) json.RawMessage {
	var m map[string]any
	_ = json.Unmarshal(jwk, &m)
	delete(m, "kid")
	b, _ := json.Marshal(m)
	return b
}

// agentcap runs one command line and returns its exit code, stdout and
// stderr.
func agentcap(t *testing.T, state string, args ...string) (int, string, string) {
	t.Helper()
	return agentcapOn(t, state, nil, args...)
}

// agentcapOn is agentcap with stdin, a terminal when it is not nil.
func agentcapOn(t *testing.T, state string, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := &cli{stdin: stdin, terminal: func() bool { return stdin != nil }, stdout: &out, stderr: &errOut, getenv: func(k string) string {
		if k == "AGENTCAP_STATE" {
			return state
		}
		return ""
	}, clientConfig: func(cfg *client.Config) {
		cfg.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	}}
	code := c.run(context.Background(), args)
	return code, out.String(), errOut.String()
}

func TestCommands(t *testing.T) {
	p := newProvider(t)
	p.pending = true
	state := t.TempDir()
	lo := "--insecure-loopback"

	code, out, errOut := agentcap(t, state, "discover", p.URL, lo)
	if code != 0 || !strings.Contains(out, "issuer") || !strings.Contains(out, p.loc.Audience()) {
		t.Fatalf("discover: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := agentcap(t, state, "discover", p.URL); code != 1 || !strings.Contains(errOut, "AllowInsecureLoopback") {
		t.Errorf("discover without opt-in: exit %d, %q", code, errOut)
	}

	code, out, errOut = agentcap(t, state, "connect", p.URL, lo, "--capability", `echo:{"message":{"in":["hi","there"]}}`, "--mode", "delegated")
	if code != 0 {
		t.Fatalf("connect: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"Approval needed (device_authorization)", p.URL + "/device", "WXYZ-0000", "Waiting for approval.."} {
		if !strings.Contains(errOut, want) {
			t.Errorf("connect progress lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, "Connected agent agt_a") || !strings.Contains(out, `{"message":{"in":["hi","there"]}}`) {
		t.Errorf("connect output:\n%s", out)
	}
	entries, _ := os.ReadDir(filepath.Join(state, "keys"))
	for _, e := range entries {
		info, _ := e.Info()
		if info.Mode().Perm() != 0o600 {
			t.Errorf("key %s mode %v", e.Name(), info.Mode().Perm())
		}
	}

	code, out, _ = agentcap(t, state, "status", lo, "--json")
	var st client.AgentStatus
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Status != wire.StatusActive || st.AgentID != "agt_a" {
		t.Errorf("status --json: exit %d\n%s", code, out)
	}
	code, out, _ = agentcap(t, state, "capabilities", lo)
	if code != 0 || !strings.Contains(out, "echo") || !strings.Contains(out, "granted") {
		t.Errorf("capabilities: exit %d\n%s", code, out)
	}
	code, out, _ = agentcap(t, state, "describe", "echo", lo)
	if code != 0 || !strings.Contains(out, "input schema") {
		t.Errorf("describe: exit %d\n%s", code, out)
	}
	code, _, errOut = agentcap(t, state, "describe", "nothing", lo, "--json")
	if code != 1 || !strings.Contains(errOut, `"error":"capability_not_found"`) {
		t.Errorf("describe missing: exit %d\n%s", code, errOut)
	}

	code, out, _ = agentcap(t, state, "execute", "echo", "--args", `{"message":"hi"}`, lo, "--json")
	if code != 0 || strings.TrimSpace(out) != `{"message":"hi"}` {
		t.Errorf("execute: exit %d\n%s", code, out)
	}
	code, _, errOut = agentcap(t, state, "execute", "echo", "--args", `{"message":"bye"}`, lo)
	if code != 1 || !strings.Contains(errOut, "constraint_violated") || !strings.Contains(errOut, "violation: message") {
		t.Errorf("execute outside the constraint: exit %d\n%s", code, errOut)
	}

	code, out, _ = agentcap(t, state, "sign", lo, "--aud", "https://api.example/x", "--capability", "echo")
	if code != 0 {
		t.Fatalf("sign: exit %d", code)
	}
	parts := strings.Split(strings.TrimSpace(out), ".")
	if len(parts) != 3 {
		t.Fatalf("sign printed %q", out)
	}
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	_ = json.Unmarshal(b, &claims)
	got := map[string]any{"aud": claims["aud"], "sub": claims["sub"], "capabilities": claims["capabilities"]}
	want := map[string]any{"aud": "https://api.example/x", "sub": "agt_a", "capabilities": []any{"echo"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("signed claims (-want +got):\n%s", diff)
	}

	code, out, _ = agentcap(t, state, "revoke", lo)
	if code != 0 || !strings.Contains(out, "Revoked agent agt_a") {
		t.Errorf("revoke: exit %d\n%s", code, out)
	}
	if code, _, errOut := agentcap(t, state, "status", lo); code != 1 || !strings.Contains(errOut, "no agent connected") {
		t.Errorf("status after revoke: exit %d\n%s", code, errOut)
	}
}

func TestParseCapability(t *testing.T) {
	tests := []struct {
		in      string
		want    client.CapabilityRequest
		wantErr bool
	}{
		{"echo", client.CapabilityRequest{Name: "echo"}, false},
		{`transfer:{"amount":{"max":10}}`, client.CapabilityRequest{Name: "transfer", Constraints: map[string]json.RawMessage{"amount": json.RawMessage(`{"max":10}`)}}, false},
		{`transfer:{"amount":{"most":10}}`, client.CapabilityRequest{}, true},
		{`transfer:[1]`, client.CapabilityRequest{}, true},
		{`:{}`, client.CapabilityRequest{}, true},
	}
	for _, tt := range tests {
		got, err := parseCapability(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseCapability(%q) err = %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseCapability(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func FuzzParseCapability(f *testing.F) {
	f.Add(`transfer:{"amount":{"max":10},"currency":"USD"}`)
	f.Add("echo")
	f.Fuzz(func(t *testing.T, v string) {
		r, err := parseCapability(v)
		if err != nil {
			return
		}
		if r.Name == "" || strings.Contains(r.Name, ":") {
			t.Fatalf("name %q from %q", r.Name, v)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}
