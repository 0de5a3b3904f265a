package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/agentcap/agentcap/internal/browsertest"
)

// The go-sdk's OAuth client, as an MCP host embeds it, against the bank's
// authorization server: it finds the server from the endpoint's 401,
// identifies itself with a Client ID Metadata Document or a dynamic
// registration and sends its user through the authorization code flow,
// which the tests play in headless Chromium (sign-in, the capabilities
// chosen, their limits, the passkey); it asks again for a tool not
// granted, refreshes its tokens, and after its agent is revoked asks its
// user again.

// hostName is the client_name of the test host: its markup must show on
// the consent page as text.
const hostName = "Ledger <b>helper</b>"

// errUserAway is the fetcher's answer once the user is not to be asked
// again.
var errUserAway = errors.New("the user is not asked again")

// oauthHost is an MCP host built on the go-sdk's OAuth client. Its
// redirect URI is a loopback callback server; its authorization code
// fetcher hands the authorization URL to the test, which plays the user
// in Chromium, and waits for the code at the callback. It counts what the
// SDK does: fetches, code exchanges, refreshes.
type oauthHost struct {
	redirect string
	// asks carries the authorization URL of each fetch to the test, and
	// callback the query of each request to the redirect URI to the
	// fetcher.
	asks     chan string
	callback chan url.Values
	// refuse makes the fetcher answer errUserAway.
	refuse    atomic.Bool
	fetches   atomic.Int32
	exchanges atomic.Int32
	// refreshes counts the refresh_token grants the server answered with
	// tokens, refused the others.
	refreshes atomic.Int32
	refused   atomic.Int32

	mu sync.Mutex
	// challenges are the status and WWW-Authenticate of the endpoint's
	// 401 and 403 answers, as the SDK got them.
	challenges []string
}

// newOAuthHost starts the host's callback server.
func newOAuthHost(t *testing.T) *oauthHost {
	t.Helper()
	h := &oauthHost{asks: make(chan string), callback: make(chan url.Values, 1)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		select {
		case h.callback <- r.URL.Query():
		default:
			t.Errorf("an unexpected request to the redirect URI: %s", r.URL.RawQuery)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><title>Connected</title><p id="connected">You can close this window.</p>`)
	}))
	t.Cleanup(srv.Close)
	h.redirect = srv.URL + "/callback"
	return h
}

// fetch is the host's auth.AuthorizationCodeFetcher.
func (h *oauthHost) fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	h.fetches.Add(1)
	if h.refuse.Load() {
		return nil, errUserAway
	}
	select {
	case h.asks <- args.URL:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case q := <-h.callback:
		if e := q.Get("error"); e != "" {
			return nil, fmt.Errorf("the authorization server answered %s: %s", e, q.Get("error_description"))
		}
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// httpClient is the HTTP client of the SDK's OAuth handler (discovery,
// registration, token endpoint), counting the token requests by grant
// type and outcome.
func (h *oauthHost) httpClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: mcpRoundTripper(func(r *http.Request) (*http.Response, error) {
		if r.Method != http.MethodPost || r.URL.Path != "/oauth/token" || r.Body == nil {
			return http.DefaultTransport.RoundTrip(r)
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		form, _ := url.ParseQuery(string(body))
		switch form.Get("grant_type") {
		case "authorization_code":
			h.exchanges.Add(1)
		case "refresh_token":
			if resp.StatusCode == http.StatusOK {
				h.refreshes.Add(1)
			} else {
				h.refused.Add(1)
			}
		}
		return resp, nil
	})}
}

// endpointClient is the HTTP client of the SDK's MCP transport, keeping
// the endpoint's authentication challenges.
func (h *oauthHost) endpointClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: mcpRoundTripper(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			h.mu.Lock()
			h.challenges = append(h.challenges, fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate")))
			h.mu.Unlock()
		}
		return resp, err
	})}
}

// lastChallenge is the latest of the endpoint's challenges, and how many
// there were.
func (h *oauthHost) lastChallenge() (string, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.challenges) == 0 {
		return "", 0
	}
	return h.challenges[len(h.challenges)-1], len(h.challenges)
}

// connect connects the go-sdk client to endpoint with the OAuth handler
// of cfg, completed with the host's redirect URI, fetcher and HTTP
// client.
func (h *oauthHost) connect(ctx context.Context, endpoint string, cfg auth.AuthorizationCodeHandlerConfig) (*mcp.ClientSession, error) {
	cfg.RedirectURL = h.redirect
	cfg.AuthorizationCodeFetcher = h.fetch
	cfg.Client = h.httpClient()
	handler, err := auth.NewAuthorizationCodeHandler(&cfg)
	if err != nil {
		return nil, err
	}
	return mcp.NewClient(&mcp.Implementation{Name: "oauth test host", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:     endpoint,
		HTTPClient:   h.endpointClient(),
		OAuthHandler: handler,
		MaxRetries:   -1,
	}, nil)
}

// background runs f, a call of the host that may wait for its user, on a
// goroutine of its own while the test plays the user.
func background(f func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	return done
}

// awaitConsent returns the authorization URL the host's fetcher was
// given, failing if the host's call ends without asking.
func (h *oauthHost) awaitConsent(t *testing.T, done <-chan error) string {
	t.Helper()
	select {
	case u := <-h.asks:
		return u
	case err := <-done:
		t.Fatalf("the host did not ask for an authorization: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the host did not ask for an authorization within a minute")
	}
	return ""
}

// finish waits for the host's call that started done.
func finish(t *testing.T, what string, done <-chan error, logs *syncBuffer) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, logs)
		}
	case <-time.After(time.Minute):
		t.Fatalf("%s: not done within a minute", what)
	}
}

// openConsent opens the authorization URL in the browser, as the host
// would, signs in as Alice when the bank asks, and waits for the consent
// page.
func openConsent(t *testing.T, ctx context.Context, authURL string, signIn bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	browsertest.Do(t, ctx, "opening the authorization URL", chromedp.Navigate(authURL))
	if signIn {
		browsertest.WaitPath(t, ctx, "/login")
		browsertest.Do(t, ctx, "signing in as Alice", chromedp.Click(chromedp.CSS("#login-user_alice")))
	}
	browsertest.Do(t, ctx, "the consent page", chromedp.WaitVisible(chromedp.CSS("#oauth-client")), chromedp.WaitVisible(chromedp.CSS("#allow")))
}

// checkClient checks how the consent page presents the client: its
// name as text, how it is identified, where it returns the user.
func checkClient(t *testing.T, ctx context.Context, identified, redirectOrigin string) {
	t.Helper()
	want := map[string]string{"#oauth-client-name": hostName, "#oauth-client-id": identified, "#oauth-redirect": redirectOrigin}
	for sel, v := range want {
		if got := browsertest.Text(t, ctx, sel); got != v {
			t.Errorf("%s = %q, want %q", sel, got, v)
		}
	}
	if browsertest.Value(t, ctx, "looking for markup in the name", chromedp.Evaluate[bool](`document.querySelector("#oauth-client-name").children.length > 0`)) {
		t.Error("the client's name was rendered as markup")
	}
}

// capabilitiesAsked lists the capabilities the consent page asks for.
func capabilitiesAsked(t *testing.T, ctx context.Context) []string {
	t.Helper()
	caps := browsertest.Value(t, ctx, "listing the capabilities asked for", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(".cap input[type=checkbox]"), e => e.value)`))
	slices.Sort(caps)
	return caps
}

// uncheck clears the checkboxes of caps on the consent page.
func uncheck(caps ...string) chromedp.Action[chromedp.Void] {
	var steps []chromedp.Action[chromedp.Void]
	for _, c := range caps {
		steps = append(steps, chromedp.Click(chromedp.CSS("#cap-"+c+" input[type=checkbox]")))
	}
	return chromedp.Steps(steps...)
}

// toolNames lists the tools the session sees, sorted.
func toolNames(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// callTool calls a tool that must succeed and returns its text.
func callTool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	text := mcpText(t, res)
	if res.IsError {
		t.Fatalf("tools/call %s failed: %s", name, text)
	}
	return text
}

// executionLine is the bank's log line of an execution.
var executionLine = regexp.MustCompile(`msg=execution agent=(\S*) capability=(\S+) outcome=(\S+)`)

// executions lists the executions in the bank's log, as agent,
// capability and outcome: all of them once the bank has stopped.
func executions(logs *syncBuffer) [][3]string {
	var out [][3]string
	for _, m := range executionLine.FindAllStringSubmatch(logs.String(), -1) {
		out = append(out, [3]string{m[1], m[2], m[3]})
	}
	return out
}

// serveClientDocument serves the host's Client ID Metadata Document over
// TLS on loopback, and returns its URL and a PEM file of the server's
// certificate, for the bank's -dev-fetch-roots.
func serveClientDocument(t *testing.T, redirect string) (docURL, roots string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	docURL = "https://" + srv.Listener.Addr().String() + "/client.json"
	doc, err := json.Marshal(map[string]any{
		"client_id":                  docURL,
		"client_name":                hostName,
		"redirect_uris":              []string{redirect},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/client.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	})
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots = filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(roots, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return docURL, roots
}

// originOf is scheme://host of a URL.
func originOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Scheme + "://" + u.Host
}

// TestOAuthGoSDKInChromium connects the go-sdk's OAuth client, identified
// by its Client ID Metadata Document, to the bank's /mcp. Alice consents
// in Chromium to list_accounts and transfer_money (limited to acc_456,
// with her passkey) and not to the rest; the host sees and calls those
// tools only. A call of check_balance makes the SDK ask again (403
// insufficient_scope); Alice allows it, the call goes through, and both
// consents went to one agent. Past the access token's lifetime the SDK
// refreshes without asking; once Alice revokes the agent on "Your
// agents", the next call fails: the refresh is refused, the SDK asks for
// a new authorization, which the host's user does not give, and no tool
// runs.
func TestOAuthGoSDKInChromium(t *testing.T) {
	bin := buildBank(t)
	h := newOAuthHost(t)
	docURL, roots := serveClientDocument(t, h.redirect)
	db := filepath.Join(t.TempDir(), "bank.db")
	p := startBankIn(t, bin, "", func(addr, _ string) []string {
		return []string{"-addr", addr, "-db", db, "-dev-allow-loopback-jwks", "-dev-fetch-roots", roots,
			"-oauth-access-lifetime", "3s", "-debug"}
	})
	base := strings.Replace(p.url, "http://127.0.0.1:", "http://localhost:", 1)
	ctx := browsertest.New(t)
	browsertest.Authenticator(t, ctx)
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The host connects: the SDK meets the 401, discovers the bank and
	// sends Alice to consent.
	var cs *mcp.ClientSession
	done := background(func() (err error) {
		cs, err = h.connect(cctx, base+"/mcp", auth.AuthorizationCodeHandlerConfig{
			ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: docURL},
		})
		return err
	})
	openConsent(t, ctx, h.awaitConsent(t, done), true)
	checkClient(t, ctx, docURL, originOf(t, h.redirect))
	all := []string{"check_balance", "exchange_rate", "list_accounts", "statement_export", "transfer_money"}
	if got := capabilitiesAsked(t, ctx); !slices.Equal(got, all) {
		t.Errorf("the first consent asks for %q, want %q", got, all)
	}
	browsertest.Screenshot(t, ctx, "bank-oauth-consent.png")
	browsertest.Do(t, ctx, "allowing list_accounts, and transfer_money to acc_456",
		uncheck("check_balance", "exchange_rate", "statement_export"),
		chromedp.SendKeys(chromedp.CSS("#constraint-transfer_money-destination_account"), "acc_456"),
		chromedp.Click(chromedp.CSS("#allow")),
		chromedp.WaitVisible(chromedp.CSS("#passkey")))
	if s := browsertest.Text(t, ctx, "#strong"); s != "transfer_money" {
		t.Errorf("to confirm in person: %q", s)
	}
	if s := browsertest.Text(t, ctx, "#decided"); !strings.Contains(s, "list_accounts") || !strings.Contains(s, "transfer_money") || !strings.Contains(s, "acc_456") {
		t.Errorf("allowing: %q", s)
	}
	if browsertest.Value(t, ctx, "looking for the first-use offer", chromedp.Evaluate[bool](`!!document.getElementById("passkey-new")`)) {
		browsertest.Do(t, ctx, "adding a passkey",
			chromedp.SendKeys(chromedp.CSS("#passkey-name"), "laptop"),
			chromedp.Click(chromedp.CSS("#create-passkey")),
			chromedp.WaitVisible(chromedp.CSS("#use-passkey")))
	}
	browsertest.Do(t, ctx, "allowing with the passkey", chromedp.Click(chromedp.CSS("#use-passkey")))
	browsertest.WaitPath(t, ctx, "/callback")
	finish(t, "connecting", done, p.logs)
	defer cs.Close()
	if n, x := h.fetches.Load(), h.exchanges.Load(); n != 1 || x != 1 {
		t.Errorf("after connecting: %d fetches, %d code exchanges; want 1 and 1", n, x)
	}
	if c, n := h.lastChallenge(); n != 1 || !strings.HasPrefix(c, "401 Bearer ") || !strings.Contains(c, `resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("the endpoint's challenge to the host's first request: %q (%d in all)", c, n)
	}

	if got, want := toolNames(t, cctx, cs), []string{"list_accounts", "transfer_money"}; !slices.Equal(got, want) {
		t.Errorf("tools/list after the first consent: %q, want %q", got, want)
	}
	if s := callTool(t, cctx, cs, "list_accounts", nil); !strings.Contains(s, "acc_123") || !strings.Contains(s, "acc_124") {
		t.Errorf("list_accounts: %s", s)
	}

	// A tool not granted: 403 insufficient_scope, and the SDK asks Alice
	// for it alone.
	var res *mcp.CallToolResult
	done = background(func() (err error) {
		res, err = cs.CallTool(cctx, &mcp.CallToolParams{Name: "check_balance", Arguments: map[string]any{"account_id": "acc_123"}})
		return err
	})
	openConsent(t, ctx, h.awaitConsent(t, done), false)
	checkClient(t, ctx, docURL, originOf(t, h.redirect))
	if got := capabilitiesAsked(t, ctx); !slices.Equal(got, []string{"check_balance"}) {
		t.Errorf("the step-up asks for %q, want check_balance alone", got)
	}
	browsertest.Do(t, ctx, "allowing check_balance", chromedp.Click(chromedp.CSS("#allow")))
	browsertest.WaitPath(t, ctx, "/callback")
	finish(t, "the call of check_balance", done, p.logs)
	if s := mcpText(t, res); res.IsError || !strings.Contains(s, `"account_id":"acc_123"`) || !strings.Contains(s, `"balance"`) {
		t.Errorf("check_balance after the step-up: %s", s)
	}
	if n, x := h.fetches.Load(), h.exchanges.Load(); n != 2 || x != 2 {
		t.Errorf("after the step-up: %d fetches, %d code exchanges; want 2 and 2", n, x)
	}
	if c, n := h.lastChallenge(); n != 2 || !strings.HasPrefix(c, `403 Bearer error="insufficient_scope", scope="check_balance"`) {
		t.Errorf("the endpoint's challenge to the call of check_balance: %q (%d in all)", c, n)
	}
	if got, want := toolNames(t, cctx, cs), []string{"check_balance", "list_accounts", "transfer_money"}; !slices.Equal(got, want) {
		t.Errorf("tools/list after the step-up: %q, want %q", got, want)
	}

	// Both consents went to one agent, under one host named after the
	// client.
	browsertest.Do(t, ctx, "opening Your agents", chromedp.Navigate(base+"/agents"), chromedp.WaitVisible(chromedp.CSS("#agents")))
	cards := browsertest.Value(t, ctx, "listing the agents", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#agents .card.agent"), e => e.id)`))
	hosts := browsertest.Value(t, ctx, "listing the hosts", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#hosts .card.host h3"), e => e.textContent)`))
	if len(cards) != 1 || len(hosts) != 1 || !strings.HasPrefix(hosts[0], hostName+" ") {
		t.Fatalf("Your agents lists agents %q and hosts %q, want one of each for the client", cards, hosts)
	}
	agent := strings.TrimPrefix(cards[0], "agent-")
	grants := map[string]string{"list_accounts": "active", "transfer_money": "active", "check_balance": "active",
		"exchange_rate": "denied", "statement_export": "denied"}
	for c, want := range grants {
		if s := browsertest.Text(t, ctx, "#grant-"+agent+"-"+c+" .status"); s != want {
			t.Errorf("the agent's grant of %s is %q, want %q", c, s, want)
		}
	}

	// Past the access token's lifetime the call goes through on a
	// refreshed token, without a challenge or a question to Alice. The
	// SDK's token source (x/oauth2) renews a token ten seconds before it
	// expires, so with a 3 s lifetime it refreshes before every request:
	// each refresh token is spent and replaced many times over by now.
	refreshed := h.refreshes.Load()
	time.Sleep(4 * time.Second)
	if s := callTool(t, cctx, cs, "list_accounts", nil); !strings.Contains(s, "acc_123") {
		t.Errorf("list_accounts after the access token expired: %s", s)
	}
	if n := h.refreshes.Load(); n <= refreshed {
		t.Errorf("no refresh after the access token expired (%d before, %d after)", refreshed, n)
	}
	if _, n := h.lastChallenge(); n != 2 || h.fetches.Load() != 2 {
		t.Errorf("the host was challenged or asked its user again across the refresh (%d challenges, %d fetches)", n, h.fetches.Load())
	}

	// Alice revokes the agent: the next call fails, and runs nothing.
	browsertest.Do(t, ctx, "revoking the agent",
		chromedp.Navigate(base+"/agents"),
		chromedp.WaitVisible(chromedp.CSS("#"+cards[0]+" .revoke-agent")),
		chromedp.Click(chromedp.CSS("#"+cards[0]+" .revoke-agent")),
		chromedp.WaitVisible(chromedp.CSS("#notice")))
	if s := browsertest.Text(t, ctx, "#"+cards[0]+" h3 .status"); s != "revoked" {
		t.Errorf("the agent's status after revoking: %q", s)
	}
	h.refuse.Store(true)
	refused := h.refused.Load()
	_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "list_accounts"})
	if !errors.Is(err, errUserAway) {
		t.Errorf("the call after the revocation: %v, want the refused authorization", err)
	}
	if n := h.fetches.Load(); n != 3 {
		t.Errorf("%d fetches after the revocation, want 3", n)
	}
	if n := h.refused.Load(); n <= refused {
		t.Error("no refresh was refused after the revocation")
	}
	if c, n := h.lastChallenge(); n != 3 || !strings.HasPrefix(c, "401 Bearer ") {
		t.Errorf("the endpoint's challenge after the revocation: %q (%d in all)", c, n)
	}

	// Every tool that ran, ran as the one agent: list_accounts,
	// check_balance, list_accounts on the refreshed token, and nothing
	// after the revocation. The bank's log is whole once it has stopped.
	p.stop(t)
	want := [][3]string{{agent, "list_accounts", "completed"}, {agent, "check_balance", "completed"}, {agent, "list_accounts", "completed"}}
	if got := executions(p.logs); !slices.Equal(got, want) {
		t.Errorf("executions %q, want %q", got, want)
	}
}

// TestOAuthDynamicRegistrationGoSDK connects the go-sdk's OAuth client,
// registering itself (RFC 7591), to a bank that serves dynamic
// registration. Alice consents to list_accounts alone; the host lists and
// calls it.
func TestOAuthDynamicRegistrationGoSDK(t *testing.T) {
	bin := buildBank(t)
	h := newOAuthHost(t)
	db := filepath.Join(t.TempDir(), "bank.db")
	p := startBankIn(t, bin, "", func(addr, _ string) []string {
		return []string{"-addr", addr, "-db", db, "-oauth-dynamic-registration", "-debug"}
	})
	base := strings.Replace(p.url, "http://127.0.0.1:", "http://localhost:", 1)
	ctx := browsertest.New(t)
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var cs *mcp.ClientSession
	done := background(func() (err error) {
		cs, err = h.connect(cctx, base+"/mcp", auth.AuthorizationCodeHandlerConfig{
			DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName:              hostName,
				RedirectURIs:            []string{h.redirect},
				GrantTypes:              []string{"authorization_code", "refresh_token"},
				ResponseTypes:           []string{"code"},
				TokenEndpointAuthMethod: "none",
			}},
		})
		return err
	})
	openConsent(t, ctx, h.awaitConsent(t, done), true)
	checkClient(t, ctx, "a client that registered itself, unverified", originOf(t, h.redirect))
	browsertest.Screenshot(t, ctx, "bank-oauth-dcr-consent.png")
	browsertest.Do(t, ctx, "allowing list_accounts alone",
		uncheck("check_balance", "exchange_rate", "statement_export", "transfer_money"),
		chromedp.Click(chromedp.CSS("#allow")))
	browsertest.WaitPath(t, ctx, "/callback")
	finish(t, "connecting", done, p.logs)
	defer cs.Close()

	if got, want := toolNames(t, cctx, cs), []string{"list_accounts"}; !slices.Equal(got, want) {
		t.Errorf("tools/list: %q, want %q", got, want)
	}
	if s := callTool(t, cctx, cs, "list_accounts", nil); !strings.Contains(s, "acc_123") || !strings.Contains(s, "acc_124") {
		t.Errorf("list_accounts: %s", s)
	}
	if n, x := h.fetches.Load(), h.exchanges.Load(); n != 1 || x != 1 {
		t.Errorf("%d fetches, %d code exchanges; want 1 and 1", n, x)
	}
}
