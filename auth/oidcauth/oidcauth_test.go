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

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/auth/oidcauth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/internal/oidctest"
)

const audience = "agentcap-test"

// newIssuer starts a minimal OpenID provider on loopback.
func newIssuer(t testing.TB) *oidctest.Issuer { return oidctest.NewIssuer(t) }

type principal struct{ Subject string }

type whoami struct {
	Subject string `json:"subject"`
}

// codeAccountSuspended refuses the token of a suspended account.
var codeAccountSuspended = agentcap.NewCode("account_suspended", agentcap.CodeUnauthorized)

var errUserStore = errors.New("user store unreachable")

// identify is the application's reading of a verified token: a
// suspended account is refused in its own words, an account whose
// record cannot be read fails.
func identify(_ context.Context, tok *oidc.IDToken) (*auth.Identity, error) {
	switch tok.Subject {
	case "suspended":
		return nil, agentcap.NewError(codeAccountSuspended, "the account is suspended")
	case "unreadable":
		return nil, errUserStore
	}
	return &auth.Identity{Subject: tok.Subject, UserID: tok.Subject, Claims: tok}, nil
}

// withChallenge names the Bearer scheme in every 401 answer.
type withChallenge struct{ auth.Verifier }

func (withChallenge) Challenge() string { return `Bearer realm="test"` }

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
	exec := core.MustExecutor(core.MustRegistry(who),
		func(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (principal, error) {
			return principal{Subject: id.Subject}, nil
		}, core.Config{})
	h, err := httpx.New(exec, httpx.Config{Verifier: withChallenge{oidcauth.New(verifier, identify)}})
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
		{"two tokens", "Bearer " + iss.Token(t, valid) + " x", 401, invalidJWT},
		{"missing", "", 401, authRequired},
		{"other scheme", "Basic dXNlcjpwYXNz", 401, authRequired},
		{"identify refuses", "Bearer " + iss.Token(t, claims(func(c *jwt.Claims) { c.Subject = "suspended" })), 403,
			`{"error":"account_suspended","message":"the account is suspended"}` + "\n"},
		{"identify fails", "Bearer " + iss.Token(t, claims(func(c *jwt.Claims) { c.Subject = "unreadable" })), 500,
			`{"error":"internal_error","message":"internal error"}` + "\n"},
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

// TestVerifyErrors checks the verifier's refusals as errors: a rejected
// token is invalid_jwt with the verifier's reason as hidden cause, for
// the logs; identify's *agentcap.Error passes through; any other failure
// of identify is redacted.
func TestVerifyErrors(t *testing.T) {
	iss := newIssuer(t)
	v := oidcauth.New(iss.Verifier(audience), identify)
	ctx := context.Background()
	bearer := func(subject string, aud ...string) *auth.Request {
		return &auth.Request{Authorization: "Bearer " + iss.Token(t, jwt.Claims{Issuer: iss.URL, Subject: subject,
			Audience: aud, Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour))})}
	}

	_, err := v.Verify(ctx, bearer("user-1", "x"))
	e := agentcap.As(err)
	if e == nil || e.Code != agentcap.CodeInvalidJWT || e.Message != "the credentials are invalid" ||
		errors.Unwrap(e) == nil || !strings.Contains(errors.Unwrap(e).Error(), "audience") {
		t.Errorf("wrong audience: %v", err)
	}
	for _, req := range []*auth.Request{{}, {Discovery: true}, {Authorization: "Basic dXNlcjpwYXNz"}} {
		if id, err := v.Verify(ctx, req); id != nil || !errors.Is(err, auth.ErrNoCredentials) {
			t.Errorf("%+v: %v, %v", req, id, err)
		}
	}
	if _, err := v.Verify(ctx, bearer("suspended", audience)); agentcap.CodeOf(err) != codeAccountSuspended {
		t.Errorf("identify's refusal: %v", err)
	}
	_, err = v.Verify(ctx, bearer("unreadable", audience))
	if e := agentcap.As(err); e == nil || e.Code != agentcap.CodeInternalError || e.Message != "internal error" || !errors.Is(err, errUserStore) {
		t.Errorf("identify's failure: %v", err)
	}
	id, err := v.Verify(ctx, bearer("user-1", audience))
	if err != nil || id.Subject != "user-1" || id.Claims.(*oidc.IDToken).Subject != "user-1" {
		t.Errorf("valid: %+v, %v", id, err)
	}

	nobody := oidcauth.New(iss.Verifier(audience), func(context.Context, *oidc.IDToken) (*auth.Identity, error) { return nil, nil })
	if id, err := nobody.Verify(ctx, bearer("user-1", audience)); id != nil || agentcap.CodeOf(err) != agentcap.CodeInternalError {
		t.Errorf("identify without an identity: %v, %v", id, err)
	}
}

func TestNewPanicsWithoutItsParts(t *testing.T) {
	iss := newIssuer(t)
	for name, f := range map[string]func(){
		"no verifier": func() { oidcauth.New(nil, identify) },
		"no identify": func() { oidcauth.New(iss.Verifier(audience), nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: New did not panic", name)
				}
			}()
			f()
		}()
	}
}
