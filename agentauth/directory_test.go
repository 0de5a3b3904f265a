package agentauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
)

func TestMemoryDirectoryPut(t *testing.T) {
	key := vfNewKey(t)
	other := vfNewKey(t)
	privJWK, _ := jose.JSONWebKey{Key: key.priv}.MarshalJSON()
	withMember := func(member string) json.RawMessage {
		var m map[string]any
		_ = json.Unmarshal(key.jwk, &m)
		m[strings.Split(member, "=")[0]] = strings.Split(member, "=")[1]
		b, _ := json.Marshal(m)
		return b
	}
	host := func(mod func(*agentauth.Host)) *agentauth.Host {
		h := &agentauth.Host{ID: "h", PublicKey: key.jwk, Status: agentcap.StatusActive}
		if mod != nil {
			mod(h)
		}
		return h
	}
	agent := func(mod func(*agentauth.Agent)) *agentauth.Agent {
		a := &agentauth.Agent{ID: "a", HostID: "h", Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive, PublicKey: other.jwk}
		if mod != nil {
			mod(a)
		}
		return a
	}
	hostTests := []struct {
		name    string
		host    *agentauth.Host
		wantErr string
	}{
		{"inline key", host(nil), ""},
		{"JWKS URL", host(func(h *agentauth.Host) { h.PublicKey = nil; h.JWKSURL = "https://keys.example/host.json" }), ""},
		{"every status", host(func(h *agentauth.Host) { h.Status = agentcap.StatusRejected }), ""},
		{"no id", host(func(h *agentauth.Host) { h.ID = "" }), "id is empty"},
		{"agent status", host(func(h *agentauth.Host) { h.Status = agentcap.StatusClaimed }), `status "claimed"`},
		{"no status", host(func(h *agentauth.Host) { h.Status = "" }), `status ""`},
		{"two key sources", host(func(h *agentauth.Host) { h.JWKSURL = "https://keys.example/host.json" }), "exactly one"},
		{"no key source", host(func(h *agentauth.Host) { h.PublicKey = nil }), "exactly one"},
		{"private JWK", host(func(h *agentauth.Host) { h.PublicKey = privJWK }), `private or symmetric member "d"`},
		{"symmetric JWK", host(func(h *agentauth.Host) { h.PublicKey = json.RawMessage(`{"kty":"oct","k":"c2VjcmV0"}`) }), `member "k"`},
		{"RSA JWK", host(func(h *agentauth.Host) { h.PublicKey = json.RawMessage(`{"kty":"RSA","n":"AQAB","e":"AQAB"}`) }), "only kty OKP"},
		{"EC JWK", host(func(h *agentauth.Host) { h.PublicKey = json.RawMessage(`{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}`) }), "only kty OKP"},
		{"X25519 JWK", host(func(h *agentauth.Host) { h.PublicKey = withMember("crv=X25519") }), "only kty OKP"},
		{"JWK alg RS256", host(func(h *agentauth.Host) { h.PublicKey = withMember("alg=RS256") }), "alg must be EdDSA"},
		{"JWK use enc", host(func(h *agentauth.Host) { h.PublicKey = withMember("use=enc") }), "use must be sig"},
		{"JWK short x", host(func(h *agentauth.Host) { h.PublicKey = json.RawMessage(`{"kty":"OKP","crv":"Ed25519","x":"AAAA"}`) }), "JWK"},
		{"JWK not an object", host(func(h *agentauth.Host) { h.PublicKey = json.RawMessage(`"key"`) }), "not a JSON object"},
		{"JWKS URL not absolute", host(func(h *agentauth.Host) { h.PublicKey = nil; h.JWKSURL = "/jwks.json" }), "absolute https URL"},
		{"JWKS URL ftp", host(func(h *agentauth.Host) { h.PublicKey = nil; h.JWKSURL = "ftp://keys.example/x" }), "absolute https URL"},
		{"JWKS URL with credentials", host(func(h *agentauth.Host) { h.PublicKey = nil; h.JWKSURL = "https://u:p@keys.example/x" }), "without credentials"},
		{"empty default capability", host(func(h *agentauth.Host) { h.DefaultCapabilities = []string{"a", ""} }), "default_capabilities[1]"},
	}
	for _, tt := range hostTests {
		t.Run("host/"+tt.name, func(t *testing.T) {
			err := agentauth.NewMemoryDirectory().PutHost(tt.host)
			vfCheckErr(t, err, tt.wantErr)
		})
	}

	expires := vfNow.Add(time.Hour)
	agentTests := []struct {
		name    string
		agent   *agentauth.Agent
		wantErr string
	}{
		{"inline key", agent(nil), ""},
		{"JWKS URL and kid", agent(func(a *agentauth.Agent) { a.PublicKey = nil; a.JWKSURL = "https://keys.example/a.json"; a.KID = "k1" }), ""},
		{"grants", agent(func(a *agentauth.Agent) {
			a.Grants = []agentauth.Grant{
				{Capability: "transfer", Status: agentcap.StatusActive, ExpiresAt: &expires, Constraints: map[string]json.RawMessage{"amount": json.RawMessage(`{"max":100}`)}},
				{Capability: "transfer", Status: agentcap.StatusDenied},
				{Capability: "close", Status: agentcap.StatusPending},
			}
		}), ""},
		{"autonomous claimed", agent(func(a *agentauth.Agent) { a.Mode = agentcap.ModeAutonomous; a.Status = agentcap.StatusClaimed }), ""},
		{"no id", agent(func(a *agentauth.Agent) { a.ID = "" }), "id is empty"},
		{"no host id", agent(func(a *agentauth.Agent) { a.HostID = "" }), "host_id is empty"},
		{"unknown host", agent(func(a *agentauth.Agent) { a.HostID = "nope" }), `host "nope" is not in the directory`},
		{"bad mode", agent(func(a *agentauth.Agent) { a.Mode = "supervised" }), `mode "supervised"`},
		{"bad status", agent(func(a *agentauth.Agent) { a.Status = agentcap.StatusDenied }), `status "denied"`},
		{"two key sources", agent(func(a *agentauth.Agent) { a.JWKSURL = "https://keys.example/a.json"; a.KID = "k1" }), "exactly one"},
		{"no key source", agent(func(a *agentauth.Agent) { a.PublicKey = nil }), "exactly one"},
		{"JWKS URL without kid", agent(func(a *agentauth.Agent) { a.PublicKey = nil; a.JWKSURL = "https://keys.example/a.json" }), "kid is required"},
		{"kid without JWKS URL", agent(func(a *agentauth.Agent) { a.KID = "k1" }), "kid is only meaningful"},
		{"private JWK", agent(func(a *agentauth.Agent) { a.PublicKey = privJWK }), "only public keys"},
		{"grant without capability", agent(func(a *agentauth.Agent) { a.Grants = []agentauth.Grant{{Status: agentcap.StatusActive}} }), "agent_capability_grants[0]: capability is empty"},
		{"grant bad status", agent(func(a *agentauth.Agent) {
			a.Grants = []agentauth.Grant{{Capability: "x", Status: agentcap.StatusRevoked}}
		}), `status "revoked"`},
		{"grant bad constraint JSON", agent(func(a *agentauth.Agent) {
			a.Grants = []agentauth.Grant{{Capability: "x", Status: agentcap.StatusActive, Constraints: map[string]json.RawMessage{"f": json.RawMessage(`{`)}}}
		}), `constraints["f"] is not valid JSON`},
	}
	for _, tt := range agentTests {
		t.Run("agent/"+tt.name, func(t *testing.T) {
			d := agentauth.NewMemoryDirectory()
			if err := d.PutHost(host(nil)); err != nil {
				t.Fatal(err)
			}
			vfCheckErr(t, d.PutAgent(tt.agent), tt.wantErr)
		})
	}
	if err := agentauth.NewMemoryDirectory().PutHost(nil); err == nil {
		t.Error("PutHost(nil) succeeded")
	}
	if err := agentauth.NewMemoryDirectory().PutAgent(nil); err == nil {
		t.Error("PutAgent(nil) succeeded")
	}
}

func vfCheckErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

func TestMemoryDirectoryCopies(t *testing.T) {
	key := vfNewKey(t)
	d := agentauth.NewMemoryDirectory()
	h := &agentauth.Host{ID: "h", PublicKey: append(json.RawMessage(nil), key.jwk...), Status: agentcap.StatusActive, DefaultCapabilities: []string{"a"}}
	exp := vfNow
	a := &agentauth.Agent{
		ID: "a", HostID: "h", Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive, PublicKey: key.jwk,
		Grants: []agentauth.Grant{{Capability: "c", Status: agentcap.StatusActive, ExpiresAt: &exp, Constraints: map[string]json.RawMessage{"f": json.RawMessage(`1`)}}},
	}
	if err := d.PutHost(h); err != nil {
		t.Fatal(err)
	}
	if err := d.PutAgent(a); err != nil {
		t.Fatal(err)
	}
	wantHost, wantAgent := *h, *a
	wantHost.PublicKey = append(json.RawMessage(nil), h.PublicKey...)

	// Changing what was put, or what was returned, changes nothing stored.
	h.DefaultCapabilities[0] = "changed"
	h.PublicKey[0] = 'X'
	a.Grants[0].Constraints["f"] = json.RawMessage(`2`)
	*a.Grants[0].ExpiresAt = vfNow.Add(time.Hour)
	got1, _ := d.Agent(context.Background(), "a")
	got1.Grants[0].Capability = "changed"
	got1.Grants[0].Constraints["g"] = json.RawMessage(`3`)

	gotHost, err := d.Host(context.Background(), "h")
	if err != nil {
		t.Fatal(err)
	}
	wantHost.DefaultCapabilities = []string{"a"}
	if diff := cmp.Diff(&wantHost, gotHost); diff != "" {
		t.Errorf("host (-want +got):\n%s", diff)
	}
	gotAgent, err := d.Agent(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	wantExp := vfNow
	wantAgent.Grants = []agentauth.Grant{{Capability: "c", Status: agentcap.StatusActive, ExpiresAt: &wantExp, Constraints: map[string]json.RawMessage{"f": json.RawMessage(`1`)}}}
	wantAgent.PublicKey = key.jwk
	if diff := cmp.Diff(&wantAgent, gotAgent); diff != "" {
		t.Errorf("agent (-want +got):\n%s", diff)
	}
}

func TestMemoryDirectoryNotFound(t *testing.T) {
	d := agentauth.NewMemoryDirectory()
	if _, err := d.Host(context.Background(), "nope"); !errors.Is(err, agentauth.ErrNotFound) {
		t.Errorf("Host: err = %v, want ErrNotFound", err)
	}
	if _, err := d.Agent(context.Background(), "nope"); !errors.Is(err, agentauth.ErrNotFound) {
		t.Errorf("Agent: err = %v, want ErrNotFound", err)
	}
}

func TestMemoryDirectoryConcurrent(t *testing.T) {
	key := vfNewKey(t)
	d := agentauth.NewMemoryDirectory()
	if err := d.PutHost(&agentauth.Host{ID: "h", PublicKey: key.jwk, Status: agentcap.StatusActive}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 50 {
				a := &agentauth.Agent{ID: fmt.Sprintf("a%d", i%5), HostID: "h", Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive, PublicKey: key.jwk,
					Grants: []agentauth.Grant{{Capability: fmt.Sprint(w), Status: agentcap.StatusActive}}}
				if err := d.PutAgent(a); err != nil {
					t.Error(err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := range 50 {
				if a, err := d.Agent(context.Background(), fmt.Sprintf("a%d", i%5)); err == nil {
					a.Grants[0].Capability = "mine"
				}
			}
		}()
	}
	wg.Wait()
}

func vfFixture(t testing.TB, hostKey, agentKey vfKey) string {
	return `{
  "hosts": [
    {"id": "hst_1", "public_key": ` + string(hostKey.jwk) + `, "user_id": "usr_1", "status": "active",
     "default_capabilities": ["check_balance"]},
    {"id": "hst_2", "jwks_url": "https://keys.example/hst_2.json", "user_id": null, "status": "pending"}
  ],
  "agents": [
    {"id": "agt_1", "host_id": "hst_1", "user_id": "usr_1", "mode": "delegated", "status": "active",
     "public_key": ` + string(agentKey.jwk) + `,
     "agent_capability_grants": [
       {"capability": "check_balance", "status": "active"},
       {"capability": "transfer", "status": "active", "constraints": {"amount": {"max": 1000}, "currency": "EUR"},
        "expires_at": "2026-03-01T13:00:00Z"}
     ]},
    {"id": "agt_2", "host_id": "hst_2", "mode": "autonomous", "status": "revoked",
     "jwks_url": "https://keys.example/agt_2.json", "kid": "k1"}
  ]
}`
}

func TestParseDirectory(t *testing.T) {
	hostKey, agentKey := vfNewKey(t), vfNewKey(t)
	d, err := agentauth.ParseDirectory(strings.NewReader(vfFixture(t, hostKey, agentKey)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	exp := time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)
	rawJSON := cmp.Transformer("compact", func(r json.RawMessage) string {
		var v any
		if json.Unmarshal(r, &v) != nil {
			return string(r)
		}
		b, _ := json.Marshal(v)
		return string(b)
	})
	wantAgents := map[string]*agentauth.Agent{
		"agt_1": {ID: "agt_1", HostID: "hst_1", UserID: "usr_1", Mode: "delegated", Status: "active", PublicKey: agentKey.jwk,
			Grants: []agentauth.Grant{
				{Capability: "check_balance", Status: "active"},
				{Capability: "transfer", Status: "active", ExpiresAt: &exp, Constraints: map[string]json.RawMessage{
					"amount": json.RawMessage(`{"max": 1000}`), "currency": json.RawMessage(`"EUR"`),
				}},
			}},
		"agt_2": {ID: "agt_2", HostID: "hst_2", Mode: "autonomous", Status: "revoked", JWKSURL: "https://keys.example/agt_2.json", KID: "k1", Grants: []agentauth.Grant{}},
	}
	for id, want := range wantAgents {
		got, err := d.Agent(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, rawJSON, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
			t.Errorf("agent %s (-want +got):\n%s", id, diff)
		}
	}
	wantHosts := map[string]*agentauth.Host{
		"hst_1": {ID: "hst_1", PublicKey: hostKey.jwk, UserID: "usr_1", Status: "active", DefaultCapabilities: []string{"check_balance"}},
		"hst_2": {ID: "hst_2", JWKSURL: "https://keys.example/hst_2.json", Status: "pending"},
	}
	for id, want := range wantHosts {
		got, err := d.Host(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, rawJSON); diff != "" {
			t.Errorf("host %s (-want +got):\n%s", id, diff)
		}
	}
	// A file's hosts are found by their key's thumbprint too, as host
	// JWTs name them.
	if h, err := d.HostByKeyThumbprint(ctx, hostKey.thumb); err != nil || h.ID != "hst_1" {
		t.Errorf("HostByKeyThumbprint: %+v, %v", h, err)
	}
}

func TestParseDirectoryErrors(t *testing.T) {
	key := vfNewKey(t)
	jwk := string(key.jwk)
	host := `{"id":"h1","public_key":` + jwk + `,"status":"active"}`
	agent := func(extra string) string {
		return `{"id":"a1","host_id":"h1","mode":"delegated","status":"active","public_key":` + jwk + extra + `}`
	}
	tests := []struct {
		name, doc, want string
	}{
		{"empty", ``, "malformed JSON"},
		{"not an object", `[]`, "not a JSON object"},
		{"truncated", `{"hosts":[`, "malformed JSON"},
		{"trailing data", `{} {}`, "data after the object"},
		{"unknown top-level member", `{"hosts":[],"users":[]}`, `unknown member "users"`},
		{"member in another case", `{"Hosts":[]}`, `unknown member "Hosts"`},
		{"duplicate member", `{"hosts":[],"hosts":[]}`, `duplicate member "hosts"`},
		{"hosts not an array", `{"hosts":{}}`, `"hosts" is not an array`},
		{"host not an object", `{"hosts":[1]}`, "hosts[0]: not a JSON object"},
		{"unknown host member", `{"hosts":[{"id":"h1","status":"active","jwks_url":"https://k.example/j","secret":1}]}`, `hosts[0] (id "h1"): unknown member "secret"`},
		{"host id a number", `{"hosts":[{"id":1}]}`, `hosts[0]: "id" is not a string`},
		{"host bad status", `{"hosts":[` + host + `,{"id":"h2","status":"enabled","jwks_url":"https://k.example/j"}]}`, `hosts[1] (id "h2"): status "enabled"`},
		{"host duplicate id", `{"hosts":[` + host + `,` + host + `]}`, `hosts[1] (id "h1"): duplicate host id`},
		{"host key not an object", `{"hosts":[{"id":"h1","status":"active","public_key":"abc"}]}`, `"public_key" is not an object`},
		{"host private key", `{"hosts":[{"id":"h1","status":"active","public_key":{"kty":"OKP","crv":"Ed25519","x":"AA","d":"AA"}}]}`, `hosts[0] (id "h1"): public_key: JWK has private`},
		{"default capabilities not strings", `{"hosts":[{"id":"h1","status":"active","jwks_url":"https://k.example/j","default_capabilities":[1]}]}`, `"default_capabilities"`},
		{"unknown agent member", `{"hosts":[` + host + `],"agents":[` + agent(`,"name":"x"`) + `]}`, `agents[0] (id "a1"): unknown member "name"`},
		{"agent unknown host", `{"hosts":[` + host + `],"agents":[{"id":"a1","host_id":"h9","mode":"delegated","status":"active","public_key":` + jwk + `}]}`, `agents[0] (id "a1"): host_id "h9" names no host`},
		{"agent duplicate id", `{"hosts":[` + host + `],"agents":[` + agent("") + `,` + agent("") + `]}`, `agents[1] (id "a1"): duplicate agent id`},
		{"agent bad mode", `{"hosts":[` + host + `],"agents":[{"id":"a1","host_id":"h1","mode":"x","status":"active","public_key":` + jwk + `}]}`, `agents[0] (id "a1"): mode "x"`},
		{"grants not an array", `{"hosts":[` + host + `],"agents":[` + agent(`,"agent_capability_grants":{}`) + `]}`, `"agent_capability_grants" is not an array`},
		{"unknown grant member", `{"hosts":[` + host + `],"agents":[` + agent(`,"agent_capability_grants":[{"capability":"c","status":"active","reason":"x"}]`) + `]}`, `agents[0] (id "a1"): agent_capability_grants[0]: unknown member "reason"`},
		{"grant bad status", `{"hosts":[` + host + `],"agents":[` + agent(`,"agent_capability_grants":[{"capability":"c","status":"granted"}]`) + `]}`, `agent_capability_grants[0]: status "granted"`},
		{"grant bad expires_at", `{"hosts":[` + host + `],"agents":[` + agent(`,"agent_capability_grants":[{"capability":"c","status":"active","expires_at":"tomorrow"}]`) + `]}`, `"expires_at" is not an RFC 3339 time`},
		{"grant numeric expires_at", `{"hosts":[` + host + `],"agents":[` + agent(`,"agent_capability_grants":[{"capability":"c","status":"active","expires_at":1772370000}]`) + `]}`, `"expires_at" is not a string`},
		{"constraints not an object", `{"hosts":[` + host + `],"agents":[` + agent(`,"agent_capability_grants":[{"capability":"c","status":"active","constraints":[]}]`) + `]}`, `"constraints": not a JSON object`},
		{"duplicate inside constraints", `{"hosts":[` + host + `],"agents":[` + agent(`,"agent_capability_grants":[{"capability":"c","status":"active","constraints":{"a":{"max":1,"max":2}}}]`) + `]}`, `duplicate member "max"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agentauth.ParseDirectory(strings.NewReader(tt.doc))
			vfCheckErr(t, err, tt.want)
		})
	}
}

func TestLoadDirectoryFile(t *testing.T) {
	hostKey, agentKey := vfNewKey(t), vfNewKey(t)
	path := filepath.Join(t.TempDir(), "directory.json")
	if err := os.WriteFile(path, []byte(vfFixture(t, hostKey, agentKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := agentauth.LoadDirectoryFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Agent(context.Background(), "agt_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := agentauth.LoadDirectoryFile(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("missing file: no error")
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"agents":[{}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := agentauth.LoadDirectoryFile(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "agents[0]") {
		t.Fatalf("bad file: err = %v, want it to name the file and the record", err)
	}
}

// FuzzParseDirectory: any input either fails or yields a directory whose
// every record passes the Put validation again.
func FuzzParseDirectory(f *testing.F) {
	f.Add(vfFixture(f, vfNewKey(f), vfNewKey(f)))
	f.Add(`{"hosts":[],"agents":[]}`)
	f.Add(`{"hosts":[{"id":"h","jwks_url":"https://k.example/j","status":"active"}],"agents":[{"id":"a","host_id":"h","mode":"autonomous","status":"active","jwks_url":"https://k.example/a","kid":"1","agent_capability_grants":[{"capability":"c","status":"active","constraints":{"x":{"in":[1,2]}}}]}]}`)
	f.Add(`{"hosts":[{"id":"h","public_key":{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},"status":"active"}]}`)
	f.Fuzz(func(t *testing.T, doc string) {
		d, err := agentauth.ParseDirectory(strings.NewReader(doc))
		if err != nil {
			return
		}
		var top struct {
			Hosts  []struct{ ID string }
			Agents []struct{ ID string }
		}
		if err := json.Unmarshal([]byte(doc), &top); err != nil {
			t.Fatalf("ParseDirectory accepted what encoding/json refuses: %v", err)
		}
		again := agentauth.NewMemoryDirectory()
		for _, h := range top.Hosts {
			got, err := d.Host(context.Background(), h.ID)
			if err != nil {
				t.Fatalf("host %q missing: %v", h.ID, err)
			}
			if err := again.PutHost(got); err != nil {
				t.Fatalf("parsed host %q fails PutHost: %v", h.ID, err)
			}
		}
		for _, a := range top.Agents {
			got, err := d.Agent(context.Background(), a.ID)
			if err != nil {
				t.Fatalf("agent %q missing: %v", a.ID, err)
			}
			if err := again.PutAgent(got); err != nil {
				t.Fatalf("parsed agent %q fails PutAgent: %v", a.ID, err)
			}
		}
	})
}

func ExampleParseDirectory() {
	d, err := agentauth.ParseDirectory(strings.NewReader(`{
	  "hosts": [{"id": "hst_1", "jwks_url": "https://keys.example/hosts/1.json", "status": "active"}],
	  "agents": [{"id": "agt_1", "host_id": "hst_1", "mode": "delegated", "status": "active",
	              "jwks_url": "https://keys.example/agents/1.json", "kid": "k1",
	              "agent_capability_grants": [{"capability": "check_balance", "status": "active"}]}]
	}`))
	if err != nil {
		panic(err)
	}
	a, _ := d.Agent(context.Background(), "agt_1")
	fmt.Println(a.HostID, a.KID, a.Grants[0].Capability)

	_, err = agentauth.ParseDirectory(strings.NewReader(`{"hosts": [{"id": "hst_1", "status": "active", "jwks_url": "https://keys.example/1.json", "owner": "x"}]}`))
	fmt.Println(err)
	// Output:
	// hst_1 k1 check_balance
	// agentauth: directory: hosts[0] (id "hst_1"): unknown member "owner"
}
