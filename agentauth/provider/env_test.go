package provider_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type echoIO struct {
	Message string `json:"message"`
}

type transferIn struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

type transferOut struct {
	OK bool `json:"ok"`
}

func testRegistry(t testing.TB) *core.Registry {
	reg, err := core.NewRegistry(
		core.MustDefine("echo", "Return the message.",
			func(_ context.Context, _ struct{}, in echoIO) (echoIO, error) { return in, nil }),
		core.MustDefine("check_balance", "Read the balance.",
			func(_ context.Context, _ struct{}, in echoIO) (echoIO, error) { return in, nil },
			core.WithApproval(core.ApprovalSession)),
		core.MustDefine("transfer", "Move money.",
			func(_ context.Context, _ struct{}, in transferIn) (transferOut, error) { return transferOut{true}, nil },
			core.WithApproval(core.ApprovalWebAuthn), core.WithRisk(core.RiskHigh)),
		statementCapability,
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// env is a provider served on loopback with a capability location.
type env struct {
	t     testing.TB
	p     *provider.Provider
	st    store.Store
	srv   *httptest.Server
	url   string
	clock *clock
}

func newEnv(t testing.TB, mods ...func(*provider.Config)) *env {
	t.Helper()
	return newEnvWrapped(t, nil, mods...)
}

// newEnvWrapped is newEnv with the site handler passed through wrap,
// for tests that serve more pages (a sign-in page) beside it.
func newEnvWrapped(t testing.TB, wrap func(http.Handler) http.Handler, mods ...func(*provider.Config)) *env {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	c := &clock{t: time.Now().Truncate(time.Second)}
	st := store.NewMemory(c.Now)
	reg := testRegistry(t)
	cfg := provider.Config{
		Issuer:       issuer,
		ProviderName: "test",
		Store:        st,
		Registry:     reg,
		Now:          c.Now,
		PollInterval: 2 * time.Second,
		// The tests of the approval flow type the request's code again;
		// the passkey tests turn this off and serve on a host name.
		DevPresenceCode: true,
		Policy: provider.Policy{
			HostDefaults: func(context.Context, provider.NewHost) []string { return []string{"echo"} },
		},
	}
	for _, m := range mods {
		m(&cfg)
	}
	p, err := provider.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var execCfg core.Config
	if cfg.Audit != nil {
		// The location's calls go to the provider's trail too.
		execCfg.Audit.Writer = audit.ForExecutor(cfg.Audit)
	}
	// A test may serve a registry of its own.
	exec, err := core.NewExecutor(cfg.Registry, noContext, execCfg)
	if err != nil {
		t.Fatal(err)
	}
	return serveEnv(t, srv, p, exec, wrap, st, c)
}

// noContext is the context function of the test capabilities, which
// need nothing of the caller.
func noContext(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) {
	return struct{}{}, nil
}

// serveEnv starts srv with p's site and a capability location over exec,
// whose verifier is p itself, passed through wrap when not nil.
func serveEnv(t testing.TB, srv *httptest.Server, p *provider.Provider, exec *core.Executor,
	wrap func(http.Handler) http.Handler, st store.Store, c *clock) *env {
	t.Helper()
	loc, err := httpx.New(exec, httpx.Config{Verifier: p})
	if err != nil {
		t.Fatal(err)
	}
	h := p.Handler(loc)
	if wrap != nil {
		h = wrap(h)
	}
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	return &env{t: t, p: p, st: st, srv: srv, url: p.Issuer(), clock: c}
}

// key is an Ed25519 test key.
type key struct {
	priv ed25519.PrivateKey
}

func newKey(t testing.TB) *key {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &key{priv}
}

func (k *key) pub() ed25519.PublicKey { return k.priv.Public().(ed25519.PublicKey) }
func (k *key) thumbprint() string     { return agentauthtest.Thumbprint(k.pub()) }
func (k *key) jwk() json.RawMessage   { return agentauthtest.PublicJWK(k.pub()) }

func b64(v any) string {
	var b []byte
	switch x := v.(type) {
	case []byte:
		b = x
	default:
		b, _ = json.Marshal(v)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// sign makes a JWT from a header and claims, signed with k.
func (k *key) sign(header, claims map[string]any) string {
	in := b64(header) + "." + b64(claims)
	return in + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(k.priv, []byte(in)))
}

func nextJTI() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// hostToken is a valid host JWT of host h at e, optionally registering
// agent, with claims changed by mods.
func (e *env) hostToken(h, agent *key, mods ...func(hdr, claims map[string]any)) string {
	now := e.clock.Now().Unix()
	hdr := map[string]any{"alg": "EdDSA", "typ": "host+jwt", "kid": h.thumbprint()}
	claims := map[string]any{
		"iss": h.thumbprint(), "aud": e.url, "iat": now, "exp": now + 60, "jti": nextJTI(),
		"host_public_key": h.jwk(),
	}
	if agent != nil {
		claims["agent_public_key"] = agent.jwk()
	}
	for _, m := range mods {
		m(hdr, claims)
	}
	return h.sign(hdr, claims)
}

// agentToken is a valid agent JWT.
func (e *env) agentToken(a *key, agentID, aud string, caps []string) string {
	now := e.clock.Now().Unix()
	claims := map[string]any{"sub": agentID, "aud": aud, "iat": now, "exp": now + 60, "jti": nextJTI()}
	if caps != nil {
		claims["capabilities"] = caps
	}
	return a.sign(map[string]any{"alg": "EdDSA", "typ": "agent+jwt"}, claims)
}

type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

func (r response) str(name string) string {
	s, _ := r.body[name].(string)
	return s
}

func (e *env) do(method, path, token string, body any) response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, ok := body.([]byte)
		if !ok {
			b, _ = json.Marshal(body)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &out.body)
	return out
}

// register registers an agent with key a under host h.
func (e *env) register(h, a *key, body map[string]any) response {
	e.t.Helper()
	if body == nil {
		body = map[string]any{"name": "test agent"}
	}
	return e.do(http.MethodPost, provider.PathRegister, e.hostToken(h, a), body)
}

// approve decides the approval in r as user.
func (e *env) approve(r response, user string, caps []string) {
	e.t.Helper()
	ap, _ := r.body["approval"].(map[string]any)
	code, _ := ap["user_code"].(string)
	if err := e.p.Decide(context.Background(), provider.Decision{UserCode: code, UserID: user, Capabilities: caps, PresenceConfirmed: true}); err != nil {
		e.t.Fatalf("decide %s: %v", code, err)
	}
}

func grants(r response) map[string]string {
	out := map[string]string{}
	gs, _ := r.body["agent_capability_grants"].([]any)
	for _, g := range gs {
		m := g.(map[string]any)
		out[m["capability"].(string)] = m["status"].(string)
	}
	return out
}

// code is the "error" member of an error envelope.
func (r response) code() agentcap.Code { return agentcap.Code(r.str("error")) }
