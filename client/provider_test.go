package client_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
)

// fakeProvider is an Agent Auth provider for the client's tests: it
// registers agents, approves them when told to, reports status, grants
// requested capabilities and revokes. Its default location is a
// fakeLocation that knows its agents.
type fakeProvider struct {
	t   testing.TB
	srv *httptest.Server
	URL string
	Loc *fakeLocation

	mu sync.Mutex
	// Pending makes registrations and capability requests wait for
	// approval; ApproveAfter is the number of status polls after which
	// they are approved (Deny rejects instead).
	Pending      bool
	ApproveAfter int
	Deny         bool
	// StatusErrors are answered, in order, to the first status polls.
	StatusErrors []scripted
	// Caps is what capability/list and describe serve.
	Caps []client.Capability
	// Constraints are given to grants of a capability when it is
	// approved, whatever the agent proposed.
	Constraints map[string]map[string]json.RawMessage
	// CacheControl is the discovery document's Cache-Control.
	CacheControl string
	// Doc, when set, changes the discovery document before it is served.
	Doc func(map[string]any)
	// Confirmation, when set, serves GET /agent/confirmation, the
	// status URL of a person's confirmation, for agents whose token is
	// for the issuer.
	Confirmation func(w http.ResponseWriter, r *http.Request, agentID string)

	agents       map[string]*fakeAgent
	statusPolls  int
	discoveries  int
	lastRegister map[string]any
}

type fakeAgent struct {
	id, hostID, mode, status string
	key                      ed25519.PublicKey
	hostKey                  ed25519.PublicKey
	grants                   []client.Grant
}

func newFakeProvider(t testing.TB) *fakeProvider {
	t.Helper()
	p := &fakeProvider{
		t:            t,
		agents:       map[string]*fakeAgent{},
		CacheControl: "public, max-age=300",
		Caps: []client.Capability{
			{Name: "echo", Description: "Echo a message.", Input: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)},
			{Name: "transfer", Description: "Move money.", Input: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"},"currency":{"type":"string"}}}`)},
		},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-configuration", p.discovery)
	mux.HandleFunc("POST /agent/register", p.register)
	mux.HandleFunc("GET /agent/status", p.status)
	mux.HandleFunc("POST /agent/request-capability", p.requestCapability)
	mux.HandleFunc("POST /agent/revoke", p.revoke)
	mux.HandleFunc("GET /capability/list", p.list)
	mux.HandleFunc("GET /capability/describe", p.describe)
	mux.HandleFunc("GET /agent/confirmation", p.confirmation)
	p.srv = httptest.NewServer(mux)
	p.URL = p.srv.URL
	t.Cleanup(p.srv.Close)
	p.Loc = newFakeLocation(t, p)
	return p
}

// scripted is an error answer a test scripts: its status and code.
type scripted struct {
	status int
	code   agentcap.Code
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers in the error envelope. status is the answer's own,
// whatever the status of code, so that tests can send what a server of
// another kind might.
func writeError(w http.ResponseWriter, status int, code agentcap.Code, msg string) {
	writeJSON(w, status, map[string]string{"error": string(code), "message": msg})
}

func (p *fakeProvider) discovery(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	p.discoveries++
	doc := map[string]any{
		"version":          "1.0-draft",
		"provider_name":    "fake",
		"description":      "a provider for tests",
		"issuer":           p.URL,
		"default_location": p.Loc.Audience(),
		"algorithms":       []string{"Ed25519"},
		"modes":            []string{"delegated", "autonomous"},
		"approval_methods": []string{"device_authorization"},
		"endpoints": map[string]string{
			"register": "/agent/register", "capabilities": "/capability/list",
			"describe_capability": "/capability/describe", "execute": "/capability/execute",
			"request_capability": "/agent/request-capability", "status": "/agent/status",
			"revoke": "/agent/revoke",
		},
	}
	if p.Doc != nil {
		p.Doc(doc)
	}
	cc := p.CacheControl
	p.mu.Unlock()
	if cc != "" {
		w.Header().Set("Cache-Control", cc)
	}
	writeJSON(w, http.StatusOK, doc)
}

// claims reads the claims of a bearer token of type typ for aud; the
// caller verifies its signature, with the key it carries (host JWTs) or
// the agent's registered key (agent JWTs).
func (p *fakeProvider) claims(r *http.Request, typ, aud string) (map[string]any, *jose.JSONWebSignature, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return nil, nil, fmt.Errorf("no bearer token")
	}
	jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return nil, nil, err
	}
	if got := jws.Signatures[0].Header.ExtraHeaders["typ"]; got != typ {
		return nil, nil, fmt.Errorf("typ %v", got)
	}
	var c map[string]any
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &c); err != nil {
		return nil, nil, err
	}
	if c["aud"] != aud {
		return nil, nil, fmt.Errorf("aud %v", c["aud"])
	}
	return c, jws, nil
}

func (p *fakeProvider) hostClaims(r *http.Request) (map[string]any, ed25519.PublicKey, error) {
	c, jws, err := p.claims(r, agentcap.TypeHostJWT, p.URL)
	if err != nil {
		return nil, nil, err
	}
	key, err := jwkKey(c["host_public_key"])
	if err != nil {
		return nil, nil, err
	}
	if _, err := jws.Verify(key); err != nil {
		return nil, nil, err
	}
	tp, _ := client.Thumbprint(key)
	if c["iss"] != tp {
		return nil, nil, fmt.Errorf("iss %v is not the key's thumbprint", c["iss"])
	}
	return c, key, nil
}

func (p *fakeProvider) agentFromToken(r *http.Request) (*fakeAgent, error) {
	c, jws, err := p.claims(r, agentcap.TypeAgentJWT, p.URL)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	a := p.agents[fmt.Sprint(c["sub"])]
	p.mu.Unlock()
	if a == nil {
		return nil, fmt.Errorf("unknown agent")
	}
	if _, err := jws.Verify(a.key); err != nil {
		return nil, err
	}
	return a, nil
}

func jwkKey(v any) (ed25519.PublicKey, error) {
	m, _ := v.(map[string]any)
	x, _ := m["x"].(string)
	b, err := base64.RawURLEncoding.DecodeString(x)
	if err != nil || len(b) != ed25519.PublicKeySize || m["kty"] != "OKP" || m["crv"] != "Ed25519" {
		return nil, fmt.Errorf("bad JWK %v", v)
	}
	return ed25519.PublicKey(b), nil
}

// requested reads the names and constraints of requested capabilities.
func requested(raw []json.RawMessage) []client.Grant {
	var gs []client.Grant
	for _, r := range raw {
		var name string
		if json.Unmarshal(r, &name) == nil {
			gs = append(gs, client.Grant{Capability: name})
			continue
		}
		var obj struct {
			Name        string                     `json:"name"`
			Constraints map[string]json.RawMessage `json:"constraints"`
		}
		_ = json.Unmarshal(r, &obj)
		gs = append(gs, client.Grant{Capability: obj.Name, Constraints: obj.Constraints})
	}
	return gs
}

func (p *fakeProvider) register(w http.ResponseWriter, r *http.Request) {
	c, hostKey, err := p.hostClaims(r)
	if err != nil {
		writeError(w, http.StatusUnauthorized, agentcap.CodeInvalidJWT, err.Error())
		return
	}
	agentKey, err := jwkKey(c["agent_public_key"])
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_public_key", err.Error())
		return
	}
	var body struct {
		Name         string            `json:"name"`
		Mode         string            `json:"mode"`
		Capabilities []json.RawMessage `json:"capabilities"`
	}
	raw := map[string]any{}
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		writeError(w, http.StatusBadRequest, agentcap.CodeInvalidRequest, err.Error())
		return
	}
	b, _ := json.Marshal(raw)
	_ = json.Unmarshal(b, &body)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastRegister = raw
	tp, _ := client.Thumbprint(hostKey)
	a := &fakeAgent{
		id:      "agt_" + strconv.Itoa(len(p.agents)+1),
		hostID:  "hst_" + tp[:8],
		mode:    body.Mode,
		status:  agentcap.StatusActive,
		key:     agentKey,
		hostKey: hostKey,
		grants:  requested(body.Capabilities),
	}
	grantStatus := agentcap.StatusActive
	if p.Pending && body.Mode == agentcap.ModeDelegated {
		a.status = agentcap.StatusPending
		grantStatus = agentcap.StatusPending
	}
	for i, g := range a.grants {
		a.grants[i].Status = grantStatus
		if c, ok := p.Constraints[g.Capability]; ok && grantStatus == agentcap.StatusActive {
			a.grants[i].Constraints = c
		}
	}
	p.agents[a.id] = a
	p.statusPolls = 0
	writeJSON(w, http.StatusOK, p.answer(a, a.status == agentcap.StatusPending))
}

// answer renders an agent as registration and status answer it.
func (p *fakeProvider) answer(a *fakeAgent, withApproval bool) map[string]any {
	grants := []map[string]any{}
	for _, g := range a.grants {
		m := map[string]any{"capability": g.Capability, "status": g.Status}
		if g.Constraints != nil {
			m["constraints"] = g.Constraints
		}
		grants = append(grants, m)
	}
	ans := map[string]any{
		"agent_id": a.id, "host_id": a.hostID, "name": "agent", "mode": a.mode,
		"status": a.status, "agent_capability_grants": grants,
	}
	if withApproval {
		ans["approval"] = map[string]any{
			"method": "device_authorization", "verification_uri": p.URL + "/device",
			"verification_uri_complete": p.URL + "/device?code=ABCD-1234", "user_code": "ABCD-1234",
			"expires_in": 300, "interval": 1,
		}
	}
	return ans
}

func (p *fakeProvider) status(w http.ResponseWriter, r *http.Request) {
	if _, _, err := p.hostClaims(r); err != nil {
		writeError(w, http.StatusUnauthorized, agentcap.CodeInvalidJWT, err.Error())
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.StatusErrors) > 0 {
		e := p.StatusErrors[0]
		p.StatusErrors = p.StatusErrors[1:]
		writeError(w, e.status, e.code, "scripted")
		return
	}
	a := p.agents[r.URL.Query().Get("agent_id")]
	if a == nil {
		writeError(w, http.StatusNotFound, agentcap.CodeAgentNotFound, "no such agent")
		return
	}
	p.statusPolls++
	if p.statusPolls >= p.ApproveAfter {
		p.decide(a)
	}
	writeJSON(w, http.StatusOK, p.answer(a, false))
}

// decide settles a pending agent and its pending grants.
func (p *fakeProvider) decide(a *fakeAgent) {
	for i, g := range a.grants {
		if g.Status != agentcap.StatusPending {
			continue
		}
		if p.Deny {
			a.grants[i].Status = agentcap.StatusDenied
			continue
		}
		a.grants[i].Status = agentcap.StatusActive
		if c, ok := p.Constraints[g.Capability]; ok {
			a.grants[i].Constraints = c
		}
	}
	if a.status == agentcap.StatusPending {
		a.status = agentcap.StatusActive
		if p.Deny {
			a.status = agentcap.StatusRejected
		}
	}
}

func (p *fakeProvider) requestCapability(w http.ResponseWriter, r *http.Request) {
	a, err := p.agentFromToken(r)
	if err != nil {
		writeError(w, http.StatusUnauthorized, agentcap.CodeInvalidJWT, err.Error())
		return
	}
	var body struct {
		Capabilities []json.RawMessage `json:"capabilities"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, agentcap.CodeInvalidRequest, err.Error())
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	gs := requested(body.Capabilities)
	for i := range gs {
		gs[i].Status = agentcap.StatusActive
		if p.Pending {
			gs[i].Status = agentcap.StatusPending
		}
	}
	a.grants = append(a.grants, gs...)
	p.statusPolls = 0
	if !p.Pending {
		// The answer names the constraints the provider would impose;
		// the agent's grants keep what it asked for.
		for i, g := range gs {
			if c, ok := p.Constraints[g.Capability]; ok {
				gs[i].Constraints = c
			}
		}
	}
	ans := p.answer(&fakeAgent{id: a.id, hostID: a.hostID, mode: a.mode, status: a.status, grants: gs}, p.Pending)
	writeJSON(w, http.StatusOK, ans)
}

func (p *fakeProvider) revoke(w http.ResponseWriter, r *http.Request) {
	if _, _, err := p.hostClaims(r); err != nil {
		writeError(w, http.StatusUnauthorized, agentcap.CodeInvalidJWT, err.Error())
		return
	}
	var body struct {
		AgentID string `json:"agent_id"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.agents[body.AgentID]
	if a == nil {
		writeError(w, http.StatusNotFound, agentcap.CodeAgentNotFound, "no such agent")
		return
	}
	a.status = agentcap.StatusRevoked
	writeJSON(w, http.StatusOK, map[string]string{"agent_id": a.id, "status": agentcap.StatusRevoked})
}

func (p *fakeProvider) list(w http.ResponseWriter, r *http.Request) {
	a, err := p.agentFromToken(r)
	if err != nil {
		writeError(w, http.StatusUnauthorized, agentcap.CodeInvalidJWT, err.Error())
		return
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit <= 0 {
		limit = 1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var page []map[string]any
	end := min(start+limit, len(p.Caps))
	for _, c := range p.Caps[start:end] {
		e := map[string]any{"name": c.Name, "description": c.Description, "grant_status": agentcap.GrantStatusNotGranted}
		for _, g := range a.grants {
			if g.Capability == c.Name && g.Status == agentcap.StatusActive {
				e["grant_status"] = agentcap.GrantStatusGranted
			}
		}
		page = append(page, e)
	}
	ans := map[string]any{"capabilities": page, "has_more": end < len(p.Caps)}
	if end < len(p.Caps) {
		ans["next_cursor"] = strconv.Itoa(end)
	}
	writeJSON(w, http.StatusOK, ans)
}

func (p *fakeProvider) confirmation(w http.ResponseWriter, r *http.Request) {
	a, err := p.agentFromToken(r)
	if err != nil {
		writeError(w, http.StatusUnauthorized, agentcap.CodeInvalidJWT, err.Error())
		return
	}
	p.mu.Lock()
	serve := p.Confirmation
	p.mu.Unlock()
	if serve == nil {
		writeError(w, http.StatusNotFound, agentcap.CodeConfirmationNotFound, "no such confirmation")
		return
	}
	serve(w, r, a.id)
}

func (p *fakeProvider) describe(w http.ResponseWriter, r *http.Request) {
	if _, err := p.agentFromToken(r); err != nil {
		writeError(w, http.StatusUnauthorized, agentcap.CodeInvalidJWT, err.Error())
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.Caps {
		if c.Name == r.URL.Query().Get("name") {
			writeJSON(w, http.StatusOK, c)
			return
		}
	}
	writeError(w, http.StatusNotFound, agentcap.CodeCapabilityNotFound, "no such capability")
}

// sleeps records the waits of a client instead of spending them.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.d)
}

// newClient returns a client for loopback tests with its keys in memory.
func newClient(t testing.TB, mod ...func(*client.Config)) (*client.Client, *client.MemoryKeyStore, *sleeps) {
	t.Helper()
	keys := client.NewMemoryKeyStore()
	sl := &sleeps{}
	cfg := client.Config{AllowInsecureLoopback: true, Keys: keys, Sleep: sl.sleep, HostName: "test-host"}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, keys, sl
}

// connect connects an active agent with the given capabilities.
func connect(t testing.TB, c *client.Client, p *fakeProvider, caps ...client.CapabilityRequest) *client.Agent {
	t.Helper()
	a, st, err := c.Connect(context.Background(), p.URL, client.ConnectOptions{Name: "test", Capabilities: caps})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if st.Status != agentcap.StatusActive {
		t.Fatalf("status %s", st.Status)
	}
	return a
}
