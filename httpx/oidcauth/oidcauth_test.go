package oidcauth_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/httpx/oidcauth"
	"github.com/agentcap/agentcap/internal/oidctest"
)

const audience = "agentcap-test"

// newIssuer starts a minimal OpenID provider on loopback.
func newIssuer(t *testing.T) *oidctest.Issuer { return oidctest.NewIssuer(t) }

type principal struct{ Subject string }

type whoami struct {
	Subject string `json:"subject"`
}

func newServer(t *testing.T, iss *oidctest.Issuer) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	provider, err := oidc.NewProvider(ctx, iss.URL)
	if err != nil {
		t.Fatal(err)
	}
	verifier := provider.Verifier(&oidc.Config{ClientID: audience, SupportedSigningAlgs: []string{oidc.ES256}})
	who := core.MustDefine("whoami", "Tells the caller who it is",
		func(_ context.Context, p principal, _ core.NoInput) (whoami, error) {
			return whoami(p), nil
		})
	exec := core.MustExecutor(core.MustRegistry(who), core.ExecutorConfig[principal, principal]{
		CreateContext: func(_ context.Context, p principal, _ *core.Definition, _ any) (principal, error) { return p, nil },
	})
	h, err := httpx.New(exec, httpx.Config[principal]{
		Authenticate: oidcauth.New(verifier, func(_ context.Context, tok *oidc.IDToken) (principal, error) {
			if tok.Subject == "suspended" {
				return principal{}, core.Forbidden("account_suspended", "the account is suspended")
			}
			return principal{Subject: tok.Subject}, nil
		}),
		Challenge: `Bearer realm="test"`,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.StripPrefix("/agent", h))
	t.Cleanup(srv.Close)
	return srv
}

func TestOIDCThroughHandler(t *testing.T) {
	iss := newIssuer(t)
	other := newIssuer(t)
	srv := newServer(t, iss)
	now := time.Now()
	valid := jwt.Claims{Issuer: iss.URL, Subject: "user-1", Audience: jwt.Audience{audience},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}
	claims := func(mutate func(*jwt.Claims)) jwt.Claims {
		c := valid
		mutate(&c)
		return c
	}
	const (
		invalidJWT   = `{"error":"invalid_jwt","message":"the credentials are invalid"}` + "\n"
		authRequired = `{"error":"authentication_required","message":"authentication is required"}` + "\n"
	)
	tests := []struct {
		name          string
		authorization string
		status        int
		body          string
	}{
		{"valid", "Bearer " + iss.Token(t, valid), 200, `{"data":{"subject":"user-1"}}` + "\n"},
		{"scheme is case-insensitive", "bearer " + iss.Token(t, valid), 200, `{"data":{"subject":"user-1"}}` + "\n"},
		{"expired", "Bearer " + iss.Token(t, claims(func(c *jwt.Claims) {
			c.IssuedAt = jwt.NewNumericDate(now.Add(-2 * time.Hour))
			c.Expiry = jwt.NewNumericDate(now.Add(-time.Hour))
		})), 401, invalidJWT},
		{"wrong audience", "Bearer " + iss.Token(t, claims(func(c *jwt.Claims) { c.Audience = jwt.Audience{"someone-else"} })), 401, invalidJWT},
		{"wrong issuer", "Bearer " + iss.Token(t, claims(func(c *jwt.Claims) { c.Issuer = "https://elsewhere.example" })), 401, invalidJWT},
		{"signed by another key", "Bearer " + other.Token(t, valid), 401, invalidJWT},
		{"garbage", "Bearer not.a.jwt", 401, invalidJWT},
		{"empty bearer", "Bearer ", 401, invalidJWT},
		{"missing", "", 401, authRequired},
		{"other scheme", "Basic dXNlcjpwYXNz", 401, authRequired},
		{"principal refuses", "Bearer " + iss.Token(t, claims(func(c *jwt.Claims) { c.Subject = "suspended" })), 403,
			`{"error":"account_suspended","message":"the account is suspended"}` + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", srv.URL+"/agent/capability/execute", strings.NewReader(`{"capability":"whoami"}`))
			req.Header.Set("Content-Type", "application/json")
			if tc.authorization != "" {
				req.Header.Set("Authorization", tc.authorization)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if diff := cmp.Diff(tc.body, string(body)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if tc.status == 401 && resp.Header.Get("WWW-Authenticate") != `Bearer realm="test"` {
				t.Errorf("401 without the challenge")
			}
		})
	}
}

// TestErrorsWrapCause checks that a rejected token keeps the verifier's
// reason for the logs while matching httpx.ErrBadCredentials.
func TestErrorsWrapCause(t *testing.T) {
	iss := newIssuer(t)
	provider, err := oidc.NewProvider(context.Background(), iss.URL)
	if err != nil {
		t.Fatal(err)
	}
	auth := oidcauth.New(provider.Verifier(&oidc.Config{ClientID: audience}),
		func(context.Context, *oidc.IDToken) (principal, error) { return principal{}, nil })
	hdr := http.Header{"Authorization": {"Bearer " + iss.Token(t, jwt.Claims{Issuer: iss.URL, Audience: jwt.Audience{"x"},
		Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour))})}}
	_, err = auth(context.Background(), &httpx.Request{Header: hdr.Get})
	if !errors.Is(err, httpx.ErrBadCredentials) || !strings.Contains(err.Error(), "audience") {
		t.Errorf("err = %v", err)
	}
	_, err = auth(context.Background(), &httpx.Request{})
	if !errors.Is(err, httpx.ErrNoCredentials) {
		t.Errorf("no header: err = %v", err)
	}
}
