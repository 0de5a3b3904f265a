package provider_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzOAuthTokenRequest posts fuzzed token and revocation requests to the
// authorization server: it never panics or fails inside, answers each
// with a JSON OAuth error (or, for revocation, 200), and never issues a
// token, since no fuzzed code or refresh token carries the provider's MAC.
// The provider's limit per client address answers some of them 429.
func FuzzOAuthTokenRequest(f *testing.F) {
	e := newOAuthEnv(&testing.T{})
	h := e.p.Handler(nil)
	f.Add("/oauth/token", "grant_type=authorization_code&code=oac_e30.9999999999.x&code_verifier="+strings.Repeat("a", 43)+"&client_id=desk-app&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback", "")
	f.Add("/oauth/token", "grant_type=refresh_token&refresh_token=ort_e30.1.x&client_id=desk-app", "")
	f.Add("/oauth/token", "grant_type=refresh_token&refresh_token=ort_&client_id=desk-app&resource=x", "Basic ZGVzay1hcHA6")
	f.Add("/oauth/token", "grant_type=client_credentials&client_id=desk-app&client_secret=s", "")
	f.Add("/oauth/revoke", "token=oat_e30.1.x&client_id=desk-app&token_type_hint=access_token", "")
	f.Add("/oauth/token", "%zz&&==;grant_type", "Bearer x")
	f.Fuzz(func(t *testing.T, path, body, authorization string) {
		if path != "/oauth/token" && path != "/oauth/revoke" {
			path = "/oauth/token"
		}
		r := httptest.NewRequest(http.MethodPost, e.url+path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if authorization != "" && !strings.ContainsAny(authorization, "\r\n") {
			r.Header.Set("Authorization", authorization)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch {
		case w.Code >= 500:
			t.Fatalf("%s %q: %d %s", path, body, w.Code, w.Body)
		case bytes.Contains(w.Body.Bytes(), []byte(`"access_token"`)):
			t.Fatalf("%s %q issued a token: %s", path, body, w.Body)
		case path == "/oauth/token" && w.Code != http.StatusBadRequest && w.Code != http.StatusUnauthorized && w.Code != http.StatusTooManyRequests:
			t.Fatalf("%s %q: %d %s", path, body, w.Code, w.Body)
		case path == "/oauth/token" && !bytes.Contains(w.Body.Bytes(), []byte(`"error"`)):
			t.Fatalf("%s %q: no OAuth error in %s", path, body, w.Body)
		}
	})
}

// FuzzOAuthAuthorizeRequest sends fuzzed authorization requests: they
// never panic or fail inside, and a redirect goes only to the registered
// redirect URI's loopback path, or to the consent step.
func FuzzOAuthAuthorizeRequest(f *testing.F) {
	e := newOAuthEnv(&testing.T{})
	h := e.p.Handler(nil)
	_, challenge := pkce("f")
	f.Add(e.authorizeURL(challenge, "echo")[len("/oauth/authorize?"):])
	f.Add("client_id=desk-app&redirect_uri=http%3A%2F%2F127.0.0.1%3A1%2Fcallback%2F..%2Fx&response_type=code")
	f.Add("client_id=desk-app&redirect_uri=http%3A%2F%2Flocalhost%2Fcallback&response_type=code&scope=%2A&resource=" + url.QueryEscape(e.resource))
	f.Add("request=eyJ&client_id=desk-app")
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest(http.MethodGet, e.url+"/oauth/authorize", nil)
		r.URL.RawQuery = query
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code >= 500 {
			t.Fatalf("%q: %d %s", query, w.Code, w.Body)
		}
		loc := w.Header().Get("Location")
		if loc == "" {
			return
		}
		u, err := url.Parse(loc)
		if err != nil {
			t.Fatalf("%q: redirect %q: %v", query, loc, err)
		}
		consent := strings.HasPrefix(loc, e.url+"/oauth/consent?")
		loopback := u.Scheme == "http" && (u.Hostname() == "127.0.0.1" || u.Hostname() == "localhost" || u.Hostname() == "::1") && u.Path == "/callback"
		if !consent && !loopback {
			t.Fatalf("%q redirected to %q", query, loc)
		}
	})
}
