package oidcauth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/auth/oidcauth"
)

// TestAuthorizationHeaders checks how the verifier reads Authorization
// values: without Bearer credentials the request has none; with them,
// anything but one valid token is invalid.
func TestAuthorizationHeaders(t *testing.T) {
	iss := newIssuer(t)
	v := oidcauth.New(iss.Verifier(audience), identify)
	token := iss.Token(t, jwt.Claims{Issuer: iss.URL, Subject: "user-1", Audience: jwt.Audience{audience},
		Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour))})
	tests := []struct {
		header string
		want   agentcap.Code // "" for a verified caller
	}{
		{"Bearer " + token, ""},
		{"bearer " + token, ""},
		{"BEARER " + token + "\t", ""},
		{"  Bearer " + token + "  ", ""},
		{"Bearer", agentcap.CodeInvalidJWT},
		{"Bearer ", agentcap.CodeInvalidJWT},
		{"Bearer abc", agentcap.CodeInvalidJWT},
		{"Bearer " + token + " " + token, agentcap.CodeInvalidJWT},
		{"Bearer" + token, agentcap.CodeAuthenticationRequired},
		{"Bearer\t" + token, agentcap.CodeAuthenticationRequired},
		{"Basic abc", agentcap.CodeAuthenticationRequired},
		{"", agentcap.CodeAuthenticationRequired},
	}
	for _, tc := range tests {
		id, err := v.Verify(context.Background(), &auth.Request{Authorization: tc.header})
		if got := agentcap.CodeOf(err); got != tc.want || (err == nil) != (id != nil) {
			t.Errorf("%.40q: %v, %v; want code %q", tc.header, id, err, tc.want)
		}
	}
}

// FuzzBearer feeds arbitrary Authorization values to the verifier: a
// value without Bearer credentials is refused as no credentials, any
// other as invalid, in the one fixed message whatever went wrong, unless
// it is the one signed token.
func FuzzBearer(f *testing.F) {
	iss := newIssuer(f)
	valid := "Bearer " + iss.Token(f, jwt.Claims{Issuer: iss.URL, Subject: "user-1", Audience: jwt.Audience{audience},
		Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour))})
	for _, s := range []string{"Bearer abc", "bearer", "Basic x", "", "Bearer\t\ttok", "Bearer a.b.c", valid} {
		f.Add(s)
	}
	v := oidcauth.New(iss.Verifier(audience), identify)
	f.Fuzz(func(t *testing.T, h string) {
		id, err := v.Verify(context.Background(), &auth.Request{Authorization: h})
		token, bearer := auth.BearerToken(h)
		switch {
		case !bearer:
			if id != nil || !errors.Is(err, auth.ErrNoCredentials) {
				t.Fatalf("no Bearer credentials: %v, %v", id, err)
			}
		case err == nil:
			if id == nil || id.Subject != "user-1" || token == "" {
				t.Fatalf("verified %q as %+v", h, id)
			}
		default:
			e := agentcap.As(err)
			if id != nil || e == nil || e.Code != agentcap.CodeInvalidJWT || e.Message != "the credentials are invalid" {
				t.Fatalf("%q: %v, %v", h, id, err)
			}
		}
	})
}
