package provider

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/core"
)

// clientClock is a clock the tests move by hand.
type clientClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clientClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clientClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type clientEcho struct {
	Message string `json:"message"`
}

// clientTestConfig is a provider configuration with the authorization
// server on, under the issuer https://as.example/auth, which the tests
// never dial: its handler is called directly.
func clientTestConfig(t *testing.T, clk *clientClock) Config {
	t.Helper()
	reg, err := core.NewRegistry(core.MustDefine("echo", "Return the message.",
		func(_ context.Context, _ struct{}, in clientEcho) (clientEcho, error) { return in, nil }))
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Issuer:       "https://as.example/auth",
		ProviderName: "test",
		Store:        store.NewMemory(clk.now),
		Registry:     reg,
		Now:          clk.now,
		Endpoints:    []string{"https://as.example/mcp"},
		SignedInUser: func(*http.Request) (*User, error) { return nil, nil },
		OAuth:        OAuthConfig{Enabled: true},
	}
}

func newClientTestProvider(t *testing.T, mod func(*OAuthConfig)) (*Provider, *clientClock) {
	t.Helper()
	clk := &clientClock{t: time.Unix(1_900_000_000, 0)}
	cfg := clientTestConfig(t, clk)
	if mod != nil {
		mod(&cfg.OAuth)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.clientSet.fetch.CloseIdleConnections)
	return p, clk
}

func wantUnknownClient(t *testing.T, c *oauthClient, err error) {
	t.Helper()
	if !errors.Is(err, errUnknownClient) {
		t.Fatalf("got client %+v, error %v; want errUnknownClient", c, err)
	}
}

func TestOAuthRegisteredClient(t *testing.T) {
	p, _ := newClientTestProvider(t, func(c *OAuthConfig) {
		c.Clients = []OAuthClient{{ID: "app", Name: "The App", RedirectURIs: []string{"https://app.example/cb", "com.example.app:/cb"}}}
	})
	c, err := p.oauthClient(context.Background(), "app")
	if err != nil {
		t.Fatal(err)
	}
	if c.id != "app" || c.name != "The App" || c.kind != "registered" || c.origin != "" ||
		!slices.Equal(c.redirectURIs, []string{"https://app.example/cb", "com.example.app:/cb"}) {
		t.Fatalf("registered client: %+v", c)
	}
	if p.registrationExpired(c) {
		t.Error("a registered client expired")
	}
	c.redirectURIs[0] = "https://evil.example/cb"
	if again, _ := p.oauthClient(context.Background(), "app"); again.redirectURIs[0] != "https://app.example/cb" {
		t.Error("a caller's change to a client reached the configuration")
	}
	for _, id := range []string{"nope", "", "App", "dyn_x"} {
		c, err := p.oauthClient(context.Background(), id)
		wantUnknownClient(t, c, err)
	}
}

func TestOAuthClientConfigRefused(t *testing.T) {
	for name, mod := range map[string]func(*OAuthConfig){
		"no id": func(c *OAuthConfig) { c.Clients = []OAuthClient{{RedirectURIs: []string{"https://a.example/cb"}}} },
		"id twice": func(c *OAuthConfig) {
			c.Clients = []OAuthClient{{ID: "a", RedirectURIs: []string{"https://a.example/cb"}}, {ID: "a", RedirectURIs: []string{"https://a.example/cb"}}}
		},
		"no redirect URI":   func(c *OAuthConfig) { c.Clients = []OAuthClient{{ID: "a"}} },
		"relative redirect": func(c *OAuthConfig) { c.Clients = []OAuthClient{{ID: "a", RedirectURIs: []string{"/cb"}}} },
		"redirect fragment": func(c *OAuthConfig) {
			c.Clients = []OAuthClient{{ID: "a", RedirectURIs: []string{"https://a.example/cb#x"}}}
		},
		"script redirect": func(c *OAuthConfig) {
			c.Clients = []OAuthClient{{ID: "a", RedirectURIs: []string{"javascript:alert(1)"}}}
		},
		"negative lifetime":   func(c *OAuthConfig) { c.RegistrationLifetime = -time.Second },
		"negative rate limit": func(c *OAuthConfig) { c.RegistrationsPerMinute = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			clk := &clientClock{t: time.Unix(1_900_000_000, 0)}
			cfg := clientTestConfig(t, clk)
			mod(&cfg.OAuth)
			if _, err := New(cfg); err == nil {
				t.Fatal("New accepted the configuration")
			}
		})
	}
}

// docServer serves Client ID Metadata Documents over TLS on loopback and
// counts the requests it answers.
type docServer struct {
	srv     *httptest.Server
	fetches atomic.Int32
}

func newDocServer(t *testing.T, h http.HandlerFunc) *docServer {
	t.Helper()
	d := &docServer{}
	d.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.fetches.Add(1)
		h(w, r)
	}))
	t.Cleanup(d.srv.Close)
	return d
}

// policy is the fetch policy that trusts the server, loopback and all.
func (d *docServer) policy() agentauth.FetchPolicy {
	pool := x509.NewCertPool()
	pool.AddCert(d.srv.Certificate())
	return agentauth.FetchPolicy{AllowLoopback: true, RootCAs: pool}
}

// clientDoc is a good document for the client_id the request was made
// to, changed by mod.
func clientDoc(r *http.Request, mod func(map[string]any)) map[string]any {
	doc := map[string]any{
		"client_id":     "https://" + r.Host + r.URL.RequestURI(),
		"client_name":   "Doc Client",
		"client_uri":    "https://client.example",
		"redirect_uris": []string{"http://127.0.0.1/callback", "https://client.example/cb"},
	}
	if mod != nil {
		mod(doc)
	}
	return doc
}

func serveDoc(mod func(map[string]any)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(clientDoc(r, mod))
	}
}

func TestOAuthClientMetadataDocument(t *testing.T) {
	d := newDocServer(t, serveDoc(nil))
	p, clk := newClientTestProvider(t, func(c *OAuthConfig) { c.MetadataFetch = d.policy() })
	id := d.srv.URL + "/client/metadata.json"
	c, err := p.oauthClient(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if c.id != id || c.kind != "metadata" || c.origin != d.srv.URL || c.name != "Doc Client" ||
		!slices.Equal(c.redirectURIs, []string{"http://127.0.0.1/callback", "https://client.example/cb"}) {
		t.Fatalf("metadata client: %+v", c)
	}
	if p.registrationExpired(c) {
		t.Error("a metadata client expired")
	}

	c.redirectURIs[0] = "https://evil.example/cb"
	clk.advance(clientDocumentLife - time.Second)
	again, err := p.oauthClient(context.Background(), id)
	if err != nil || again.redirectURIs[0] != "http://127.0.0.1/callback" {
		t.Fatalf("from the cache: %+v, %v", again, err)
	}
	if n := d.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1: the second lookup did not use the cache", n)
	}
	clk.advance(time.Second)
	if _, err := p.oauthClient(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if n := d.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2: a document was used past %v", n, clientDocumentLife)
	}
}

func TestOAuthClientMetadataFailuresNotCached(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	good := serveDoc(nil)
	d := newDocServer(t, func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		good(w, r)
	})
	p, _ := newClientTestProvider(t, func(c *OAuthConfig) { c.MetadataFetch = d.policy() })
	id := d.srv.URL + "/client"
	c, err := p.oauthClient(context.Background(), id)
	wantUnknownClient(t, c, err)
	fail.Store(false)
	if _, err := p.oauthClient(context.Background(), id); err != nil {
		t.Fatalf("after the server recovered: %v", err)
	}
}

func TestOAuthClientMetadataRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		path string // the client_id is the server's URL followed by path
		h    http.HandlerFunc
		// fetched says whether the client_id is good enough to fetch.
		fetched bool
	}{
		{name: "client_id differs", path: "/client", fetched: true, h: serveDoc(func(m map[string]any) { m["client_id"] = m["client_id"].(string) + "/other" })},
		{name: "client_id missing", path: "/client", fetched: true, h: serveDoc(func(m map[string]any) { delete(m, "client_id") })},
		{name: "redirect_uris missing", path: "/client", fetched: true, h: serveDoc(func(m map[string]any) { delete(m, "redirect_uris") })},
		{name: "redirect_uris empty", path: "/client", fetched: true, h: serveDoc(func(m map[string]any) { m["redirect_uris"] = []string{} })},
		{name: "redirect URI relative", path: "/client", fetched: true, h: serveDoc(func(m map[string]any) { m["redirect_uris"] = []string{"/cb"} })},
		{name: "redirect URI fragment", path: "/client", fetched: true, h: serveDoc(func(m map[string]any) { m["redirect_uris"] = []string{"https://client.example/cb#x"} })},
		{name: "redirect URI http elsewhere", path: "/client", fetched: true, h: serveDoc(func(m map[string]any) { m["redirect_uris"] = []string{"http://client.example/cb"} })},
		{name: "client_secret_basic", path: "/client", fetched: true, h: serveDoc(func(m map[string]any) { m["token_endpoint_auth_method"] = "client_secret_basic" })},
		{name: "client_name not a string", path: "/client", fetched: true, h: serveDoc(func(m map[string]any) { m["client_name"] = 7 })},
		{name: "oversized body", path: "/client", fetched: true, h: func(w http.ResponseWriter, r *http.Request) {
			body, _ := json.Marshal(clientDoc(r, func(m map[string]any) { m["padding"] = strings.Repeat("x", maxClientDocumentBytes) }))
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			_, _ = w.Write(body)
		}},
		{name: "oversized body, streamed", path: "/client", fetched: true, h: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.(http.Flusher).Flush() // no Content-Length: the limit is met while reading
			_, _ = fmt.Fprintf(w, `{"client_id":%q,"redirect_uris":["https://client.example/cb"],"padding":%q}`,
				"https://"+r.Host+r.URL.Path, strings.Repeat("x", maxClientDocumentBytes))
		}},
		{name: "duplicate member", path: "/client", fetched: true, h: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"client_id":%q,"redirect_uris":["https://client.example/cb"],"redirect_uris":["https://evil.example/cb"]}`, "https://"+r.Host+r.URL.Path)
		}},
		{name: "not JSON", path: "/client", fetched: true, h: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_ = json.NewEncoder(w).Encode(clientDoc(r, nil))
		}},
		{name: "redirect", path: "/client", fetched: true, h: func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/client" {
				http.Redirect(w, r, "/elsewhere", http.StatusFound)
				return
			}
			// What a followed redirect would find: a document for the
			// client_id first asked for.
			serveDoc(func(m map[string]any) { m["client_id"] = "https://" + r.Host + "/client" })(w, r)
		}},
		{name: "not found", path: "/client", fetched: true, h: http.NotFound},
		{name: "root path", path: "/"},
		{name: "no path", path: ""},
		{name: "fragment", path: "/client#x"},
		{name: "dot segment", path: "/a/../client"},
		{name: "encoded dot segment", path: "/a/%2e%2e/client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.h
			if h == nil {
				h = serveDoc(nil)
			}
			d := newDocServer(t, h)
			p, _ := newClientTestProvider(t, func(c *OAuthConfig) { c.MetadataFetch = d.policy() })
			c, err := p.oauthClient(context.Background(), d.srv.URL+tc.path)
			wantUnknownClient(t, c, err)
			if n := d.fetches.Load(); (n > 0) != tc.fetched {
				t.Errorf("%d fetches; fetched %v expected", n, tc.fetched)
			}
		})
	}
}

func TestOAuthClientMetadataURLRefused(t *testing.T) {
	d := newDocServer(t, serveDoc(nil))
	p, _ := newClientTestProvider(t, func(c *OAuthConfig) { c.MetadataFetch = d.policy() })
	host := strings.TrimPrefix(d.srv.URL, "https://")
	for _, id := range []string{
		"HTTPS://" + host + "/client",
		"https://user@" + host + "/client",
		"https://" + host + "/a b",
		"ftp://" + host + "/client",
		"https:///client",
	} {
		c, err := p.oauthClient(context.Background(), id)
		wantUnknownClient(t, c, err)
	}
	if n := d.fetches.Load(); n != 0 {
		t.Errorf("%d fetches of refused client ids", n)
	}
}

func TestOAuthClientMetadataHTTPRefused(t *testing.T) {
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		serveDoc(func(m map[string]any) { m["client_id"] = "http://" + r.Host + r.URL.Path })(w, r)
	}))
	t.Cleanup(srv.Close)
	// The fetcher itself would fetch plain http from loopback here.
	p, _ := newClientTestProvider(t, func(c *OAuthConfig) { c.MetadataFetch.AllowLoopback = true })
	c, err := p.oauthClient(context.Background(), srv.URL+"/client")
	wantUnknownClient(t, c, err)
	if n := fetches.Load(); n != 0 {
		t.Errorf("an http client_id was fetched %d times", n)
	}
}

func TestOAuthClientMetadataLoopbackRefused(t *testing.T) {
	d := newDocServer(t, serveDoc(nil))
	p, _ := newClientTestProvider(t, func(c *OAuthConfig) {
		c.MetadataFetch = d.policy()
		c.MetadataFetch.AllowLoopback = false
	})
	c, err := p.oauthClient(context.Background(), d.srv.URL+"/client")
	wantUnknownClient(t, c, err)
	if n := d.fetches.Load(); n != 0 {
		t.Errorf("the loopback server was reached %d times", n)
	}
}

func TestOAuthClientMetadataSlowServer(t *testing.T) {
	release := make(chan struct{})
	d := newDocServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	// Cleanups run last first: the handler is released before the
	// server is closed.
	t.Cleanup(func() { close(release) })
	p, _ := newClientTestProvider(t, func(c *OAuthConfig) {
		c.MetadataFetch = d.policy()
		c.MetadataFetch.Timeout = 200 * time.Millisecond
	})
	start := time.Now()
	c, err := p.oauthClient(context.Background(), d.srv.URL+"/client")
	wantUnknownClient(t, c, err)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the fetch took %v; MetadataFetch.Timeout is 200ms", took)
	}
}

func TestOAuthClientDocumentCacheBounded(t *testing.T) {
	var d clientDocuments
	d.max = 3
	now := time.Unix(1_900_000_000, 0)
	for _, id := range []string{"a", "b", "c"} {
		d.put(&oauthClient{id: id}, now)
	}
	d.get("a", now) // b is now the least recently used
	d.put(&oauthClient{id: "d"}, now)
	for id, kept := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if got := d.get(id, now) != nil; got != kept {
			t.Errorf("%s kept: %v, want %v", id, got, kept)
		}
	}
	if d.order.Len() != 3 || len(d.entries) != 3 {
		t.Errorf("%d entries, %d in order; want 3", len(d.entries), d.order.Len())
	}
}

// registerClient posts a registration request to the provider's site.
func registerClient(h http.Handler, remote, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "https://as.example/auth/oauth/register", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if remote != "" {
		r.RemoteAddr = remote
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestOAuthDynamicRegistration(t *testing.T) {
	p, clk := newClientTestProvider(t, func(c *OAuthConfig) { c.DynamicRegistration = true })
	w := registerClient(p.Handler(nil), "", `{
		"redirect_uris": ["http://127.0.0.1:33418/callback", "https://client.example/cb"],
		"client_name": "Dyn\u202eamic",
		"token_endpoint_auth_method": "none",
		"grant_types": ["authorization_code", "refresh_token"],
		"response_types": ["code"],
		"scope": "echo",
		"software_id": "ignored"
	}`)
	if w.Code != http.StatusCreated {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}
	var resp struct {
		ClientID       string   `json:"client_id"`
		IssuedAt       int64    `json:"client_id_issued_at"`
		RedirectURIs   []string `json:"redirect_uris"`
		ClientName     string   `json:"client_name"`
		AuthMethod     string   `json:"token_endpoint_auth_method"`
		GrantTypes     []string `json:"grant_types"`
		ResponseTypes  []string `json:"response_types"`
		ClientSecret   *string  `json:"client_secret"`
		SecretExpireAt *int64   `json:"client_secret_expires_at"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	uris := []string{"http://127.0.0.1:33418/callback", "https://client.example/cb"}
	if !strings.HasPrefix(resp.ClientID, "dyn_") || resp.IssuedAt != clk.now().Unix() || !slices.Equal(resp.RedirectURIs, uris) ||
		resp.ClientName != "Dynamic" || resp.AuthMethod != "none" || resp.ClientSecret != nil ||
		!slices.Equal(resp.GrantTypes, []string{"authorization_code", "refresh_token"}) || !slices.Equal(resp.ResponseTypes, []string{"code"}) {
		t.Fatalf("registration answer: %s", w.Body)
	}

	c, err := p.oauthClient(context.Background(), resp.ClientID)
	if err != nil {
		t.Fatal(err)
	}
	if c.id != resp.ClientID || c.kind != "dynamic" || c.name != "Dynamic" || !slices.Equal(c.redirectURIs, uris) ||
		!c.issuedAt.Equal(clk.now()) || c.origin != "" {
		t.Fatalf("dynamic client: %+v", c)
	}
	clk.advance(defaultRegistrationLifetime - time.Second)
	if p.registrationExpired(c) {
		t.Error("expired before RegistrationLifetime")
	}
	clk.advance(time.Second)
	if !p.registrationExpired(c) {
		t.Error("not expired after RegistrationLifetime")
	}
	if _, err := p.oauthClient(context.Background(), resp.ClientID); err != nil {
		t.Errorf("an expired registration no longer resolves: %v (expiry is the authorization flow's to decide)", err)
	}
}

func TestOAuthRegistrationLifetime(t *testing.T) {
	p, clk := newClientTestProvider(t, func(c *OAuthConfig) {
		c.DynamicRegistration = true
		c.RegistrationLifetime = time.Hour
	})
	id, _, err := p.sealDynamicClient(clientMetadata{redirectURIs: []string{"https://client.example/cb"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.oauthClient(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Hour - time.Second)
	if p.registrationExpired(c) {
		t.Error("expired before an hour")
	}
	clk.advance(time.Second)
	if !p.registrationExpired(c) {
		t.Error("not expired after an hour")
	}
}

func TestOAuthDynamicClientTampered(t *testing.T) {
	p, _ := newClientTestProvider(t, func(c *OAuthConfig) { c.DynamicRegistration = true })
	id, _, err := p.sealDynamicClient(clientMetadata{redirectURIs: []string{"https://client.example/cb"}, name: "Real"})
	if err != nil {
		t.Fatal(err)
	}
	enc, rest, _ := strings.Cut(strings.TrimPrefix(id, "dyn_"), ".")
	forged, _ := json.Marshal(dynamicClient{RedirectURIs: []string{"https://evil.example/cb"}, Name: "Real"})
	flip := func(s string, i int) string {
		b := []byte(s)
		b[i] ^= 1
		return string(b)
	}
	other, _ := newClientTestProvider(t, func(c *OAuthConfig) { c.DynamicRegistration = true }) // another random PageSecret
	otherID, _, err := other.sealDynamicClient(clientMetadata{redirectURIs: []string{"https://client.example/cb"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"mac changed":          flip(id, len(id)-2),
		"payload changed":      "dyn_" + base64.RawURLEncoding.EncodeToString(forged) + "." + rest,
		"issued-at changed":    "dyn_" + enc + "." + strings.Replace(rest, "19", "18", 1),
		"no prefix":            strings.TrimPrefix(id, "dyn_"),
		"another secret":       otherID,
		"prefix only":          "dyn_",
		"presence seal reused": "dyn_" + p.seal("presence", "", []byte(`{"r":["https://evil.example/cb"]}`)),
	} {
		c, err := p.oauthClient(context.Background(), bad)
		if !errors.Is(err, errUnknownClient) {
			t.Errorf("%s: got %+v, %v", name, c, err)
		}
	}
	if _, err := p.oauthClient(context.Background(), id); err != nil {
		t.Fatalf("the untouched id: %v", err)
	}
}

func TestOAuthRegistrationRefusals(t *testing.T) {
	p, _ := newClientTestProvider(t, func(c *OAuthConfig) {
		c.DynamicRegistration = true
		c.RegistrationsPerMinute = 100 // every request here comes from one address
	})
	h := p.Handler(nil)
	for _, tc := range []struct {
		name, body, code string
	}{
		{"redirect fragment", `{"redirect_uris":["https://client.example/cb#x"]}`, "invalid_redirect_uri"},
		{"redirect relative", `{"redirect_uris":["/cb"]}`, "invalid_redirect_uri"},
		{"redirect http elsewhere", `{"redirect_uris":["http://client.example/cb"]}`, "invalid_redirect_uri"},
		{"redirect http private address", `{"redirect_uris":["http://10.0.0.1/cb"]}`, "invalid_redirect_uri"},
		{"redirect private-use scheme", `{"redirect_uris":["com.example.app:/cb"]}`, "invalid_redirect_uri"},
		{"redirect credentials", `{"redirect_uris":["https://u:p@client.example/cb"]}`, "invalid_redirect_uri"},
		{"redirect_uris missing", `{"client_name":"x"}`, "invalid_redirect_uri"},
		{"redirect_uris empty", `{"redirect_uris":[]}`, "invalid_redirect_uri"},
		{"redirect_uris a string", `{"redirect_uris":"https://client.example/cb"}`, "invalid_redirect_uri"},
		{"too many redirect_uris", `{"redirect_uris":["https://a.example/1","https://a.example/2","https://a.example/3","https://a.example/4","https://a.example/5","https://a.example/6","https://a.example/7","https://a.example/8","https://a.example/9"]}`, "invalid_redirect_uri"},
		{"client_secret_basic", `{"redirect_uris":["https://client.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`, "invalid_client_metadata"},
		{"private_key_jwt", `{"redirect_uris":["https://client.example/cb"],"token_endpoint_auth_method":"private_key_jwt"}`, "invalid_client_metadata"},
		{"client_credentials grant", `{"redirect_uris":["https://client.example/cb"],"grant_types":["client_credentials"]}`, "invalid_client_metadata"},
		{"token response type", `{"redirect_uris":["https://client.example/cb"],"response_types":["token"]}`, "invalid_client_metadata"},
		{"duplicate member", `{"redirect_uris":["https://client.example/cb"],"redirect_uris":["https://evil.example/cb"]}`, "invalid_client_metadata"},
		{"not an object", `["https://client.example/cb"]`, "invalid_client_metadata"},
		{"too large", `{"redirect_uris":["https://client.example/cb"],"x":"` + strings.Repeat("x", maxRegistrationBytes) + `"}`, "invalid_client_metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := registerClient(h, "", tc.body)
			var e struct {
				Error       string `json:"error"`
				Description string `json:"error_description"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != http.StatusBadRequest || e.Error != tc.code || e.Description == "" {
				t.Fatalf("%d %s; want 400 %s", w.Code, w.Body, tc.code)
			}
		})
	}
	t.Run("not JSON", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodPost, "https://as.example/auth/oauth/register", strings.NewReader(`redirect_uris=https://client.example/cb`))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "invalid_client_metadata") {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	})
	for _, uri := range []string{"http://127.0.0.1/cb", "http://[::1]:8080/cb", "http://localhost:9/cb", "https://client.example/cb?x=1"} {
		if w := registerClient(h, "", `{"redirect_uris":["`+uri+`"]}`); w.Code != http.StatusCreated {
			t.Errorf("%s refused: %d %s", uri, w.Code, w.Body)
		}
	}
}

func TestOAuthRegistrationFlood(t *testing.T) {
	p, _ := newClientTestProvider(t, func(c *OAuthConfig) {
		c.DynamicRegistration = true
		c.RegistrationsPerMinute = 3
	})
	h := p.Handler(nil)
	body := `{"redirect_uris":["https://client.example/cb"]}`
	for i := range 3 {
		if w := registerClient(h, "192.0.2.7:1000", body); w.Code != http.StatusCreated {
			t.Fatalf("registration %d: %d %s", i+1, w.Code, w.Body)
		}
	}
	w := registerClient(h, "192.0.2.7:1001", body)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Fatalf("4th registration: %d %v %s", w.Code, w.Header(), w.Body)
	}
	if w := registerClient(h, "192.0.2.8:1000", body); w.Code != http.StatusCreated {
		t.Fatalf("another address: %d %s", w.Code, w.Body)
	}
}

func TestOAuthRegistrationOff(t *testing.T) {
	for name, mod := range map[string]func(*OAuthConfig){
		"dynamic registration off": nil,
		"authorization server off": func(c *OAuthConfig) { c.Enabled = false; c.DynamicRegistration = true },
	} {
		t.Run(name, func(t *testing.T) {
			p, _ := newClientTestProvider(t, mod)
			if w := registerClient(p.Handler(nil), "", `{"redirect_uris":["https://client.example/cb"]}`); w.Code != http.StatusNotFound {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
		})
	}
	// An id issued while registration was on is not honoured once it is off.
	p, _ := newClientTestProvider(t, nil)
	id, _, err := p.sealDynamicClient(clientMetadata{redirectURIs: []string{"https://client.example/cb"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.oauthClient(context.Background(), id)
	wantUnknownClient(t, c, err)
}
