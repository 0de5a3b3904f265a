package provider_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/agentauth/provider"
)

// newPageEnv serves the approval page with the development sign-in for
// alice and bob at /login.
func newPageEnv(t testing.TB, mods ...func(*provider.Config)) *env {
	wrap, signIn := devLoginSite()
	return newEnvWrapped(t, wrap, append([]func(*provider.Config){signIn}, mods...)...)
}

// devLoginSite returns what serves the development sign-in for alice and
// bob at /login beside a site, and the configuration that uses it.
func devLoginSite() (func(http.Handler) http.Handler, func(*provider.Config)) {
	dev := provider.NewDevLogin(provider.User{ID: "alice", Name: "Alice"}, provider.User{ID: "bob", Name: "Bob"})
	return func(h http.Handler) http.Handler {
			mux := http.NewServeMux()
			mux.Handle("/login", dev)
			mux.Handle("/", h)
			return mux
		}, func(c *provider.Config) {
			c.SignedInUser = dev.SignedInUser
			c.SignInURL = "/login"
		}
}

// browser is a cookie-keeping HTTP client that does not follow
// redirects, so that each step is seen.
type browser struct {
	t testing.TB
	c *http.Client
	e *env
}

func newBrowser(t testing.TB, e *env) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, e: e, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) get(path string) (int, string, http.Header) {
	b.t.Helper()
	resp, err := b.c.Get(b.e.url + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

func (b *browser) post(path string, form url.Values, header map[string]string) (int, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.e.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signIn signs user in through the development sign-in form, as a
// browser does: it gets the form, then posts it with its CSRF token. It
// returns the status of the POST.
func (b *browser) signIn(user, next string) int {
	b.t.Helper()
	status, page, _ := b.get("/login?next=" + url.QueryEscape(next))
	m := csrfField.FindStringSubmatch(page)
	if status != http.StatusOK || m == nil {
		b.t.Fatalf("sign-in form: %d %s", status, page)
	}
	status, _ = b.post("/login", url.Values{"user": {user}, "next": {next}, "csrf": {m[1]}}, nil)
	return status
}

func TestApprovalPageForms(t *testing.T) {
	e := newPageEnv(t)
	h := newKey(t)
	r := e.register(h, newKey(t), map[string]any{"name": "<b>Evil</b> agent", "host_name": "laptop\u202eexe.txt",
		"reason": "<script>alert(1)</script>", "capabilities": []any{"echo", "check_balance"}})
	code := r.body["approval"].(map[string]any)["user_code"].(string)
	b := newBrowser(t, e)

	// Not signed in: sent to the sign-in page with the way back.
	status, _, hdr := b.get("/approve?code=" + code)
	if status != http.StatusSeeOther || hdr.Get("Location") != "/login?next="+url.QueryEscape("/approve?code="+code) {
		t.Fatalf("anonymous: %d %q", status, hdr.Get("Location"))
	}
	if status := b.signIn("alice", "/approve"); status != http.StatusSeeOther {
		t.Fatalf("sign in: %d", status)
	}
	status, page, hdr := b.get("/approve?code=" + code)
	if status != 200 {
		t.Fatalf("review: %d %s", status, page)
	}
	for _, want := range []string{"&lt;b&gt;Evil&lt;/b&gt; agent", "&lt;script&gt;", "laptopexe.txt", "first connection from this host", code} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "\u202e") {
		t.Error("untrusted text reached the page unescaped")
	}
	for _, h := range []string{"Content-Security-Policy", "X-Frame-Options"} {
		if hdr.Get(h) == "" {
			t.Errorf("no %s", h)
		}
	}
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token")
	}
	form := url.Values{"code": {code}, "step": {"review"}, "action": {"allow"}, "capability": {"echo"}}
	tests := []struct {
		name   string
		csrf   string
		header map[string]string
	}{
		{"no token", "", nil},
		{"forged token", "1." + strings.Repeat("A", 43), nil},
		{"tampered token", strings.Replace(m[1], ".", ".x", 1), nil},
		{"cross-site origin", m[1], map[string]string{"Origin": "https://evil.example"}},
		{"cross-site fetch", m[1], map[string]string{"Sec-Fetch-Site": "cross-site"}},
	}
	for _, tt := range tests {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		f.Set("csrf", tt.csrf)
		if status, body := b.post("/approve", f, tt.header); status != http.StatusForbidden {
			t.Errorf("%s: %d %s", tt.name, status, body)
		}
	}
	// Bob's session cannot use alice's token.
	bob := newBrowser(t, e)
	bob.signIn("bob", "/")
	f := url.Values{"csrf": {m[1]}}
	for k, v := range form {
		f[k] = v
	}
	if status, _ := bob.post("/approve", f, nil); status != http.StatusForbidden {
		t.Errorf("bob with alice's token: %d", status)
	}
	// The real thing, from the page's own origin.
	if status, body := b.post("/approve", f, map[string]string{"Origin": e.url, "Sec-Fetch-Site": "same-origin"}); status != 200 || !strings.Contains(body, "You allowed") {
		t.Fatalf("allow: %d %s", status, body)
	}
	e.clock.Advance(2e9)
	st := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+r.str("agent_id"), e.hostToken(h, nil), nil)
	if g := grants(st); st.str("status") != "active" || g["echo"] != "active" || g["check_balance"] != "denied" {
		t.Errorf("after the page: %s", st.raw)
	}
}
