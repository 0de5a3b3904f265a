package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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

// testGrantChangeExpiry checks GrantChange.ExpiresAt: activating a grant
// sets its expiry (or clears it), other changes keep it, and the
// directory view carries it to the verifier.
func testGrantChangeExpiry(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	a := newAgent("agt_1", "hst_1")
	a.Grants = []store.Grant{
		{Capability: "a", Status: agentauth.StatusPending},
		{Capability: "b", Status: agentauth.StatusActive, ExpiresAt: ptr(at(time.Hour))},
	}
	mustAgent(t, s, a)
	until := at(90 * time.Minute)
	must(t, s.UpdateGrantStatus(ctx, "agt_1", "a", store.GrantChange{
		From: []string{agentauth.StatusPending}, To: agentauth.StatusActive, By: "usr_1", ExpiresAt: &until}))
	must(t, s.UpdateGrantStatus(ctx, "agt_1", "b", store.GrantChange{
		From: []string{agentauth.StatusActive}, To: agentauth.StatusDenied, By: "usr_1", Reason: "revoked"}))
	gs, err := s.ListGrants(ctx, "agt_1")
	must(t, err)
	want := []store.Grant{
		{Capability: "a", Status: agentauth.StatusActive, GrantedBy: "usr_1", ExpiresAt: &until},
		{Capability: "b", Status: agentauth.StatusDenied, DeniedBy: "usr_1", Reason: "revoked", ExpiresAt: ptr(at(time.Hour))},
	}
	if diff := cmp.Diff(want, gs, ignoreUpdated); diff != "" {
		t.Errorf("after the changes (-want +got):\n%s", diff)
	}
	d, err := s.Agent(ctx, "agt_1")
	must(t, err)
	if d.Grants[0].ExpiresAt == nil || !d.Grants[0].ExpiresAt.Equal(until) {
		t.Errorf("directory grant expiry %v, want %v", d.Grants[0].ExpiresAt, until)
	}
	// Activating again without an expiry clears it.
	must(t, s.UpdateGrantStatus(ctx, "agt_1", "b", store.GrantChange{
		From: []string{agentauth.StatusDenied}, To: agentauth.StatusActive, By: "usr_1"}))
	if g := grant(t, getAgent(t, s, "agt_1"), "b"); g.ExpiresAt != nil {
		t.Errorf("re-activated grant keeps expiry %v", g.ExpiresAt)
	}
}
