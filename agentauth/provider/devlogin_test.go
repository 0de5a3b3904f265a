package provider_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/agentauth/provider"
)

// devSignIn posts the development sign-in form of d for user and returns the
// request a browser would send next, carrying the cookie it was given.
func devSignIn(t *testing.T, d *provider.DevLogin, user string) *http.Request {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"user": {user}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	d.ServeHTTP(rec, req)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", rec.Code, rec.Body)
	}
	next := httptest.NewRequest(http.MethodGet, "/approve", nil)
	for _, c := range rec.Result().Cookies() {
		next.AddCookie(c)
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
