package provider_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/mcpx"
)

// The pre-registered client of the OAuth tests.
const (
	oauthClientID = "desk-app"
	oauthRedirect = "http://127.0.0.1/callback"
)

// oauthEnv is a provider with its authorization server on and an MCP
// endpoint at /mcp that accepts its access tokens.
type oauthEnv struct {
	*env
	resource string
}

func newOAuthEnv(t testing.TB, mods ...func(*provider.Config)) *oauthEnv {
	t.Helper()
	var mcpHandler http.Handler
	wrapPage, signIn := devLoginSite()
	wrap := func(h http.Handler) http.Handler {
		mux := http.NewServeMux()
		mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { mcpHandler.ServeHTTP(w, r) }))
		mux.Handle("/", wrapPage(h))
		return mux
	}
	var reg *core.Registry
	e := newEnvWrapped(t, wrap, append([]func(*provider.Config){signIn, func(c *provider.Config) {
		reg = c.Registry
		c.Endpoints = []string{c.Issuer + "/mcp"}
		c.OAuth = provider.OAuthConfig{
			Enabled: true,
			Clients: []provider.OAuthClient{
				{ID: oauthClientID, Name: "Desk <b>App</b>", RedirectURIs: []string{oauthRedirect}},
				{ID: "web-app", Name: "Web App", RedirectURIs: []string{"https://app.example/cb"}},
			},
		}
	}}, mods...)...)
	resource := e.url + "/mcp"
	verifier, err := e.p.EndpointVerifier(resource)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := core.NewExecutor(reg, noContext, core.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpx.New(exec, mcpx.Config{
		Name: "test", Version: "1", Verifier: verifier, Resource: resource,
		AuthorizationServers: []string{e.url},
	})
	if err != nil {
		t.Fatal(err)
	}
	mcpHandler = srv
	return &oauthEnv{env: e, resource: resource}
}

// pkce returns a verifier and its S256 challenge.
func pkce(seed string) (verifier, challenge string) {
	verifier = strings.Repeat(seed, 64)[:64]
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorizeURL is an authorization request of the test client.
func (e *oauthEnv) authorizeURL(challenge, scope string, mods ...func(url.Values)) string {
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {oauthClientID},
		"redirect_uri":          {"http://127.0.0.1:43210/callback"},
		"state":                 {"st-1"},
		"code_challenge":        {challenge},
		"code_challenge_method": {"S256"},
		"resource":              {e.resource},
	}
	if scope != "" {
		q.Set("scope", scope)
	}
	for _, m := range mods {
		m(q)
	}
	return "/oauth/authorize?" + q.Encode()
}

var oauthField = regexp.MustCompile(`name="oauth" value="([^"]+)"`)

// consent walks a signed-in browser from an authorization request to the
// client's redirect, allowing allow (nil: deny), and returns the
// redirect's query.
func (b *browser) consent(authorize string, allow []string, form url.Values) url.Values {
	b.t.Helper()
	status, body, h := b.get(authorize)
	if status != http.StatusFound {
		b.t.Fatalf("authorize: %d %s", status, body)
	}
	loc, _ := url.Parse(h.Get("Location"))
	status, body, h = b.get(loc.RequestURI())
	if status == http.StatusFound || status == http.StatusSeeOther {
		if next, _ := url.Parse(h.Get("Location")); strings.HasPrefix(next.String(), "http://127.0.0.1:43210/") {
			return next.Query()
		}
	}
	if status != http.StatusSeeOther {
		b.t.Fatalf("consent: %d %s", status, body)
	}
	page, _ := url.Parse(h.Get("Location"))
	status, body, _ = b.get(page.RequestURI())
	if status != http.StatusOK {
		b.t.Fatalf("approval page: %d %s", status, body)
	}
	csrf, token := csrfField.FindStringSubmatch(body), oauthField.FindStringSubmatch(body)
	if csrf == nil || token == nil {
		b.t.Fatalf("approval page without its form: %s", body)
	}
	f := url.Values{"csrf": {csrf[1]}, "oauth": {token[1]}, "step": {"review"}, "request": {page.Query().Get("request")}}
	if allow == nil {
		f.Set("action", "deny")
	} else {
		f.Set("action", "allow")
		f["capability"] = allow
	}
	for k, v := range form {
		f[k] = v
	}
	resp := b.postResp(page.Path, f)
	if resp.StatusCode != http.StatusSeeOther {
		body, _ := io.ReadAll(resp.Body)
		b.t.Fatalf("decision: %d %s", resp.StatusCode, body)
	}
	back, _ := url.Parse(resp.Header.Get("Location"))
	if !strings.HasPrefix(back.String(), "http://127.0.0.1:43210/callback?") {
		b.t.Fatalf("redirected to %s", back)
	}
	return back.Query()
}

func (b *browser) postResp(path string, form url.Values) *http.Response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.e.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// tokenRequest posts a token request and returns the status and the
// decoded answer.
func (e *oauthEnv) tokenRequest(t testing.TB, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(e.url+"/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("token answer: %v", err)
	}
	return resp.StatusCode, out
}

func (e *oauthEnv) redeem(t testing.TB, code, verifier string) (int, map[string]any) {
	t.Helper()
	return e.tokenRequest(t, url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"client_id": {oauthClientID}, "redirect_uri": {"http://127.0.0.1:43210/callback"}, "resource": {e.resource},
	})
}

// mcpSession connects to the MCP endpoint with token.
func (e *oauthEnv) mcpSession(t *testing.T, token string) (*mcp.ClientSession, error) {
	t.Helper()
	hc := &http.Client{Transport: bearer{token: token}}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.resource, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func TestOAuthFlow(t *testing.T) {
	e := newOAuthEnv(t)
	b := newBrowser(t, e.env)
	if b.signIn("alice", "/") != http.StatusSeeOther {
		t.Fatal("sign-in failed")
	}
	verifier, challenge := pkce("a")
	q := b.consent(e.authorizeURL(challenge, "echo check_balance"), []string{"echo"}, nil)
	if q.Get("state") != "st-1" || q.Get("iss") != e.url || q.Get("code") == "" {
		t.Fatalf("redirect query %v", q)
	}
	status, tok := e.redeem(t, q.Get("code"), verifier)
	if status != http.StatusOK {
		t.Fatalf("token: %d %v", status, tok)
	}
	access, _ := tok["access_token"].(string)
	refresh, _ := tok["refresh_token"].(string)
	if access == "" || refresh == "" || tok["token_type"] != "Bearer" || tok["scope"] != "echo" {
		t.Fatalf("token answer %v", tok)
	}
	cs, err := e.mcpSession(t, access)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}

	// The code is good once; its second use revokes what it issued.
	if status, out := e.redeem(t, q.Get("code"), verifier); status != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Fatalf("replayed code: %d %v", status, out)
	}
	if _, err := e.mcpSession(t, access); err == nil {
		t.Fatal("the access token still works after its code was replayed")
	}
	if status, out := e.tokenRequest(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {oauthClientID}}); status != http.StatusBadRequest {
		t.Fatalf("refresh after replay: %d %v", status, out)
	}
}
