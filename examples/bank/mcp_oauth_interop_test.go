//go:build mcpinterop

package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentcap/agentcap/internal/browsertest"
)

// TestMCPInteropOAuth connects the TypeScript SDK's OAuth client
// (oauth.mjs: StreamableHTTPClientTransport with an OAuthClientProvider)
// to the bank's /mcp, whose authorization server is the bank's provider,
// with Alice consenting in headless Chromium. The bank's access tokens
// last 3 s, so that the SDK has to refresh one.
//
// With a Client ID Metadata Document (served over https on loopback, its
// certificate the bank's only fetch root): the first call gets 401, the
// SDK discovers the resource and the authorization server and sends
// Alice to authorize every capability; she allows two. tools/list shows
// those; a tool she did not allow is refused with 403 insufficient_scope.
// SDK 1.32.2 answers that challenge by refreshing its tokens rather than
// asking the user, so the call is refused again and the SDK gives up;
// the script then does what the challenge asks, as an application
// would: it drops its tokens and runs the SDK's auth() with the scope
// named, Alice allows that one capability, and the call succeeds. Once
// the access token has expired the SDK refreshes it on the 401 and gets
// a new pair. Alice then revokes the agent on "Your agents": the next
// call's refresh is refused and the SDK asks for authorization again,
// which ends the test.
//
// With Dynamic Client Registration (no metadata document URL): the SDK
// registers itself, Alice consents, and it lists and calls tools.
func TestMCPInteropOAuth(t *testing.T) {
	dir := interopDir(t)
	docURL, fetches, roots := clientMetadataServer(t)
	db := filepath.Join(t.TempDir(), "bank.db")
	p := startBankIn(t, buildBank(t), "", func(addr, u string) []string {
		return []string{"-addr", addr, "-issuer", u, "-db", db,
			"-dev-allow-loopback-jwks", "-dev-fetch-roots", roots,
			"-oauth-access-lifetime", "3s", "-oauth-dynamic-registration"}
	})
	mcpURL := p.url + "/mcp"
	allCapabilities := []string{"check_balance", "exchange_rate", "list_accounts", "statement_export", "transfer_money"}

	t.Run("metadata document", func(t *testing.T) {
		n := startOAuthScript(t, dir, mcpURL, docURL)
		ctx := browsertest.New(t)

		first := n.authorize(t)
		checkAuthorizeURL(t, first, p.url, docURL, mcpURL, allCapabilities)
		c := consent(t, ctx, first, true, "check_balance", "exchange_rate")
		if !sameSet(c.asked, allCapabilities) || c.clientID != docURL || c.clientName != "agentcap interop (TypeScript SDK)" {
			t.Errorf("the consent page asked for %v from %q (%q)", c.asked, c.clientName, c.clientID)
		}
		if fetches.Load() == 0 {
			t.Error("the bank never fetched the client metadata document")
		}

		var connected struct {
			ClientID  string     `json:"clientId"`
			Iss       string     `json:"iss"`
			Scope     string     `json:"scope"`
			ExpiresIn int        `json:"expiresIn"`
			Server    string     `json:"server"`
			Exchanges []exchange `json:"exchanges"`
		}
		n.step(t, "connected", &connected)
		if connected.ClientID != docURL || connected.Iss != p.url || connected.Server != "bank" || connected.ExpiresIn != 3 ||
			!sameSet(strings.Fields(connected.Scope), []string{"check_balance", "exchange_rate"}) {
			t.Errorf("connected: %+v", connected)
		}
		// The first call is refused, the SDK discovers, then exchanges the
		// code; it never registers.
		if !inOrder(connected.Exchanges,
			exchange{"POST", "/mcp", 401, ""},
			exchange{"GET", "/.well-known/oauth-protected-resource/mcp", 200, ""},
			exchange{"GET", "/.well-known/oauth-authorization-server", 200, ""},
			exchange{"POST", "/oauth/token", 200, ""},
			exchange{"POST", "/mcp", 200, ""}) || exchangesAt(connected.Exchanges, "/oauth/register") != 0 {
			t.Errorf("connecting: %+v", connected.Exchanges)
		}

		n.grantedTools(t)

		// Step-up: see the test's comment for who asks the user.
		again := n.authorize(t)
		if q := again.Query(); q.Get("scope") != "list_accounts" || q.Get("client_id") != docURL || q.Get("resource") != mcpURL {
			t.Errorf("the step-up authorization: %s", again)
		}
		if c := consent(t, ctx, again, false, "list_accounts"); !slices.Equal(c.asked, []string{"list_accounts"}) {
			t.Errorf("the step-up consent asked for %v", c.asked)
		}
		var stepUp struct {
			tsCall
			By                      string     `json:"by"`
			SDKError                string     `json:"sdkError"`
			ChallengeScope          string     `json:"challengeScope"`
			TokensSavedBeforeAsking int        `json:"tokensSavedBeforeAsking"`
			Scope                   string     `json:"scope"`
			Exchanges               []exchange `json:"exchanges"`
		}
		n.step(t, "step-up", &stepUp)
		// A token that expired on the way would add a refresh before the
		// 403: one refresh at least.
		if stepUp.By != "script" || stepUp.ChallengeScope != "list_accounts" || stepUp.TokensSavedBeforeAsking < 1 ||
			!strings.Contains(stepUp.SDKError, "403 after trying upscoping") {
			t.Errorf("SDK 1.32.2 refreshes on insufficient_scope and gives up; the step-up went: %+v", stepUp)
		}
		if !inOrder(stepUp.Exchanges,
			exchange{"POST", "/mcp", 403, "insufficient_scope"},
			exchange{"POST", "/oauth/token", 200, ""},
			exchange{"POST", "/mcp", 403, "insufficient_scope"},
			exchange{"POST", "/oauth/token", 200, ""},
			exchange{"POST", "/mcp", 200, ""}) {
			t.Errorf("step-up: %+v", stepUp.Exchanges)
		}
		if stepUp.IsError || !strings.HasPrefix(stepUp.Text, `[{"account_id":"acc_123"`) ||
			!sameSet(strings.Fields(stepUp.Scope), []string{"check_balance", "exchange_rate", "list_accounts"}) {
			t.Errorf("list_accounts after the step-up: %+v", stepUp)
		}

		var refreshed struct {
			tsCall
			TokensSaved    int        `json:"tokensSaved"`
			AccessChanged  bool       `json:"accessChanged"`
			RefreshChanged bool       `json:"refreshChanged"`
			Exchanges      []exchange `json:"exchanges"`
		}
		n.step(t, "refreshed", &refreshed)
		// The SDK discovers again before it refreshes.
		if refreshed.TokensSaved != 1 || !refreshed.AccessChanged || !refreshed.RefreshChanged || refreshed.IsError ||
			!inOrder(refreshed.Exchanges,
				exchange{"POST", "/mcp", 401, "invalid_token"},
				exchange{"POST", "/oauth/token", 200, ""},
				exchange{"POST", "/mcp", 200, ""}) || exchangesAt(refreshed.Exchanges, "/oauth/token") != 1 {
			t.Errorf("after the access token expired: %+v", refreshed)
		}

		n.step(t, "waiting", nil)
		browsertest.Do(t, ctx, "opening Your agents",
			chromedp.Navigate(p.url+"/agents"),
			chromedp.WaitVisible(chromedp.CSS(".agent button.revoke-agent")))
		if names := browsertest.Value(t, ctx, "reading the agents", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(".agent .agent-name"), e => e.textContent)`)); !slices.Equal(names, []string{"agentcap interop (TypeScript SDK)"}) {
			t.Errorf("Alice's agents: %q", names)
		}
		browsertest.Do(t, ctx, "revoking the agent",
			chromedp.Click(chromedp.CSS(".agent button.revoke-agent")),
			chromedp.WaitVisible(chromedp.CSS("#notice")))
		if s := browsertest.Text(t, ctx, "#notice"); s != "The agent was revoked. It can no longer act for you." {
			t.Errorf("notice %q", s)
		}
		n.send(t, "revoked")

		if u := n.authorize(t); u.Query().Get("client_id") != docURL {
			t.Errorf("the authorization asked for after the revocation: %s", u)
		}
		var revoked struct {
			Error      string     `json:"error"`
			AskedAgain int        `json:"askedAgain"`
			Dropped    []string   `json:"invalidated"`
			Exchanges  []exchange `json:"exchanges"`
		}
		n.step(t, "revoked", &revoked)
		if revoked.Error != "UnauthorizedError" || revoked.AskedAgain != 1 || !slices.Equal(revoked.Dropped, []string{"tokens"}) ||
			!inOrder(revoked.Exchanges,
				exchange{"POST", "/mcp", 401, "invalid_token"},
				exchange{"POST", "/oauth/token", 400, ""}) {
			t.Errorf("after the revocation: %+v", revoked)
		}
		n.wait(t)
	})

	t.Run("dynamic registration", func(t *testing.T) {
		n := startOAuthScript(t, dir, mcpURL)
		ctx := browsertest.New(t)
		u := n.authorize(t)
		clientID := u.Query().Get("client_id")
		checkAuthorizeURL(t, u, p.url, clientID, mcpURL, allCapabilities)
		if !strings.HasPrefix(clientID, "dyn_") {
			t.Errorf("client_id %q of a dynamic registration", clientID)
		}
		c := consent(t, ctx, u, true, "check_balance", "exchange_rate")
		if c.clientID != "a client that registered itself, unverified" || c.clientName != "agentcap interop (TypeScript SDK, registered)" {
			t.Errorf("the consent page shows the client as %q (%q)", c.clientName, c.clientID)
		}
		var connected struct {
			ClientID  string     `json:"clientId"`
			Scope     string     `json:"scope"`
			Exchanges []exchange `json:"exchanges"`
		}
		n.step(t, "connected", &connected)
		if connected.ClientID != clientID || !inOrder(connected.Exchanges,
			exchange{"POST", "/mcp", 401, ""},
			exchange{"POST", "/oauth/register", 201, ""},
			exchange{"POST", "/oauth/token", 200, ""},
			exchange{"POST", "/mcp", 200, ""}) {
			t.Errorf("connected: %+v", connected)
		}
		n.grantedTools(t)
		n.wait(t)
	})
}

// clientMetadataServer serves the interop client's Client ID Metadata
// Document over https on loopback. It returns the document's URL, a
// count of its fetches and a PEM file of the server's certificate, for
// the bank's -dev-fetch-roots.
func clientMetadataServer(t *testing.T) (string, *atomic.Int64, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	docURL := "https://" + ln.Addr().String() + "/client.json"
	doc, err := json.Marshal(map[string]any{
		"client_id":   docURL,
		"client_name": "agentcap interop (TypeScript SDK)",
		// Any port of a loopback redirect URI matches (RFC 8252 §7.3):
		// the script listens where it can.
		"redirect_uris":              []string{"http://127.0.0.1/callback"},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	})
	if err != nil {
		t.Fatal(err)
	}
	fetches := &atomic.Int64{}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/client.json" {
			http.NotFound(w, r)
			return
		}
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	})}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(roots, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return docURL, fetches, roots
}

// exchange is one HTTP exchange of the SDK as oauth.mjs records it: the
// error is the one a Bearer challenge names.
type exchange struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
}

// inOrder reports whether want occur in got in that order, others
// between them allowed.
func inOrder(got []exchange, want ...exchange) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// exchangesAt counts the exchanges with path.
func exchangesAt(got []exchange, path string) int {
	n := 0
	for _, e := range got {
		if e.Path == path {
			n++
		}
	}
	return n
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// checkAuthorizeURL checks an authorization URL the SDK built: the
// bank's endpoint, the client, the MCP endpoint as the resource, the
// scopes of the 401 challenge, PKCE with S256, a state, and a loopback
// redirect URI.
func checkAuthorizeURL(t *testing.T, u *url.URL, issuer, clientID, resource string, scopes []string) {
	t.Helper()
	q := u.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if u.Scheme+"://"+u.Host+u.Path != issuer+"/oauth/authorize" || q.Get("client_id") != clientID || q.Get("resource") != resource ||
		!sameSet(strings.Fields(q.Get("scope")), scopes) || q.Get("response_type") != "code" ||
		q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 || q.Get("state") == "" ||
		err != nil || redirect.Scheme != "http" || redirect.Hostname() != "127.0.0.1" || redirect.Path != "/callback" {
		t.Errorf("authorization URL %s", u)
	}
}

// consentPage is what the consent page showed.
type consentPage struct {
	asked      []string
	clientName string
	clientID   string
}

// consent opens an authorization URL in the browser as Alice (signing in
// first when signIn), allows the capabilities allow among those asked
// for, and waits until the browser is at the client's redirect URI.
func consent(t *testing.T, ctx context.Context, u *url.URL, signIn bool, allow ...string) consentPage {
	t.Helper()
	browsertest.Do(t, ctx, "opening the authorization URL", chromedp.Navigate(u.String()))
	if signIn {
		browsertest.Do(t, ctx, "signing in as Alice",
			chromedp.WaitVisible(chromedp.CSS("#login-user_alice")),
			chromedp.Click(chromedp.CSS("#login-user_alice")))
	}
	browsertest.Do(t, ctx, "the consent page", chromedp.WaitVisible(chromedp.CSS("#allow")))
	c := consentPage{
		asked:      browsertest.Value(t, ctx, "reading the capabilities asked for", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(".cap input[type=checkbox]"), e => e.value)`)),
		clientName: browsertest.Text(t, ctx, "#oauth-client-name"),
		clientID:   browsertest.Text(t, ctx, "#oauth-client-id"),
	}
	for _, name := range c.asked {
		if !slices.Contains(allow, name) {
			browsertest.Do(t, ctx, "leaving out "+name, chromedp.Click(chromedp.CSS("#cap-"+name+` input[type=checkbox]`)))
		}
	}
	browsertest.Do(t, ctx, "allowing",
		chromedp.Click(chromedp.CSS("#allow")),
		chromedp.WaitVisible(chromedp.CSS("#callback-done")))
	return c
}

// oauthScript is a running oauth.mjs: its stdout lines arrive on lines.
type oauthScript struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *syncBuffer
	done   chan error
}

// startOAuthScript runs node oauth.mjs args in dir. It is killed when the
// test ends, or after two minutes.
func startOAuthScript(t *testing.T, dir string, args ...string) *oauthScript {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, "node", append([]string{"oauth.mjs"}, args...)...)
	cmd.Dir = dir
	n := &oauthScript{cmd: cmd, lines: make(chan string, 16), stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = n.stderr
	var err error
	if n.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			n.lines <- sc.Text()
		}
		close(n.lines)
		n.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cancel()
		_ = n.stdin.Close()
		for range n.lines {
		}
	})
	return n
}

// next returns the script's next line, failing the test when it ends or
// prints nothing for a minute.
func (n *oauthScript) next(t *testing.T) string {
	t.Helper()
	select {
	case line, ok := <-n.lines:
		if !ok {
			t.Fatalf("oauth.mjs ended early: %v\n%s", <-n.done, n.stderr)
		}
		t.Logf("oauth.mjs: %s", line)
		return line
	case <-time.After(time.Minute):
		t.Fatalf("oauth.mjs printed nothing for a minute:\n%s", n.stderr)
	}
	return ""
}

// authorize reads the script's next line, which must ask to send the
// user to an authorization URL.
func (n *oauthScript) authorize(t *testing.T) *url.URL {
	t.Helper()
	line := n.next(t)
	raw, ok := strings.CutPrefix(line, "authorize ")
	u, err := url.Parse(raw)
	if !ok || err != nil {
		t.Fatalf("oauth.mjs printed %q, not an authorization URL\n%s", line, n.stderr)
	}
	return u
}

// step reads the script's next line, the JSON report of step, into v
// (nil: read nothing more).
func (n *oauthScript) step(t *testing.T, step string, v any) {
	t.Helper()
	line := n.next(t)
	var head struct {
		Step string `json:"step"`
	}
	if err := json.Unmarshal([]byte(line), &head); err != nil || head.Step != step {
		t.Fatalf("oauth.mjs printed %q, not the step %q\n%s", line, step, n.stderr)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(line), v); err != nil {
			t.Fatalf("step %s: %v", step, err)
		}
	}
}

// grantedTools reads the steps tools and call: tools/list lists the two
// tools Alice allowed, and check_balance runs.
func (n *oauthScript) grantedTools(t *testing.T) {
	t.Helper()
	var tools struct {
		Names []string `json:"names"`
	}
	n.step(t, "tools", &tools)
	if !slices.Equal(tools.Names, []string{"check_balance", "exchange_rate"}) {
		t.Errorf("tools/list: %v", tools.Names)
	}
	var call tsCall
	n.step(t, "call", &call)
	if call.IsError || !strings.HasPrefix(call.Text, `{"account_id":"acc_123","balance":`) {
		t.Errorf("check_balance: %+v", call)
	}
}

// send writes a line to the script.
func (n *oauthScript) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(n.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// wait waits for the script to exit on its own, successfully, having
// printed nothing more.
func (n *oauthScript) wait(t *testing.T) {
	t.Helper()
	if line, ok := <-n.lines; ok {
		t.Errorf("oauth.mjs printed more: %q", line)
		for range n.lines {
		}
	}
	if err := <-n.done; err != nil {
		t.Errorf("oauth.mjs: %v\n%s", err, n.stderr)
	}
}
