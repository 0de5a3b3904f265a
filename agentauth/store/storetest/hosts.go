package storetest

import (
	"testing"
	"time"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// testHostVerifier checks that a store is an agentauth.HostKeyDirectory:
// a HostVerifier over it finds a host by the iss of its host JWTs (the
// thumbprint of its key) and follows a key rotation.
func testHostVerifier(t *testing.T, s store.Store) {
	const issuer = "https://api.example.com"
	now := time.Now()
	clock := func() time.Time { return now }
	th := agentauthtest.NewHost("hst_1", agentauthtest.WithKey(key("hv-host")), agentauthtest.WithClock(clock))
	mustHost(t, s, &store.Host{ID: th.ID, PublicKey: th.PublicJWK(), UserID: "usr_1", Status: agentauth.StatusActive})
	v, err := agentauth.NewHostVerifier(agentauth.HostVerifierConfig{Directory: s, Audiences: []string{issuer}, Now: clock})
	must(t, err)
	h, err := v.VerifyHost(ctx, th.Token(issuer))
	must(t, err)
	if h.ID != "hst_1" || h.UserID != "usr_1" {
		t.Errorf("host %+v", h)
	}
	if _, err := s.HostByKeyThumbprint(ctx, thumb("nobody")); err == nil {
		t.Error("HostByKeyThumbprint found a host for an unknown thumbprint")
	}
	// After a rotation the new key's thumbprint finds the host.
	rotated := agentauthtest.NewHost("hst_1", agentauthtest.WithKey(key("hv-host-2")), agentauthtest.WithClock(clock))
	must(t, s.RotateHostKey(ctx, "hst_1", th.Thumbprint(), rotated.PublicJWK(), ""))
	if _, err := v.VerifyHost(ctx, th.Token(issuer)); err == nil {
		t.Error("the old key still verifies")
	}
	if _, err := v.VerifyHost(ctx, rotated.Token(issuer)); err != nil {
		t.Errorf("the new key: %v", err)
	}
}
