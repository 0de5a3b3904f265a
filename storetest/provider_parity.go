package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
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
	th := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Key: key("hv-host"), Clock: clock})
	mustHost(t, s, &store.Host{ID: th.ID, PublicKey: th.PublicJWK(), UserID: "usr_1", Status: agentcap.StatusActive})
	v, err := agentauth.NewHostVerifier(agentauth.HostVerifierConfig{Directory: s, Audiences: []string{issuer}, Now: clock})
	must(t, err)
	h, err := v.VerifyHost(ctx, th.Token(agentauthtest.Token{Audience: issuer}))
	must(t, err)
	if h.ID != "hst_1" || h.UserID != "usr_1" {
		t.Errorf("host %+v", h)
	}
	if _, err := s.HostByKeyThumbprint(ctx, thumb("nobody")); err == nil {
		t.Error("HostByKeyThumbprint found a host for an unknown thumbprint")
	}
	// After a rotation the new key's thumbprint finds the host.
	rotated := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Key: key("hv-host-2"), Clock: clock})
	must(t, s.RotateHostKey(ctx, "hst_1", th.Thumbprint(), rotated.PublicJWK(), ""))
	if _, err := v.VerifyHost(ctx, th.Token(agentauthtest.Token{Audience: issuer})); err == nil {
		t.Error("the old key still verifies")
	}
	if _, err := v.VerifyHost(ctx, rotated.Token(agentauthtest.Token{Audience: issuer})); err != nil {
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
		{Capability: "a", Status: agentcap.StatusPending},
		{Capability: "b", Status: agentcap.StatusActive, ExpiresAt: ptr(at(time.Hour))},
	}
	mustAgent(t, s, a)
	until := at(90 * time.Minute)
	must(t, s.UpdateGrantStatus(ctx, "agt_1", "a", store.GrantChange{
		From: []string{agentcap.StatusPending}, To: agentcap.StatusActive, By: "usr_1", ExpiresAt: &until}))
	must(t, s.UpdateGrantStatus(ctx, "agt_1", "b", store.GrantChange{
		From: []string{agentcap.StatusActive}, To: agentcap.StatusDenied, By: "usr_1", Reason: "revoked"}))
	gs, err := s.ListGrants(ctx, "agt_1")
	must(t, err)
	want := []store.Grant{
		{Capability: "a", Status: agentcap.StatusActive, GrantedBy: "usr_1", ExpiresAt: &until},
		{Capability: "b", Status: agentcap.StatusDenied, DeniedBy: "usr_1", Reason: "revoked", ExpiresAt: ptr(at(time.Hour))},
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
		From: []string{agentcap.StatusDenied}, To: agentcap.StatusActive, By: "usr_1"}))
	if g := grant(t, getAgent(t, s, "agt_1"), "b"); g.ExpiresAt != nil {
		t.Errorf("re-activated grant keeps expiry %v", g.ExpiresAt)
	}
}

// testUserViews checks the signed-in user's views: their hosts, the
// agents acting for them or under their hosts, and the approval requests
// waiting for them; and the display name setters.
func testUserViews(t *testing.T, s store.Store) {
	host := func(id, user string, created time.Duration) {
		h := newHost(id)
		h.UserID, h.CreatedAt = user, at(created)
		mustHost(t, s, h)
	}
	host("hst_mine_b", "usr_1", 2*time.Second)
	host("hst_mine_a", "usr_1", time.Second)
	host("hst_unlinked", "", 0)
	host("hst_theirs", "usr_2", 0)
	agent := func(id, hostID, user, mode string, created time.Duration) {
		a := newAgent(id, hostID)
		a.UserID, a.Mode, a.CreatedAt = user, mode, at(created)
		mustAgent(t, s, a)
	}
	agent("agt_deleg", "hst_mine_a", "usr_1", agentcap.ModeDelegated, time.Second)
	agent("agt_claimed", "hst_mine_a", "usr_1", agentcap.ModeAutonomous, 0)
	agent("agt_no_user_yet", "hst_mine_b", "", agentcap.ModeDelegated, 2*time.Second)
	agent("agt_unlinked", "hst_unlinked", "", agentcap.ModeAutonomous, 0)
	agent("agt_theirs", "hst_theirs", "usr_2", agentcap.ModeDelegated, 0)
	approval := func(id, agentID, hostID, user, status string, created time.Duration) {
		must(t, s.CreateApproval(ctx, &store.Approval{ID: id, Method: store.MethodCIBA, AgentID: agentID, HostID: hostID,
			UserID: user, Status: status, ExpiresAt: at(time.Hour), CreatedAt: at(created)}))
	}
	approval("apr_host", "agt_no_user_yet", "hst_mine_b", "", store.ApprovalPending, 2*time.Second)
	approval("apr_addressed", "agt_unlinked", "hst_unlinked", "usr_1", store.ApprovalPending, time.Second)
	approval("apr_agent", "agt_deleg", "hst_mine_a", "", store.ApprovalPending, 0)
	approval("apr_decided", "agt_deleg", "hst_mine_a", "usr_1", store.ApprovalApproved, 0)
	approval("apr_theirs", "agt_theirs", "hst_theirs", "", store.ApprovalPending, 0)

	ids := func(n int, id func(i int) string) []string {
		out := []string{}
		for i := range n {
			out = append(out, id(i))
		}
		return out
	}
	hosts, err := s.ListUserHosts(ctx, "usr_1")
	must(t, err)
	if diff := cmp.Diff([]string{"hst_mine_a", "hst_mine_b"}, ids(len(hosts), func(i int) string { return hosts[i].ID })); diff != "" {
		t.Errorf("ListUserHosts (-want +got):\n%s", diff)
	}
	agents, err := s.ListUserAgents(ctx, "usr_1")
	must(t, err)
	if diff := cmp.Diff([]string{"agt_claimed", "agt_deleg", "agt_no_user_yet"}, ids(len(agents), func(i int) string { return agents[i].ID })); diff != "" {
		t.Errorf("ListUserAgents (-want +got):\n%s", diff)
	}
	aps, err := s.ListUserApprovals(ctx, "usr_1")
	must(t, err)
	if diff := cmp.Diff([]string{"apr_agent", "apr_addressed", "apr_host"}, ids(len(aps), func(i int) string { return aps[i].ID })); diff != "" {
		t.Errorf("ListUserApprovals (-want +got):\n%s", diff)
	}
	for name, err := range map[string]error{
		"ListUserHosts":     func() error { _, err := s.ListUserHosts(ctx, ""); return err }(),
		"ListUserAgents":    func() error { _, err := s.ListUserAgents(ctx, ""); return err }(),
		"ListUserApprovals": func() error { _, err := s.ListUserApprovals(ctx, ""); return err }(),
	} {
		wantIs(t, name+" of no user", err, store.ErrInvalid)
	}
	if none, err := s.ListUserAgents(ctx, "usr_nobody"); err != nil || none == nil || len(none) != 0 {
		t.Errorf("ListUserAgents of a user without agents = %#v, %v, want an empty slice", none, err)
	}

	must(t, s.SetAgentName(ctx, "agt_deleg", "Renamed agent"))
	must(t, s.SetHostName(ctx, "hst_mine_a", "Work laptop"))
	if a := getAgent(t, s, "agt_deleg"); a.Name != "Renamed agent" {
		t.Errorf("agent name %q", a.Name)
	}
	h, err := s.GetHost(ctx, "hst_mine_a")
	must(t, err)
	if h.Name != "Work laptop" {
		t.Errorf("host name %q", h.Name)
	}
	wantIs(t, "SetAgentName unknown", s.SetAgentName(ctx, "agt_missing", "x"), store.ErrNotFound)
	wantIs(t, "SetHostName unknown", s.SetHostName(ctx, "hst_missing", "x"), store.ErrNotFound)
	wantIs(t, "SetAgentName invalid", s.SetAgentName(ctx, "agt_deleg", "a\x00b"), store.ErrInvalid)
}
