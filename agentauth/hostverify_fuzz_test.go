package agentauth_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// FuzzVerifyHost feeds host JWTs, valid and mangled, to a HostVerifier:
// it never panics, accepts only tokens the test minted, and refuses
// everything else with a *agentcap.Error of the protocol (401, or 403 for
// a host state), never a server error. tokenType never panics either.
func FuzzVerifyHost(f *testing.F) {
	host := htHost(9, agentauthtest.Host{ID: "hst_fuzz", UserID: "user_f"})
	dir, err := agentauthtest.NewDirectory([]*agentauthtest.Host{host}, nil)
	if err != nil {
		f.Fatal(err)
	}
	v, err := agentauth.NewHostVerifier(agentauth.HostVerifierConfig{Directory: dir, Audiences: []string{htIssuer}, Now: htClock})
	if err != nil {
		f.Fatal(err)
	}
	valid := map[string]bool{}
	for i := range 3 {
		tok := host.Token(agentauthtest.Token{Audience: htIssuer, JTI: fmt.Sprintf("fuzz-%d", i)})
		valid[tok] = true
		f.Add(tok)
	}
	f.Add("")
	f.Add("a.b.c")
	f.Add(host.Token(agentauthtest.Token{Audience: htIssuer, Type: "agent+jwt"}))
	f.Add(host.Token(agentauthtest.Token{Audience: htIssuer, Header: map[string]any{"jku": "https://evil.example"}}))
	f.Fuzz(func(t *testing.T, token string) {
		_ = agentauth.TokenType(token)
		h, err := v.VerifyHost(context.Background(), token)
		if err == nil {
			if !valid[token] || h == nil || h.ID != "hst_fuzz" {
				t.Fatalf("accepted %q as %+v", token, h)
			}
			return
		}
		var ae *agentcap.Error
		if !errors.As(err, &ae) || (ae.HTTPStatus() != 401 && ae.HTTPStatus() != 403) {
			t.Fatalf("error %v for %q", err, token)
		}
	})
}
