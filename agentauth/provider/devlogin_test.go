package provider_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap/agentauth/provider"
)

// devLoginPost shows the development sign-in form of d, as a browser
// would get it, and posts it for user with next; it returns the answer.
func devLoginPost(t testing.TB, d *provider.DevLogin, user, next string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	d.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/login", nil))
	m := csrfField.FindStringSubmatch(rec.Body.String())
	if rec.Code != http.StatusOK || m == nil {
		t.Fatalf("sign-in form: %d %s", rec.Code, rec.Body)
	}
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"user": {user}, "next": {next}, "csrf": {m[1]}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range rec.Result().Cookies() {
		req.AddCookie(c)
	}
	rec = httptest.NewRecorder()
	d.ServeHTTP(rec, req)
	return rec
}

// devSignIn signs user in through d and returns the request a browser
// would send next, carrying the cookie it was given.
func devSignIn(t testing.TB, d *provider.DevLogin, user string) *http.Request {
	t.Helper()
	rec := devLoginPost(t, d, user, "")
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", rec.Code, rec.Body)
	}
	next := httptest.NewRequest(http.MethodGet, "/approve", nil)
	for _, c := range rec.Result().Cookies() {
		if c.Name == provider.DevLoginCookie {
			next.AddCookie(c)
		}
	}
	return next
}

func TestDevLoginSharedSecret(t *testing.T) {
	alice := provider.User{ID: "user_alice", Name: "Alice"}
	secret := bytes.Repeat([]byte{7}, 32)
	a := provider.NewDevLogin(alice).WithSecret(secret)
	b := provider.NewDevLogin(alice).WithSecret(secret)
	other := provider.NewDevLogin(alice)

	req := devSignIn(t, a, "user_alice")
	for name, d := range map[string]*provider.DevLogin{"same instance": a, "same secret": b} {
		u, err := d.SignedInUser(req)
		if err != nil || u == nil || u.ID != "user_alice" {
			t.Errorf("%s: SignedInUser = %+v, %v; want user_alice", name, u, err)
		}
	}
	if u, err := other.SignedInUser(req); err != nil || u != nil {
		t.Errorf("another secret: SignedInUser = %+v, %v; want nobody", u, err)
	}

	defer func() {
		if recover() == nil {
			t.Error("WithSecret accepted a 16-byte secret")
		}
	}()
	provider.NewDevLogin(alice).WithSecret(make([]byte, 16))
}

// TestDevLoginNext signs in with "next" values that lead elsewhere: only
// a path on the same site is followed, anything else leads to "/".
func TestDevLoginNext(t *testing.T) {
	d := provider.NewDevLogin(provider.User{ID: "alice"})
	tests := []struct{ next, want string }{
		{"/approve?code=BCDF-GHJK", "/approve?code=BCDF-GHJK"},
		{"/agents", "/agents"},
		{"", "/"},
		{"/\t/evil.example", "/"},
		{"/\n/evil.example", "/"},
		{"/\r/evil.example", "/"},
		{"/\x00/evil.example", "/"},
		{"\t//evil.example", "/"},
		{"//evil.example", "/"},
		{"/\\evil.example", "/"},
		{"/\\/evil.example", "/"},
		{"\\\\evil.example", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"/%2F/evil.example", "/"},
		{"evil.example", "/"},
	}
	for _, tt := range tests {
		rec := devLoginPost(t, d, "alice", tt.next)
		if got := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || got != tt.want {
			t.Errorf("next %q: %d, Location %q, want %q", tt.next, rec.Code, got, tt.want)
		}
	}
	// The form keeps only what the POST would follow.
	rec := httptest.NewRecorder()
	d.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/login?next=/%09/evil.example", nil))
	if !strings.Contains(rec.Body.String(), `name="next" value="/"`) {
		t.Errorf("the form carries another next: %s", rec.Body)
	}
}

// TestDevLoginCSRF posts the sign-in form as another site could: without
// the form's token, with another browser's, with a stale one. None signs
// anyone in.
func TestDevLoginCSRF(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	d := provider.NewDevLogin(provider.User{ID: "alice"}).WithClock(clk.Now)
	form := func() (*http.Cookie, string) {
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/login", nil))
		m := csrfField.FindStringSubmatch(rec.Body.String())
		var nonce *http.Cookie
		for _, c := range rec.Result().Cookies() {
			if c.Name == provider.DevLoginCSRFCookie {
				nonce = c
			}
		}
		if m == nil || nonce == nil {
			t.Fatalf("form: %d %s", rec.Code, rec.Body)
		}
		if !nonce.HttpOnly || nonce.SameSite != http.SameSiteStrictMode {
			t.Errorf("CSRF cookie %+v: want HttpOnly and SameSite=Strict", nonce)
		}
		return nonce, m[1]
	}
	victim, victimToken := form()
	attacker, attackerToken := form()
	send := func(cookie *http.Cookie, token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"user": {"alice"}, "next": {"/agents"}, "csrf": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cookie != nil {
			req.AddCookie(cookie)
		}
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, req)
		return rec
	}
	signedIn := func(rec *httptest.ResponseRecorder) bool {
		for _, c := range rec.Result().Cookies() {
			if c.Name == provider.DevLoginCookie {
				return true
			}
		}
		return false
	}
	tests := []struct {
		name   string
		cookie *http.Cookie
		token  string
	}{
		{"no cookie, no token", nil, ""},
		{"no cookie", nil, attackerToken},
		{"no token", victim, ""},
		{"another browser's token", victim, attackerToken},
		{"a forged token", victim, "1700000000." + strings.Repeat("A", 43)},
	}
	for _, tt := range tests {
		if rec := send(tt.cookie, tt.token); rec.Code != http.StatusForbidden || signedIn(rec) {
			t.Errorf("%s: %d, signed in %v", tt.name, rec.Code, signedIn(rec))
		}
	}
	if rec := send(attacker, attackerToken); rec.Code != http.StatusSeeOther || !signedIn(rec) {
		t.Errorf("the form's own token: %d %s", rec.Code, rec.Body)
	}
	clk.Advance(2 * time.Hour)
	if rec := send(victim, victimToken); rec.Code != http.StatusForbidden || signedIn(rec) {
		t.Errorf("a token two hours old: %d", rec.Code)
	}
}

// FuzzDevLoginNext signs in with arbitrary "next" values: the Location
// is always a path on the same site as a browser reads it, one that
// drops tabs and line breaks, takes a backslash for a slash and a
// leading "//" for another host.
func FuzzDevLoginNext(f *testing.F) {
	for _, s := range []string{"/approve?code=BCDF-GHJK", "/\t/evil.example", "//evil.example", "/\\evil.example",
		"https://evil.example", "/%2F/evil.example", "/./.././/x", " //x", "/\u3000/x", "/a\xff/b", ""} {
		f.Add(s)
	}
	d := provider.NewDevLogin(provider.User{ID: "alice"})
	f.Fuzz(func(t *testing.T, next string) {
		rec := devLoginPost(t, d, "alice", next)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("next %q: %d", next, rec.Code)
		}
		loc := rec.Header().Get("Location")
		read := strings.Map(func(r rune) rune {
			switch r {
			case '\t', '\n', '\r':
				return -1
			case '\\':
				return '/'
			}
			return r
		}, strings.TrimLeft(loc, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f "))
		if !strings.HasPrefix(read, "/") || strings.HasPrefix(read, "//") {
			t.Fatalf("next %q: Location %q leaves the site", next, loc)
		}
	})
}
