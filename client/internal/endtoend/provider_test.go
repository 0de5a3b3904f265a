// Package endtoend_test runs the client against agentcap's own capability
// location (httpx behind the Agent Auth verifier, with jobs, idempotency
// keys and confirmations), where the client's own tests use a fake
// location: what is tested here is that the two agree on the wire.
package endtoend_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// provider is an Agent Auth provider of the least kind: a discovery
// document whose default location is loc, and registration, which puts
// the agent and its host in loc's directory with an active grant of each
// capability asked for, at once. Its answer names every grant's location,
// so the client never needs to describe a capability. It serves the
// status URL of a person's confirmation through confirmation.
type provider struct {
	t   *testing.T
	URL string
	loc *agentauthtest.Server

	mu     sync.Mutex
	agents map[string]ed25519.PublicKey
	// confirmation, when set, answers GET /agent/confirmation for the
	// agent whose token it verified.
	confirmation func(w http.ResponseWriter, r *http.Request, agentID string)
}

func newProvider(t *testing.T, loc *agentauthtest.Server) *provider {
	t.Helper()
	p := &provider{t: t, loc: loc, agents: map[string]ed25519.PublicKey{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, agentcap.Discovery{
			Version: agentcap.ProtocolVersion, ProviderName: "test", Issuer: p.URL, DefaultLocation: loc.Audience(),
			Algorithms: []string{agentcap.AlgorithmEd25519}, Modes: []string{agentcap.ModeDelegated},
			Endpoints: agentcap.Endpoints{Register: "/agent/register"},
		})
	})
	mux.HandleFunc("POST /agent/register", p.register)
	mux.HandleFunc("GET /agent/confirmation", p.serveConfirmation)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, err *agentcap.Error) {
	_ = agentcap.WriteError(w, err)
}

// token verifies the bearer token of r: of type typ, for the provider,
// signed by key (nil: by the host key it carries, as at registration).
func (p *provider) token(r *http.Request, typ string, key func(claims map[string]any) ed25519.PublicKey) (map[string]any, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return nil, fmt.Errorf("no bearer token")
	}
	jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return nil, err
	}
	if got := jws.Signatures[0].Header.ExtraHeaders["typ"]; got != typ {
		return nil, fmt.Errorf("typ %v", got)
	}
	var c map[string]any
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &c); err != nil {
		return nil, err
	}
	if c["aud"] != p.URL {
		return nil, fmt.Errorf("aud %v", c["aud"])
	}
	k := key(c)
	if k == nil {
		return nil, fmt.Errorf("no key")
	}
	if _, err := jws.Verify(k); err != nil {
		return nil, err
	}
	return c, nil
}

// publicKey reads an Ed25519 JWK claim.
func publicKey(v any) ed25519.PublicKey {
	m, _ := v.(map[string]any)
	x, _ := m["x"].(string)
	b, err := base64.RawURLEncoding.DecodeString(x)
	if err != nil || len(b) != ed25519.PublicKeySize || m["kty"] != "OKP" || m["crv"] != "Ed25519" {
		return nil
	}
	return b
}

func jwk(k ed25519.PublicKey) json.RawMessage {
	return json.RawMessage(`{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(k) + `"}`)
}

func (p *provider) register(w http.ResponseWriter, r *http.Request) {
	c, err := p.token(r, agentcap.TypeHostJWT, func(c map[string]any) ed25519.PublicKey { return publicKey(c["host_public_key"]) })
	if err != nil {
		writeError(w, agentcap.NewError(agentcap.CodeInvalidJWT, err.Error()))
		return
	}
	agentKey := publicKey(c["agent_public_key"])
	var body struct {
		Capabilities []string `json:"capabilities"`
	}
	if agentKey == nil || json.NewDecoder(r.Body).Decode(&body) != nil {
		writeError(w, agentcap.NewError(agentcap.CodeInvalidRequest, "no agent key, or capabilities that are not plain names"))
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	hostID := "hst_" + strconv.Itoa(len(p.agents)+1)
	agentID := "agt_" + strconv.Itoa(len(p.agents)+1)
	p.agents[agentID] = agentKey
	host := &agentauth.Host{ID: hostID, PublicKey: jwk(publicKey(c["host_public_key"])), UserID: "usr_1", Status: agentcap.StatusActive}
	rec := &agentauth.Agent{ID: agentID, HostID: hostID, UserID: "usr_1", Mode: agentcap.ModeDelegated,
		Status: agentcap.StatusActive, PublicKey: jwk(agentKey), Grants: []agentauth.Grant{}}
	var grants []client.Grant
	for _, name := range body.Capabilities {
		rec.Grants = append(rec.Grants, agentauth.Grant{Capability: name, Status: agentcap.StatusActive})
		grants = append(grants, client.Grant{Capability: name, Status: agentcap.StatusActive, Location: p.loc.Audience()})
	}
	if err := p.loc.Directory.PutHost(host); err != nil {
		p.t.Errorf("put host: %v", err)
	}
	if err := p.loc.Directory.PutAgent(rec); err != nil {
		p.t.Errorf("put agent: %v", err)
	}
	writeJSON(w, http.StatusOK, client.AgentStatus{AgentID: agentID, HostID: hostID, Name: "test",
		Status: agentcap.StatusActive, Mode: agentcap.ModeDelegated, Grants: grants})
}

func (p *provider) serveConfirmation(w http.ResponseWriter, r *http.Request) {
	c, err := p.token(r, agentcap.TypeAgentJWT, func(c map[string]any) ed25519.PublicKey {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.agents[fmt.Sprint(c["sub"])]
	})
	if err != nil {
		writeError(w, agentcap.NewError(agentcap.CodeInvalidJWT, err.Error()))
		return
	}
	p.mu.Lock()
	serve := p.confirmation
	p.mu.Unlock()
	if serve == nil {
		writeError(w, agentcap.NewError(agentcap.CodeConfirmationNotFound, "no such confirmation"))
		return
	}
	serve(w, r, fmt.Sprint(c["sub"]))
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
	return append([]time.Duration(nil), s.d...)
}

// connect connects an agent with the given capabilities through a fresh
// client for loopback, whose waits are recorded.
func connect(t *testing.T, p *provider, capabilities ...string) (*client.Agent, *sleeps) {
	t.Helper()
	sl := &sleeps{}
	c, err := client.New(client.Config{AllowInsecureLoopback: true, Keys: client.NewMemoryKeyStore(), Sleep: sl.sleep, HostName: "test-host"})
	if err != nil {
		t.Fatal(err)
	}
	a, st, err := c.Connect(context.Background(), p.URL, client.ConnectOptions{Name: "test", Capabilities: client.Capabilities(capabilities...)})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if st.Status != agentcap.StatusActive {
		t.Fatalf("status %s", st.Status)
	}
	return a, sl
}
