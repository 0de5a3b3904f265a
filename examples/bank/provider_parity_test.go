package main_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// hostToken signs a host JWT for the bank at base with the host key the
// client cl uses towards it.
func hostToken(t *testing.T, cl *client.Client, base string) string {
	t.Helper()
	id, err := cl.HostIdentity(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	return agentauthtest.NewHost(agentauthtest.Host{ID: "host", Key: id.Key}).Token(agentauthtest.Token{Audience: base})
}

// listedNames lists the bank's capabilities with token and returns their
// names; no entry may carry grant_status, which only an agent JWT gets.
func listedNames(t *testing.T, p *bankProcess, token string) []string {
	t.Helper()
	r := p.do(t, http.MethodGet, "/capability/list", token, "")
	if r.status != http.StatusOK {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	var page struct {
		Capabilities []map[string]any `json:"capabilities"`
	}
	if err := json.Unmarshal(r.body, &page); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range page.Capabilities {
		if c["grant_status"] != nil {
			t.Errorf("%v carries grant_status", c["name"])
		}
		names = append(names, c["name"].(string))
	}
	slices.Sort(names)
	return names
}

// TestProviderParity runs the bank as its own provider and checks, through
// the protocol, that an autonomous agent is granted the public
// exchange_rate (approval strength none) and nothing that acts for a user,
// and that hosts list with host JWTs (§5.2): a host linked to Alice sees
// Alice's capabilities, an unlinked one the public ones.
func TestProviderParity(t *testing.T) {
	p := startProviderBank(t, buildBank(t), filepath.Join(t.TempDir(), "bank.db"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	newClient := func() *client.Client {
		cl, err := client.New(client.Config{AllowInsecureLoopback: true, Keys: client.NewMemoryKeyStore(), HostName: "parity"})
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}

	robots := newClient()
	a, st, err := robots.Connect(ctx, p.url, client.ConnectOptions{
		Name: "rate watcher", Mode: agentcap.ModeAutonomous,
		Capabilities: []client.CapabilityRequest{{Name: "exchange_rate"}, {Name: "list_accounts"}},
	})
	if err != nil {
		t.Fatalf("connect an autonomous agent: %v\n%s", err, p.logs)
	}
	got := map[string]string{}
	for _, g := range st.Grants {
		got[g.Capability] = g.Status
	}
	if st.Status != "active" || !cmp.Equal(map[string]string{"exchange_rate": "active", "list_accounts": "denied"}, got) {
		t.Fatalf("autonomous agent %s with grants %v", st.Status, got)
	}
	res, err := a.Execute(ctx, "exchange_rate", map[string]string{"from": "USD", "to": "EUR"})
	if err != nil {
		t.Fatalf("exchange_rate: %v", err)
	}
	var quote map[string]any
	if err := json.Unmarshal(res.Data, &quote); err != nil || quote["rate"] == nil {
		t.Errorf("quote %s", res.Data)
	}

	public := []string{"exchange_rate"}
	if diff := cmp.Diff(public, listedNames(t, p, hostToken(t, robots, p.url))); diff != "" {
		t.Errorf("the unlinked host lists (-want +got):\n%s", diff)
	}
	alice := newClient()
	aliceAgent, _, err := alice.Connect(ctx, p.url, client.ConnectOptions{
		Name: "assistant", Capabilities: []client.CapabilityRequest{{Name: "check_balance"}},
		OnApproval: func(ap client.Approval) {
			if err := approve(p.url, "user_alice", ap.UserCode, "check_balance"); err != nil {
				t.Error(err)
			}
		},
	})
	if err != nil {
		t.Fatalf("connect Alice's agent: %v", err)
	}
	all := []string{"check_balance", "exchange_rate", "list_accounts", "statement_export", "transfer_money"}
	if diff := cmp.Diff(all, listedNames(t, p, hostToken(t, alice, p.url))); diff != "" {
		t.Errorf("Alice's host lists (-want +got):\n%s", diff)
	}

	// A capability request by CIBA: the bank's notifier logs it, the
	// request waits on Alice's page, and she allows it there.
	var asked client.Approval
	st, err = aliceAgent.RequestCapabilities(ctx, client.RequestOptions{
		Capabilities: []client.CapabilityRequest{{Name: "list_accounts"}}, PreferredMethod: "ciba",
		BindingMessage: "List my accounts",
		OnApproval: func(ap client.Approval) {
			asked = ap
			if err := approveOnAgentsPage(p.url, "user_alice", ap.BindingMessage); err != nil {
				t.Error(err)
			}
		},
	})
	if err != nil {
		t.Fatalf("CIBA request: %v\n%s", err, p.logs)
	}
	if asked.Method != "ciba" || !strings.HasPrefix(asked.BindingMessage, "List my accounts [") || asked.UserCode != "" {
		t.Errorf("approval object %+v", asked)
	}
	if !strings.Contains(p.logs.String(), "approval requested") || !strings.Contains(p.logs.String(), "user=user_alice") {
		t.Errorf("the bank's notifier logged nothing:\n%s", p.logs)
	}
	granted := false
	for _, g := range st.Grants {
		granted = granted || (g.Capability == "list_accounts" && g.Status == "active")
	}
	if !granted {
		t.Errorf("grants after the CIBA approval: %+v", st.Grants)
	}
	d := p.do(t, http.MethodGet, "/capability/describe?name=transfer_money", hostToken(t, alice, p.url), "")
	if d.status != http.StatusOK || d.m["name"] != "transfer_money" {
		t.Errorf("describe with Alice's host JWT: %d %s", d.status, d.body)
	}
}

var requestLink = regexp.MustCompile(`href="(/approve\?request=[^"]+)"`)

// approveOnAgentsPage signs in as user, finds the request showing
// binding on the "Your agents" page, and allows it on the approval page.
func approveOnAgentsPage(base, user, binding string) error {
	c, err := newPageClient(base)
	if err != nil {
		return err
	}
	get, post := c.get, c.post
	page, err := c.signIn(user, "/agents")
	if err != nil {
		return err
	}
	if !strings.Contains(page, html.EscapeString(binding)) {
		return fmt.Errorf("the agents page does not show %q:\n%s", binding, page)
	}
	m := requestLink.FindStringSubmatch(page)
	if m == nil {
		return fmt.Errorf("no request to review on the agents page:\n%s", page)
	}
	review, err := get(html.UnescapeString(m[1]))
	if err != nil {
		return err
	}
	csrf := csrfField.FindStringSubmatch(review)
	if csrf == nil {
		return fmt.Errorf("no approval form:\n%s", review)
	}
	_, id, _ := strings.Cut(html.UnescapeString(m[1]), "request=")
	done, err := post("/approve", url.Values{"csrf": {csrf[1]}, "request": {id}, "step": {"review"}, "action": {"allow"}, "capability": {"list_accounts"}})
	if err != nil {
		return err
	}
	if !strings.Contains(done, "You allowed") {
		return fmt.Errorf("not allowed:\n%s", done)
	}
	return nil
}

// TestDirectoryHostJWT lists with a host JWT at the bank in -directory
// mode: the host is checked against the directory's hosts (§5.2), and
// hst_alice, linked to Alice, sees her capabilities.
func TestDirectoryHostJWT(t *testing.T) {
	p := startBank(t, buildBank(t), "testdata/directory.example.json")
	data, err := os.ReadFile("testdata/alice-host.key.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		JWK struct {
			D string `json:"d"`
		} `json:"jwk"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	seed, err := base64.RawURLEncoding.DecodeString(file.JWK.D)
	if err != nil {
		t.Fatal(err)
	}
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_alice", Key: ed25519.NewKeyFromSeed(seed)})
	want := []string{"check_balance", "exchange_rate", "list_accounts", "statement_export", "transfer_money"}
	if diff := cmp.Diff(want, listedNames(t, p, host.Token(agentauthtest.Token{Audience: p.url}))); diff != "" {
		t.Errorf("hst_alice lists (-want +got):\n%s", diff)
	}
	stranger := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_stranger"})
	if r := p.do(t, http.MethodGet, "/capability/list", stranger.Token(agentauthtest.Token{Audience: p.url}), ""); r.status != http.StatusUnauthorized {
		t.Errorf("a host the directory does not know: %d %s", r.status, r.body)
	}
}

// pageClient is a browser-like client of the bank's pages: it keeps
// cookies, and posts forms from the bank's own origin.
type pageClient struct {
	base string
	hc   *http.Client
}

func newPageClient(base string) (*pageClient, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	return &pageClient{base: base, hc: &http.Client{Jar: jar, Timeout: 10 * time.Second}}, nil
}

// send answers the body of a 200, and an error otherwise.
func (c *pageClient) send(req *http.Request) (string, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s %s: %d\n%s", req.Method, req.URL, resp.StatusCode, body)
	}
	return string(body), nil
}

func (c *pageClient) get(path string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	if err != nil {
		return "", err
	}
	return c.send(req)
}

// signIn signs userID in through the development sign-in, as a browser
// does: it gets the form, posts it with its CSRF token, and follows the
// redirect to next, whose page it answers.
func (c *pageClient) signIn(userID, next string) (string, error) {
	return devSignIn(c.hc, c.base, c.base, userID, next)
}

// devSignIn signs userID in through the development sign-in at base with
// hc, which must keep cookies, posting as a page of origin would, and
// answers the page next that the sign-in leads to.
func devSignIn(hc *http.Client, base, origin, userID, next string) (string, error) {
	resp, err := hc.Get(base + "/login?next=" + url.QueryEscape(next))
	if err != nil {
		return "", err
	}
	form, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return "", err
	}
	m := csrfField.FindSubmatch(form)
	if resp.StatusCode != http.StatusOK || m == nil {
		return "", fmt.Errorf("GET /login: %d\n%s", resp.StatusCode, form)
	}
	post := url.Values{"user": {userID}, "next": {next}, "csrf": {html.UnescapeString(string(m[1]))}}
	req, err := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(post.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	if resp, err = hc.Do(req); err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("POST /login: %d\n%s", resp.StatusCode, body)
	}
	return string(body), nil
}

func (c *pageClient) post(path string, form url.Values) (string, error) {
	req, err := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", c.base)
	return c.send(req)
}
