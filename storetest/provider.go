package storetest

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// Provider runs the conformance suite of a store.Store, one subtest per behaviour, each on a
// fresh store from open.
func Provider(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"HostRoundTrip", testHostRoundTrip},
		{"HostNotFound", testHostNotFound},
		{"HostConflicts", testHostConflicts},
		{"HostInvalid", testHostInvalid},
		{"HostStatusCascade", testHostStatusCascade},
		{"LinkHostUser", testLinkHostUser},
		{"RotateHostKey", testRotateHostKey},
		{"HostDefaultsAndTouch", testHostDefaultsAndTouch},
		{"HostOAuthClient", testHostOAuthClient},
		{"AgentRoundTrip", testAgentRoundTrip},
		{"AgentNotFound", testAgentNotFound},
		{"AgentAndHost", testAgentAndHost},
		{"AgentConflicts", testAgentConflicts},
		{"AgentInvalid", testAgentInvalid},
		{"AgentStatusCompareAndSet", testAgentStatusCAS},
		{"AgentLifetimes", testAgentLifetimes},
		{"Reactivate", testReactivate},
		{"DirectoryExpiry", testDirectoryExpiry},
		{"RotateAgentKey", testRotateAgentKey},
		{"Grants", testGrants},
		{"ConstraintBytes", testConstraintBytes},
		{"Approvals", testApprovals},
		{"ApprovalPollAndDecide", testApprovalPollAndDecide},
		{"CallConfirmations", testCallConfirmations},
		{"Sweep", testSweep},
		{"ConcurrentRegistration", testConcurrentRegistration},
		{"ConcurrentGrants", testConcurrentGrants},
		{"ConcurrentTransitions", testConcurrentTransitions},
		{"VerifierReadsTheStore", testVerifier},
		{"HostVerifierReadsTheStore", testHostVerifier},
		{"GrantChangeExpiry", testGrantChangeExpiry},
		{"UserViews", testUserViews},
		{"Passkeys", testPasskeys},
		{"Nonces", testNonces},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

// base is the suite's present; records are created relative to it.
var base = time.Date(2030, 1, 2, 3, 4, 5, 678901000, time.UTC)

func at(d time.Duration) time.Time { return base.Add(d) }

func ptr(t time.Time) *time.Time { return &t }

// key returns a deterministic Ed25519 key for a name.
func key(name string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("storetest:" + name))
	return ed25519.NewKeyFromSeed(seed[:])
}

func pub(name string) ed25519.PublicKey { return key(name).Public().(ed25519.PublicKey) }

func jwk(name string) json.RawMessage { return agentauthtest.PublicJWK(pub(name)) }

func thumb(name string) string { return agentauthtest.Thumbprint(pub(name)) }

func newHost(id string) *store.Host {
	return &store.Host{ID: id, PublicKey: jwk("host:" + id), Status: agentcap.StatusActive, CreatedAt: base}
}

func newAgent(id, hostID string) *store.Agent {
	return &store.Agent{
		ID: id, Name: "AI Agent on " + hostID, HostID: hostID,
		Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive,
		AgentKey:  store.AgentKey{PublicKey: jwk("agent:" + id)},
		CreatedAt: base,
	}
}

var ctx = context.Background()

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustHost(t *testing.T, s store.Store, h *store.Host) {
	t.Helper()
	must(t, s.CreateHost(ctx, h))
}

func mustAgent(t *testing.T, s store.Store, a *store.Agent) {
	t.Helper()
	must(t, s.CreateAgent(ctx, a))
}

func getAgent(t *testing.T, s store.Store, id string) *store.Agent {
	t.Helper()
	a, err := s.GetAgent(ctx, id)
	must(t, err)
	return a
}

func wantIs(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want one wrapping %v", what, err, target)
	}
}

// wantStatus checks that err is a *StatusError reporting status.
func wantStatus(t *testing.T, what string, err error, status string) {
	t.Helper()
	var se *store.StatusError
	if !errors.As(err, &se) || !errors.Is(err, store.ErrStatus) {
		t.Errorf("%s: error %v, want a *StatusError", what, err)
		return
	}
	if se.Status != status {
		t.Errorf("%s: StatusError.Status = %q, want %q", what, se.Status, status)
	}
}

var ignoreUpdated = cmp.Options{
	cmpopts.IgnoreFields(store.Host{}, "UpdatedAt"),
	cmpopts.IgnoreFields(store.Agent{}, "UpdatedAt"),
	cmpopts.IgnoreFields(store.Grant{}, "CreatedAt", "UpdatedAt"),
	cmpopts.IgnoreFields(store.Approval{}, "UpdatedAt"),
}

func testHostRoundTrip(t *testing.T, s store.Store) {
	inline := &store.Host{
		ID: "hst_inline", Name: "MacBook-Pro", PublicKey: jwk("h1"), UserID: "usr_1",
		DefaultCapabilities: []string{"check_balance", "list_accounts"}, Status: agentcap.StatusActive,
		ActivatedAt: ptr(at(time.Minute)), ExpiresAt: ptr(at(time.Hour)), LastUsedAt: ptr(at(2 * time.Minute)),
		CreatedAt: base,
	}
	jwks := &store.Host{
		ID: "hst_jwks", JWKSURL: "https://keys.example.com/host.json", Thumbprint: thumb("h2"),
		Status: agentcap.StatusPending, CreatedAt: base.Add(time.Second),
	}
	mustHost(t, s, inline)
	mustHost(t, s, jwks)

	want := *inline
	want.Thumbprint = thumb("h1")
	for name, get := range map[string]func() (*store.Host, error){
		"GetHost":          func() (*store.Host, error) { return s.GetHost(ctx, "hst_inline") },
		"HostByThumbprint": func() (*store.Host, error) { return s.HostByThumbprint(ctx, thumb("h1")) },
	} {
		got, err := get()
		must(t, err)
		if diff := cmp.Diff(&want, got, ignoreUpdated); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
		if got.UpdatedAt.IsZero() {
			t.Errorf("%s: UpdatedAt not set", name)
		}
	}
	got, err := s.HostByJWKSURL(ctx, "https://keys.example.com/host.json")
	must(t, err)
	if diff := cmp.Diff(jwks, got, ignoreUpdated); diff != "" {
		t.Errorf("HostByJWKSURL (-want +got):\n%s", diff)
	}

	// The record handed in is not retained.
	inline.DefaultCapabilities[0] = "changed"
	again, err := s.GetHost(ctx, "hst_inline")
	must(t, err)
	if again.DefaultCapabilities[0] != "check_balance" {
		t.Error("the store kept the caller's slice")
	}

	dh, err := s.Host(ctx, "hst_inline")
	must(t, err)
	wantDir := &agentauth.Host{ID: "hst_inline", PublicKey: jwk("h1"), UserID: "usr_1", Status: agentcap.StatusActive,
		DefaultCapabilities: []string{"check_balance", "list_accounts"}}
	if diff := cmp.Diff(wantDir, dh); diff != "" {
		t.Errorf("Directory Host (-want +got):\n%s", diff)
	}
	// The directory record is one the agentauth verifier accepts.
	if err := agentauth.NewMemoryDirectory().PutHost(dh); err != nil {
		t.Errorf("directory host refused by agentauth: %v", err)
	}
}

func testHostNotFound(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	_, err := s.GetHost(ctx, "hst_missing")
	wantIs(t, "GetHost", err, store.ErrNotFound)
	_, err = s.Host(ctx, "hst_missing")
	wantIs(t, "Directory Host", err, agentauth.ErrNotFound)
	_, err = s.HostByThumbprint(ctx, thumb("nobody"))
	wantIs(t, "HostByThumbprint", err, store.ErrNotFound)
	_, err = s.HostByThumbprint(ctx, "")
	wantIs(t, "HostByThumbprint empty", err, store.ErrNotFound)
	_, err = s.HostByJWKSURL(ctx, "https://nowhere.example.com/")
	wantIs(t, "HostByJWKSURL", err, store.ErrNotFound)
	_, err = s.HostByJWKSURL(ctx, "")
	wantIs(t, "HostByJWKSURL empty", err, store.ErrNotFound)
	_, err = s.UpdateHostStatus(ctx, "hst_missing", []string{agentcap.StatusActive}, agentcap.StatusRevoked)
	wantIs(t, "UpdateHostStatus", err, store.ErrNotFound)
	_, err = s.LinkHostUser(ctx, "hst_missing", "usr_1")
	wantIs(t, "LinkHostUser", err, store.ErrNotFound)
	wantIs(t, "SetHostDefaultCapabilities", s.SetHostDefaultCapabilities(ctx, "hst_missing", []string{"a"}), store.ErrNotFound)
	wantIs(t, "RotateHostKey", s.RotateHostKey(ctx, "hst_missing", thumb("x"), jwk("y"), ""), store.ErrNotFound)
	wantIs(t, "TouchHost", s.TouchHost(ctx, "hst_missing", base), store.ErrNotFound)
}

func testHostConflicts(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	mustHost(t, s, &store.Host{ID: "hst_j", JWKSURL: "https://k.example.com/j", Thumbprint: "tp-j", Status: agentcap.StatusActive})
	for _, tc := range []struct {
		name string
		h    *store.Host
	}{
		{"same id", &store.Host{ID: "hst_1", PublicKey: jwk("other"), Status: agentcap.StatusActive}},
		{"same key", &store.Host{ID: "hst_2", PublicKey: jwk("host:hst_1"), Status: agentcap.StatusActive}},
		{"same thumbprint", &store.Host{ID: "hst_3", JWKSURL: "https://k.example.com/other", Thumbprint: thumb("host:hst_1"), Status: agentcap.StatusActive}},
		{"same JWKS URL", &store.Host{ID: "hst_4", JWKSURL: "https://k.example.com/j", Thumbprint: "tp-other", Status: agentcap.StatusActive}},
	} {
		wantIs(t, tc.name, s.CreateHost(ctx, tc.h), store.ErrConflict)
	}
	got, err := s.GetHost(ctx, "hst_1")
	must(t, err)
	if !slices.Equal(got.PublicKey, jwk("host:hst_1")) {
		t.Error("a refused host replaced the stored one")
	}
}

func testHostInvalid(t *testing.T, s store.Store) {
	withPriv := json.RawMessage(`{"kty":"OKP","crv":"Ed25519","x":"` + trimJWKX(jwk("p")) + `","d":"AAAA"}`)
	for _, tc := range []struct {
		name string
		h    *store.Host
	}{
		{"nil", nil},
		{"no id", &store.Host{PublicKey: jwk("a"), Status: agentcap.StatusActive}},
		{"bad status", &store.Host{ID: "h", PublicKey: jwk("a"), Status: "expired"}},
		{"no key", &store.Host{ID: "h", Status: agentcap.StatusActive}},
		{"two keys", &store.Host{ID: "h", PublicKey: jwk("a"), JWKSURL: "https://k.example.com/", Status: agentcap.StatusActive}},
		{"not a JWK", &store.Host{ID: "h", PublicKey: json.RawMessage(`"key"`), Status: agentcap.StatusActive}},
		{"RSA", &store.Host{ID: "h", PublicKey: json.RawMessage(`{"kty":"RSA","n":"AQAB","e":"AQAB"}`), Status: agentcap.StatusActive}},
		{"short x", &store.Host{ID: "h", PublicKey: json.RawMessage(`{"kty":"OKP","crv":"Ed25519","x":"AAAA"}`), Status: agentcap.StatusActive}},
		{"private key", &store.Host{ID: "h", PublicKey: withPriv, Status: agentcap.StatusActive}},
		{"wrong thumbprint", &store.Host{ID: "h", PublicKey: jwk("a"), Thumbprint: thumb("b"), Status: agentcap.StatusActive}},
		{"JWKS without thumbprint", &store.Host{ID: "h", JWKSURL: "https://k.example.com/", Status: agentcap.StatusActive}},
		{"JWKS not a URL", &store.Host{ID: "h", JWKSURL: "keys.json", Thumbprint: "tp", Status: agentcap.StatusActive}},
		{"JWKS with credentials", &store.Host{ID: "h", JWKSURL: "https://u:p@k.example.com/", Thumbprint: "tp", Status: agentcap.StatusActive}},
		{"empty default capability", &store.Host{ID: "h", PublicKey: jwk("a"), Status: agentcap.StatusActive, DefaultCapabilities: []string{""}}},
	} {
		wantIs(t, tc.name, s.CreateHost(ctx, tc.h), store.ErrInvalid)
	}
	_, err := s.GetHost(ctx, "h")
	wantIs(t, "nothing stored", err, store.ErrNotFound)
	mustHost(t, s, newHost("hst_1"))
	_, err = s.UpdateHostStatus(ctx, "hst_1", []string{agentcap.StatusActive}, "claimed")
	wantIs(t, "host status claimed", err, store.ErrInvalid)
}

func trimJWKX(raw json.RawMessage) string {
	var k struct{ X string }
	if err := json.Unmarshal(raw, &k); err != nil {
		panic(err)
	}
	return k.X
}

func testHostStatusCascade(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	mustHost(t, s, newHost("hst_2"))
	statuses := []string{agentcap.StatusPending, agentcap.StatusActive, agentcap.StatusExpired,
		agentcap.StatusRevoked, agentcap.StatusRejected, agentcap.StatusClaimed}
	for _, st := range statuses {
		a := newAgent("agt_"+st, "hst_1")
		a.Status = st
		mustAgent(t, s, a)
	}
	mustAgent(t, s, newAgent("agt_other_host", "hst_2"))

	_, err := s.UpdateHostStatus(ctx, "hst_1", []string{agentcap.StatusPending}, agentcap.StatusActive)
	wantStatus(t, "active host from pending", err, agentcap.StatusActive)

	n, err := s.UpdateHostStatus(ctx, "hst_1", []string{agentcap.StatusActive, agentcap.StatusPending}, agentcap.StatusRevoked)
	must(t, err)
	if n != 3 {
		t.Errorf("cascaded = %d, want 3 (pending, active, expired)", n)
	}
	want := map[string]string{
		"agt_pending": agentcap.StatusRevoked, "agt_active": agentcap.StatusRevoked, "agt_expired": agentcap.StatusRevoked,
		"agt_revoked": agentcap.StatusRevoked, "agt_rejected": agentcap.StatusRejected, "agt_claimed": agentcap.StatusClaimed,
		"agt_other_host": agentcap.StatusActive,
	}
	for id, st := range want {
		if got := getAgent(t, s, id).Status; got != st {
			t.Errorf("%s: status %q, want %q", id, got, st)
		}
	}
	h, err := s.GetHost(ctx, "hst_1")
	must(t, err)
	if h.Status != agentcap.StatusRevoked {
		t.Errorf("host status %q", h.Status)
	}
	// No agent can be registered under a revoked host.
	err = s.CreateAgent(ctx, newAgent("agt_late", "hst_1"))
	wantStatus(t, "agent under revoked host", err, agentcap.StatusRevoked)
	_, err = s.GetAgent(ctx, "agt_late")
	wantIs(t, "agent under revoked host not stored", err, store.ErrNotFound)

	// Rejection cascades as rejection.
	mustHost(t, s, &store.Host{ID: "hst_3", PublicKey: jwk("h3"), Status: agentcap.StatusPending})
	p := newAgent("agt_p3", "hst_3")
	p.Status = agentcap.StatusPending
	mustAgent(t, s, p)
	n, err = s.UpdateHostStatus(ctx, "hst_3", []string{agentcap.StatusPending}, agentcap.StatusRejected)
	must(t, err)
	if got := getAgent(t, s, "agt_p3").Status; n != 1 || got != agentcap.StatusRejected {
		t.Errorf("rejection: cascaded %d, agent %q; want 1, rejected", n, got)
	}
	// Approving a host changes no agent.
	mustHost(t, s, &store.Host{ID: "hst_4", PublicKey: jwk("h4"), Status: agentcap.StatusPending})
	mustAgent(t, s, newAgent("agt_4", "hst_4"))
	if n, err := s.UpdateHostStatus(ctx, "hst_4", []string{agentcap.StatusPending}, agentcap.StatusActive); err != nil || n != 0 {
		t.Errorf("approve host: %d, %v", n, err)
	}
}

func testLinkHostUser(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	auto := func(id, status string) {
		a := newAgent(id, "hst_1")
		a.Mode, a.Status = agentcap.ModeAutonomous, status
		a.Grants = []store.Grant{{Capability: "deploy", Status: agentcap.StatusActive}}
		mustAgent(t, s, a)
	}
	auto("agt_auto_active", agentcap.StatusActive)
	auto("agt_auto_expired", agentcap.StatusExpired)
	auto("agt_auto_revoked", agentcap.StatusRevoked)
	mustAgent(t, s, newAgent("agt_deleg", "hst_1"))
	other := newAgent("agt_deleg_other", "hst_1")
	other.UserID = "usr_other"
	mustAgent(t, s, other)

	_, err := s.LinkHostUser(ctx, "hst_1", "")
	wantIs(t, "empty user", err, store.ErrInvalid)

	claimed, err := s.LinkHostUser(ctx, "hst_1", "usr_1")
	must(t, err)
	if diff := cmp.Diff([]string{"agt_auto_active", "agt_auto_expired"}, claimed); diff != "" {
		t.Errorf("claimed (-want +got):\n%s", diff)
	}
	for id, want := range map[string][2]string{
		"agt_auto_active":  {agentcap.StatusClaimed, "usr_1"},
		"agt_auto_expired": {agentcap.StatusClaimed, "usr_1"},
		"agt_auto_revoked": {agentcap.StatusRevoked, ""},
		"agt_deleg":        {agentcap.StatusActive, "usr_1"},
		"agt_deleg_other":  {agentcap.StatusActive, "usr_other"},
	} {
		a := getAgent(t, s, id)
		if a.Status != want[0] || a.UserID != want[1] {
			t.Errorf("%s: status %q user %q, want %q %q", id, a.Status, a.UserID, want[0], want[1])
		}
	}
	for _, g := range getAgent(t, s, "agt_auto_active").Grants {
		if g.Status != agentcap.StatusDenied || g.DeniedBy != store.ClaimedBy || g.Reason != store.ClaimedReason {
			t.Errorf("claimed agent's grant %s: %s by %q (%q)", g.Capability, g.Status, g.DeniedBy, g.Reason)
		}
	}
	if g := getAgent(t, s, "agt_auto_revoked").Grants; g[0].Status != agentcap.StatusActive {
		t.Errorf("revoked agent's grant changed to %s", g[0].Status)
	}
	h, err := s.GetHost(ctx, "hst_1")
	must(t, err)
	if h.UserID != "usr_1" {
		t.Errorf("host user %q", h.UserID)
	}
	if claimed, err := s.LinkHostUser(ctx, "hst_1", "usr_1"); err != nil || len(claimed) != 0 {
		t.Errorf("relink same user: %v, %v", claimed, err)
	}
	_, err = s.LinkHostUser(ctx, "hst_1", "usr_2")
	wantIs(t, "link to another user", err, store.ErrConflict)
}

func testRotateHostKey(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	mustHost(t, s, newHost("hst_2"))
	old := thumb("host:hst_1")

	wantIs(t, "stale from", s.RotateHostKey(ctx, "hst_1", thumb("nope"), jwk("new"), ""), store.ErrConflict)
	wantIs(t, "key of another host", s.RotateHostKey(ctx, "hst_1", old, jwk("host:hst_2"), ""), store.ErrConflict)
	wantIs(t, "bad key", s.RotateHostKey(ctx, "hst_1", old, json.RawMessage(`{}`), ""), store.ErrInvalid)
	wantIs(t, "thumbprint mismatch", s.RotateHostKey(ctx, "hst_1", old, jwk("new"), thumb("other")), store.ErrInvalid)

	must(t, s.RotateHostKey(ctx, "hst_1", old, jwk("new"), ""))
	h, err := s.HostByThumbprint(ctx, thumb("new"))
	must(t, err)
	if h.ID != "hst_1" || !slices.Equal(h.PublicKey, jwk("new")) || h.Thumbprint != thumb("new") {
		t.Errorf("after rotation: %+v", h)
	}
	_, err = s.HostByThumbprint(ctx, old)
	wantIs(t, "old thumbprint", err, store.ErrNotFound)
	// A second rotation signed with the old key loses.
	wantIs(t, "replayed rotation", s.RotateHostKey(ctx, "hst_1", old, jwk("newer"), ""), store.ErrConflict)
	// The freed thumbprint can be used again.
	mustHost(t, s, &store.Host{ID: "hst_3", PublicKey: jwk("host:hst_1"), Status: agentcap.StatusActive})

	mustHost(t, s, &store.Host{ID: "hst_j", JWKSURL: "https://k.example.com/j", Thumbprint: "tp-1", Status: agentcap.StatusActive})
	wantIs(t, "JWKS host sends a key", s.RotateHostKey(ctx, "hst_j", "tp-1", jwk("x"), ""), store.ErrInvalid)
	wantIs(t, "JWKS host without thumbprint", s.RotateHostKey(ctx, "hst_j", "tp-1", nil, ""), store.ErrInvalid)
	must(t, s.RotateHostKey(ctx, "hst_j", "tp-1", nil, "tp-2"))
	h, err = s.HostByJWKSURL(ctx, "https://k.example.com/j")
	must(t, err)
	if h.Thumbprint != "tp-2" || h.PublicKey != nil {
		t.Errorf("JWKS host after rotation: %+v", h)
	}
}

func testHostDefaultsAndTouch(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	must(t, s.SetHostDefaultCapabilities(ctx, "hst_1", []string{"a", "b"}))
	wantIs(t, "empty name", s.SetHostDefaultCapabilities(ctx, "hst_1", []string{""}), store.ErrInvalid)
	must(t, s.TouchHost(ctx, "hst_1", at(time.Hour)))
	must(t, s.TouchHost(ctx, "hst_1", at(time.Minute))) // out of order: ignored
	h, err := s.GetHost(ctx, "hst_1")
	must(t, err)
	if !slices.Equal(h.DefaultCapabilities, []string{"a", "b"}) || h.LastUsedAt == nil || !h.LastUsedAt.Equal(at(time.Hour)) {
		t.Errorf("host: defaults %v, last used %v", h.DefaultCapabilities, h.LastUsedAt)
	}
	must(t, s.SetHostDefaultCapabilities(ctx, "hst_1", nil))
	h, err = s.GetHost(ctx, "hst_1")
	must(t, err)
	if len(h.DefaultCapabilities) != 0 {
		t.Errorf("defaults not cleared: %v", h.DefaultCapabilities)
	}
}

// testHostOAuthClient: the OAuth client a host stands for reads back
// from every read of hosts, and an Agent Auth host has none.
func testHostOAuthClient(t *testing.T, s store.Store) {
	const client = "https://client.example.com/oauth/metadata.json"
	oauth := newHost("hst_oauth")
	oauth.OAuthClient = client
	mustHost(t, s, oauth)
	plain := newHost("hst_plain")
	plain.UserID = "usr_1"
	plain.CreatedAt = at(time.Second)
	mustHost(t, s, plain)
	if _, err := s.LinkHostUser(ctx, "hst_oauth", "usr_1"); err != nil {
		t.Fatal(err)
	}

	want := map[string]string{"hst_oauth": client, "hst_plain": ""}
	for id, wantClient := range want {
		got, err := s.GetHost(ctx, id)
		must(t, err)
		if got.OAuthClient != wantClient {
			t.Errorf("GetHost(%s).OAuthClient = %q, want %q", id, got.OAuthClient, wantClient)
		}
		got, err = s.HostByThumbprint(ctx, thumb("host:"+id))
		must(t, err)
		if got.ID != id || got.OAuthClient != wantClient {
			t.Errorf("HostByThumbprint(%s): host %s, OAuthClient %q; want %q", id, got.ID, got.OAuthClient, wantClient)
		}
	}
	hosts, err := s.ListUserHosts(ctx, "usr_1")
	must(t, err)
	got := map[string]string{}
	for _, h := range hosts {
		got[h.ID] = h.OAuthClient
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListUserHosts: OAuth clients by host (-want +got):\n%s", diff)
	}

	bad := newHost("hst_bad")
	bad.OAuthClient = "a\x00b"
	wantIs(t, "NUL in the OAuth client", s.CreateHost(ctx, bad), store.ErrInvalid)
}

func testAgentRoundTrip(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	a := &store.Agent{
		ID: "agt_1", Name: "Bank balance checker", HostID: "hst_1", UserID: "usr_1",
		Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive,
		AgentKey: store.AgentKey{PublicKey: jwk("a1")},
		Grants: []store.Grant{
			{Capability: "transfer", Status: agentcap.StatusActive, GrantedBy: "usr_1", Reason: "rent",
				Constraints: map[string]json.RawMessage{"amount": json.RawMessage(`{"max":1000}`)}, ExpiresAt: ptr(at(time.Hour))},
			{Capability: "check_balance", Status: agentcap.StatusPending},
			{Capability: "wire", Status: agentcap.StatusDenied, DeniedBy: "usr_1", Reason: "not now"},
		},
		LastUsedAt: ptr(at(3 * time.Minute)), ActivatedAt: ptr(at(time.Minute)), ExpiresAt: ptr(at(2 * time.Hour)),
		CreatedAt: base,
	}
	mustAgent(t, s, a)
	j := &store.Agent{
		ID: "agt_2", Name: "AI Agent on hst_1", HostID: "hst_1", Mode: agentcap.ModeAutonomous, Status: agentcap.StatusPending,
		AgentKey:  store.AgentKey{JWKSURL: "https://k.example.com/agents.json", KID: "k1"},
		CreatedAt: at(time.Second),
	}
	mustAgent(t, s, j)

	want := store.CloneAgent(a)
	want.Thumbprint = thumb("a1")
	slices.SortFunc(want.Grants, func(x, y store.Grant) int { return cmpString(x.Capability, y.Capability) })
	got := getAgent(t, s, "agt_1")
	if diff := cmp.Diff(want, got, ignoreUpdated); diff != "" {
		t.Errorf("GetAgent (-want +got):\n%s", diff)
	}
	for _, g := range got.Grants {
		if g.CreatedAt.IsZero() || g.UpdatedAt.IsZero() {
			t.Errorf("grant %s: times not set", g.Capability)
		}
	}
	byTP, err := s.AgentByThumbprint(ctx, "hst_1", thumb("a1"))
	must(t, err)
	if diff := cmp.Diff(want, byTP, ignoreUpdated); diff != "" {
		t.Errorf("AgentByThumbprint (-want +got):\n%s", diff)
	}
	gotJ := getAgent(t, s, "agt_2")
	if diff := cmp.Diff(j, gotJ, ignoreUpdated, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("JWKS agent (-want +got):\n%s", diff)
	}
	list, err := s.ListAgents(ctx, "hst_1")
	must(t, err)
	if len(list) != 2 || list[0].ID != "agt_1" || list[1].ID != "agt_2" || len(list[0].Grants) != 3 {
		t.Errorf("ListAgents: %d agents", len(list))
	}
	if list, err := s.ListAgents(ctx, "hst_none"); err != nil || len(list) != 0 {
		t.Errorf("ListAgents of unknown host: %v, %v", list, err)
	}

	// Directory view: what the agentauth verifier reads.
	d, err := s.Agent(ctx, "agt_2")
	must(t, err)
	wantDir := &agentauth.Agent{ID: "agt_2", HostID: "hst_1", Mode: agentcap.ModeAutonomous, Status: agentcap.StatusPending,
		JWKSURL: "https://k.example.com/agents.json", KID: "k1", Grants: []agentauth.Grant{}}
	if diff := cmp.Diff(wantDir, d); diff != "" {
		t.Errorf("Directory Agent (-want +got):\n%s", diff)
	}
	dir := agentauth.NewMemoryDirectory()
	dh, err := s.Host(ctx, "hst_1")
	must(t, err)
	must(t, dir.PutHost(dh))
	d1, err := s.Agent(ctx, "agt_1")
	must(t, err)
	if err := dir.PutAgent(d1); err != nil {
		t.Errorf("directory agent refused by agentauth: %v", err)
	}
	if len(d1.Grants) != 3 || !d1.Grants[1].Effective(at(time.Minute)) || string(d1.Grants[1].Constraints["amount"]) != `{"max":1000}` {
		t.Errorf("directory grants: %+v", d1.Grants)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// testAgentAndHost checks store.AgentHostReader, for stores that
// implement it, against GetAgent and GetHost.
func testAgentAndHost(t *testing.T, s store.Store) {
	ah, ok := s.(store.AgentHostReader)
	if !ok {
		t.Skip("the store does not implement store.AgentHostReader")
	}
	h := newHost("hst_1")
	h.DefaultCapabilities = []string{"check_balance"}
	mustHost(t, s, h)
	a := newAgent("agt_1", "hst_1")
	a.Grants = []store.Grant{
		{Capability: "transfer", Status: agentcap.StatusActive, GrantedBy: "usr_1",
			Constraints: map[string]json.RawMessage{"amount": json.RawMessage(`{"max":1000}`)}},
		{Capability: "check_balance", Status: agentcap.StatusActive},
	}
	mustAgent(t, s, a)
	mustAgent(t, s, newAgent("agt_2", "hst_1"))
	check := func(id string) {
		t.Helper()
		gotA, gotH, err := ah.GetAgentAndHost(ctx, id)
		must(t, err)
		wantA := getAgent(t, s, id)
		wantH, err := s.GetHost(ctx, wantA.HostID)
		must(t, err)
		if diff := cmp.Diff(wantA, gotA); diff != "" {
			t.Errorf("agent %s (-GetAgent +GetAgentAndHost):\n%s", id, diff)
		}
		if diff := cmp.Diff(wantH, gotH); diff != "" {
			t.Errorf("host of %s (-GetHost +GetAgentAndHost):\n%s", id, diff)
		}
	}
	check("agt_1") // with grants
	check("agt_2") // without
	_, err := s.UpdateHostStatus(ctx, "hst_1", []string{agentcap.StatusActive}, agentcap.StatusRevoked)
	must(t, err)
	check("agt_1") // the host's status, and the agent's after the cascade

	_, _, err = ah.GetAgentAndHost(ctx, "agt_missing")
	wantIs(t, "GetAgentAndHost of an unknown agent", err, store.ErrNotFound)
}

func testAgentNotFound(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	wantIs(t, "agent of unknown host", s.CreateAgent(ctx, newAgent("agt_1", "hst_missing")), store.ErrNotFound)
	_, err := s.GetAgent(ctx, "agt_missing")
	wantIs(t, "GetAgent", err, store.ErrNotFound)
	_, err = s.Agent(ctx, "agt_missing")
	wantIs(t, "Directory Agent", err, agentauth.ErrNotFound)
	_, err = s.AgentByThumbprint(ctx, "hst_1", thumb("x"))
	wantIs(t, "AgentByThumbprint", err, store.ErrNotFound)
	_, err = s.AgentByThumbprint(ctx, "hst_1", "")
	wantIs(t, "AgentByThumbprint empty", err, store.ErrNotFound)
	p := store.Policy{}
	for name, err := range map[string]error{
		"UpdateAgentStatus": s.UpdateAgentStatus(ctx, "agt_missing", []string{agentcap.StatusActive}, agentcap.StatusRevoked),
		"ActivateAgent":     s.ActivateAgent(ctx, "agt_missing", []string{agentcap.StatusPending}, base, p),
		"ReactivateAgent":   s.ReactivateAgent(ctx, "agt_missing", agentcap.StatusActive, nil, base, p),
		"TouchAgent":        s.TouchAgent(ctx, "agt_missing", base, p),
		"RotateAgentKey":    s.RotateAgentKey(ctx, "agt_missing", store.AgentKey{PublicKey: jwk("k")}),
		"PutGrants":         s.PutGrants(ctx, "agt_missing", []store.Grant{{Capability: "a", Status: agentcap.StatusActive}}),
		"ReplaceGrants":     s.ReplaceGrants(ctx, "agt_missing", nil),
		"UpdateGrantStatus": s.UpdateGrantStatus(ctx, "agt_missing", "a", store.GrantChange{From: []string{agentcap.StatusPending}, To: agentcap.StatusActive}),
	} {
		wantIs(t, name, err, store.ErrNotFound)
	}
	_, err = s.ListGrants(ctx, "agt_missing")
	wantIs(t, "ListGrants", err, store.ErrNotFound)
	mustAgent(t, s, newAgent("agt_1", "hst_1"))
	err = s.UpdateGrantStatus(ctx, "agt_1", "none", store.GrantChange{From: []string{agentcap.StatusPending}, To: agentcap.StatusActive})
	wantIs(t, "UpdateGrantStatus unknown capability", err, store.ErrNotFound)
}

func testAgentConflicts(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	mustHost(t, s, newHost("hst_2"))
	mustAgent(t, s, newAgent("agt_1", "hst_1"))

	dupID := newAgent("agt_1", "hst_2")
	dupID.AgentKey = store.AgentKey{PublicKey: jwk("fresh")}
	wantIs(t, "same id", s.CreateAgent(ctx, dupID), store.ErrConflict)

	dupKey := newAgent("agt_2", "hst_1")
	dupKey.AgentKey = store.AgentKey{PublicKey: jwk("agent:agt_1")}
	wantIs(t, "same key under the same host", s.CreateAgent(ctx, dupKey), store.ErrConflict)

	// The same key under another host is another registration.
	otherHost := newAgent("agt_3", "hst_2")
	otherHost.AgentKey = store.AgentKey{PublicKey: jwk("agent:agt_1")}
	mustAgent(t, s, otherHost)

	// Names are not unique: the published client names agents alike.
	sameName := newAgent("agt_4", "hst_1")
	mustAgent(t, s, sameName)

	// JWKS agents without a thumbprint never collide on it.
	for _, id := range []string{"agt_j1", "agt_j2"} {
		a := newAgent(id, "hst_1")
		a.AgentKey = store.AgentKey{JWKSURL: "https://k.example.com/a.json", KID: "k"}
		mustAgent(t, s, a)
	}
	tp := newAgent("agt_j3", "hst_1")
	tp.AgentKey = store.AgentKey{JWKSURL: "https://k.example.com/a.json", KID: "k", Thumbprint: "tp-shared"}
	mustAgent(t, s, tp)
	tp2 := newAgent("agt_j4", "hst_1")
	tp2.AgentKey = tp.AgentKey
	wantIs(t, "same JWKS thumbprint", s.CreateAgent(ctx, tp2), store.ErrConflict)

	if a := getAgent(t, s, "agt_1"); a.HostID != "hst_1" {
		t.Error("a refused agent replaced the stored one")
	}
}

func testAgentInvalid(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	mod := func(f func(a *store.Agent)) *store.Agent {
		a := newAgent("agt_x", "hst_1")
		f(a)
		return a
	}
	for _, tc := range []struct {
		name string
		a    *store.Agent
	}{
		{"nil", nil},
		{"no id", mod(func(a *store.Agent) { a.ID = "" })},
		{"no host", mod(func(a *store.Agent) { a.HostID = "" })},
		{"bad mode", mod(func(a *store.Agent) { a.Mode = "robot" })},
		{"bad status", mod(func(a *store.Agent) { a.Status = "denied" })},
		{"no key", mod(func(a *store.Agent) { a.AgentKey = store.AgentKey{} })},
		{"JWKS without kid", mod(func(a *store.Agent) { a.AgentKey = store.AgentKey{JWKSURL: "https://k.example.com/"} })},
		{"kid without JWKS", mod(func(a *store.Agent) { a.KID = "k" })},
		{"wrong thumbprint", mod(func(a *store.Agent) { a.Thumbprint = thumb("zzz") })},
		{"grant without capability", mod(func(a *store.Agent) { a.Grants = []store.Grant{{Status: agentcap.StatusActive}} })},
		{"grant status", mod(func(a *store.Agent) { a.Grants = []store.Grant{{Capability: "a", Status: "expired"}} })},
		{"grant twice", mod(func(a *store.Agent) {
			a.Grants = []store.Grant{{Capability: "a", Status: agentcap.StatusActive}, {Capability: "a", Status: agentcap.StatusPending}}
		})},
		{"unknown operator", mod(func(a *store.Agent) {
			a.Grants = []store.Grant{{Capability: "a", Status: agentcap.StatusActive, Constraints: map[string]json.RawMessage{"x": json.RawMessage(`{"between":[1,2]}`)}}}
		})},
		{"constraint not JSON", mod(func(a *store.Agent) {
			a.Grants = []store.Grant{{Capability: "a", Status: agentcap.StatusActive, Constraints: map[string]json.RawMessage{"x": json.RawMessage(`{"max":`)}}}
		})},
		{"field name not UTF-8", mod(func(a *store.Agent) {
			a.Grants = []store.Grant{{Capability: "a", Status: agentcap.StatusActive, Constraints: map[string]json.RawMessage{"\xff": json.RawMessage(`1`)}}}
		})},
		{"name with NUL", mod(func(a *store.Agent) { a.Name = "a\x00b" })},
		{"two JSON values", mod(func(a *store.Agent) {
			a.Grants = []store.Grant{{Capability: "a", Status: agentcap.StatusActive, Constraints: map[string]json.RawMessage{"x": json.RawMessage(`1 2`)}}}
		})},
	} {
		wantIs(t, tc.name, s.CreateAgent(ctx, tc.a), store.ErrInvalid)
	}
	_, err := s.GetAgent(ctx, "agt_x")
	wantIs(t, "nothing stored", err, store.ErrNotFound)
	var uoe *agentauth.UnknownOperatorError
	err = s.CreateAgent(ctx, mod(func(a *store.Agent) {
		a.Grants = []store.Grant{{Capability: "a", Status: agentcap.StatusActive, Constraints: map[string]json.RawMessage{"x": json.RawMessage(`{"regex":"."}`)}}}
	}))
	if !errors.As(err, &uoe) {
		t.Errorf("unknown operator: %v, want an *agentauth.UnknownOperatorError inside", err)
	}
	mustAgent(t, s, newAgent("agt_1", "hst_1"))
	wantIs(t, "agent status", s.UpdateAgentStatus(ctx, "agt_1", []string{agentcap.StatusActive}, "denied"), store.ErrInvalid)
	wantIs(t, "grant change status", s.UpdateGrantStatus(ctx, "agt_1", "a", store.GrantChange{To: "expired"}), store.ErrInvalid)
	wantIs(t, "reactivate to revoked", s.ReactivateAgent(ctx, "agt_1", agentcap.StatusRevoked, nil, base, store.Policy{}), store.ErrInvalid)
}

func testAgentStatusCAS(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	a := newAgent("agt_1", "hst_1")
	a.Status = agentcap.StatusPending
	mustAgent(t, s, a)

	err := s.UpdateAgentStatus(ctx, "agt_1", []string{agentcap.StatusActive}, agentcap.StatusRevoked)
	wantStatus(t, "revoke pending as active", err, agentcap.StatusPending)
	must(t, s.UpdateAgentStatus(ctx, "agt_1", []string{agentcap.StatusActive, agentcap.StatusPending}, agentcap.StatusRejected))
	err = s.UpdateAgentStatus(ctx, "agt_1", []string{agentcap.StatusPending}, agentcap.StatusActive)
	wantStatus(t, "approve rejected", err, agentcap.StatusRejected)
	var se *store.StatusError
	if errors.As(err, &se) && (se.Kind != "agent" || se.ID != "agt_1" || !slices.Equal(se.Want, []string{agentcap.StatusPending})) {
		t.Errorf("StatusError = %+v", se)
	}
	if got := getAgent(t, s, "agt_1").Status; got != agentcap.StatusRejected {
		t.Errorf("status %q", got)
	}
	err = s.UpdateAgentStatus(ctx, "agt_1", nil, agentcap.StatusActive)
	wantStatus(t, "empty from", err, agentcap.StatusRejected)
}

func testAgentLifetimes(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	p := store.Policy{SessionTTL: 30 * time.Minute, MaxLifetime: 24 * time.Hour, AbsoluteLifetime: 7 * 24 * time.Hour}
	a := newAgent("agt_1", "hst_1")
	a.Status = agentcap.StatusPending
	mustAgent(t, s, a)

	err := s.ActivateAgent(ctx, "agt_1", []string{agentcap.StatusExpired}, at(time.Minute), p)
	wantStatus(t, "activate from wrong status", err, agentcap.StatusPending)
	must(t, s.ActivateAgent(ctx, "agt_1", []string{agentcap.StatusPending}, at(time.Minute), p))
	got := getAgent(t, s, "agt_1")
	if got.Status != agentcap.StatusActive || !got.ActivatedAt.Equal(at(time.Minute)) || !got.ExpiresAt.Equal(at(31*time.Minute)) {
		t.Fatalf("after activation: status %s activated %v expires %v", got.Status, got.ActivatedAt, got.ExpiresAt)
	}

	// Each request extends the session, up to the max lifetime.
	must(t, s.TouchAgent(ctx, "agt_1", at(20*time.Minute), p))
	got = getAgent(t, s, "agt_1")
	if !got.LastUsedAt.Equal(at(20*time.Minute)) || !got.ExpiresAt.Equal(at(50*time.Minute)) {
		t.Errorf("after touch: last used %v expires %v", got.LastUsedAt, got.ExpiresAt)
	}
	must(t, s.TouchAgent(ctx, "agt_1", at(10*time.Minute), p)) // late, out of order
	if got = getAgent(t, s, "agt_1"); !got.LastUsedAt.Equal(at(20 * time.Minute)) {
		t.Errorf("an out-of-order touch moved last_used_at back to %v", got.LastUsedAt)
	}
	for m := time.Duration(40); m < 24*60; m += 20 {
		must(t, s.TouchAgent(ctx, "agt_1", at(m*time.Minute), p))
	}
	got = getAgent(t, s, "agt_1")
	if !got.ExpiresAt.Equal(at(24*time.Hour + time.Minute)) {
		t.Errorf("expires_at near max lifetime = %v, want activation + 24h", got.ExpiresAt)
	}
	err = s.TouchAgent(ctx, "agt_1", at(24*time.Hour+time.Minute), p)
	wantStatus(t, "touch past max lifetime", err, agentcap.StatusExpired)
	if got := getAgent(t, s, "agt_1").Status; got != agentcap.StatusExpired {
		t.Errorf("status after max lifetime %q, want expired", got)
	}
	wantStatus(t, "touch expired", s.TouchAgent(ctx, "agt_1", at(25*time.Hour), p), agentcap.StatusExpired)

	// Idle past the session TTL.
	b := newAgent("agt_2", "hst_1")
	mustAgent(t, s, b)
	must(t, s.ActivateAgent(ctx, "agt_2", []string{agentcap.StatusActive}, at(time.Hour), p))
	wantStatus(t, "idle", s.TouchAgent(ctx, "agt_2", at(time.Hour+30*time.Minute), p), agentcap.StatusExpired)

	// Past the absolute lifetime an agent is revoked, not reactivatable.
	c := newAgent("agt_3", "hst_1")
	c.Status = agentcap.StatusPending
	mustAgent(t, s, c)
	err = s.ActivateAgent(ctx, "agt_3", []string{agentcap.StatusPending}, at(7*24*time.Hour), p)
	wantIs(t, "activate past absolute lifetime", err, store.ErrLifetimeExceeded)
	wantStatus(t, "activate past absolute lifetime", err, agentcap.StatusRevoked)
	if got := getAgent(t, s, "agt_3").Status; got != agentcap.StatusRevoked {
		t.Errorf("status %q, want revoked", got)
	}
	d := newAgent("agt_4", "hst_1")
	mustAgent(t, s, d)
	must(t, s.ActivateAgent(ctx, "agt_4", []string{agentcap.StatusActive}, at(7*24*time.Hour-10*time.Minute), p))
	if got := getAgent(t, s, "agt_4"); !got.ExpiresAt.Equal(at(7 * 24 * time.Hour)) {
		t.Errorf("expires_at %v, want the absolute deadline", got.ExpiresAt)
	}
	err = s.TouchAgent(ctx, "agt_4", at(7*24*time.Hour), p)
	wantIs(t, "touch past absolute lifetime", err, store.ErrLifetimeExceeded)

	// With every clock off, nothing expires.
	e := newAgent("agt_5", "hst_1")
	mustAgent(t, s, e)
	must(t, s.TouchAgent(ctx, "agt_5", at(1000*time.Hour), store.Policy{}))
	if got := getAgent(t, s, "agt_5"); got.ExpiresAt != nil || got.Status != agentcap.StatusActive {
		t.Errorf("no policy: %s expires %v", got.Status, got.ExpiresAt)
	}
}

func testReactivate(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	p := store.Policy{SessionTTL: time.Hour, AbsoluteLifetime: 48 * time.Hour}
	a := newAgent("agt_1", "hst_1")
	a.Status = agentcap.StatusExpired
	a.ActivatedAt = ptr(at(time.Minute))
	a.Grants = []store.Grant{
		{Capability: "read", Status: agentcap.StatusActive},
		{Capability: "transfer", Status: agentcap.StatusActive, Constraints: map[string]json.RawMessage{"amount": json.RawMessage(`{"max":5}`)}},
	}
	mustAgent(t, s, a)

	baseline := []store.Grant{{Capability: "read", Status: agentcap.StatusActive, GrantedBy: "system"}}
	must(t, s.ReactivateAgent(ctx, "agt_1", agentcap.StatusActive, baseline, at(10*time.Hour), p))
	got := getAgent(t, s, "agt_1")
	if got.Status != agentcap.StatusActive || !got.ActivatedAt.Equal(at(10*time.Hour)) || !got.ExpiresAt.Equal(at(11*time.Hour)) {
		t.Errorf("reactivated: %s activated %v expires %v", got.Status, got.ActivatedAt, got.ExpiresAt)
	}
	if len(got.Grants) != 1 || got.Grants[0].Capability != "read" || got.Grants[0].GrantedBy != "system" {
		t.Errorf("grants after reactivation: %+v", got.Grants)
	}
	wantStatus(t, "reactivate active", s.ReactivateAgent(ctx, "agt_1", agentcap.StatusActive, nil, at(11*time.Hour), p), agentcap.StatusActive)

	// Reactivation that needs approval leaves the agent pending.
	must(t, s.UpdateAgentStatus(ctx, "agt_1", []string{agentcap.StatusActive}, agentcap.StatusExpired))
	pending := []store.Grant{{Capability: "read", Status: agentcap.StatusPending}}
	must(t, s.ReactivateAgent(ctx, "agt_1", agentcap.StatusPending, pending, at(12*time.Hour), p))
	got = getAgent(t, s, "agt_1")
	if got.Status != agentcap.StatusPending || got.ExpiresAt != nil || got.Grants[0].Status != agentcap.StatusPending {
		t.Errorf("pending reactivation: %s expires %v grants %+v", got.Status, got.ExpiresAt, got.Grants)
	}

	// Past the absolute lifetime, reactivation revokes.
	must(t, s.UpdateAgentStatus(ctx, "agt_1", []string{agentcap.StatusPending}, agentcap.StatusExpired))
	err := s.ReactivateAgent(ctx, "agt_1", agentcap.StatusActive, baseline, at(48*time.Hour), p)
	wantIs(t, "reactivate past absolute lifetime", err, store.ErrLifetimeExceeded)
	got = getAgent(t, s, "agt_1")
	if got.Status != agentcap.StatusRevoked || got.Grants[0].Status != agentcap.StatusPending {
		t.Errorf("after refused reactivation: %s, grants %+v (grants must be left alone)", got.Status, got.Grants)
	}
	wantStatus(t, "reactivate revoked", s.ReactivateAgent(ctx, "agt_1", agentcap.StatusActive, nil, at(49*time.Hour), p), agentcap.StatusRevoked)
	wantIs(t, "bad grants", s.ReactivateAgent(ctx, "agt_1", agentcap.StatusActive, []store.Grant{{Capability: ""}}, base, p), store.ErrInvalid)
}

func testDirectoryExpiry(t *testing.T, s store.Store) {
	// The directory compares expires_at with the store's own clock, so
	// these deadlines are far from any plausible present.
	mustHost(t, s, newHost("hst_1"))
	past := newAgent("agt_past", "hst_1")
	past.ExpiresAt = ptr(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	mustAgent(t, s, past)
	future := newAgent("agt_future", "hst_1")
	future.ExpiresAt = ptr(time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC))
	mustAgent(t, s, future)
	revoked := newAgent("agt_revoked", "hst_1")
	revoked.Status, revoked.ExpiresAt = agentcap.StatusRevoked, past.ExpiresAt
	mustAgent(t, s, revoked)
	for id, want := range map[string]string{
		"agt_past": agentcap.StatusExpired, "agt_future": agentcap.StatusActive, "agt_revoked": agentcap.StatusRevoked,
	} {
		d, err := s.Agent(ctx, id)
		must(t, err)
		if d.Status != want {
			t.Errorf("%s: directory status %q, want %q", id, d.Status, want)
		}
	}
	if got := getAgent(t, s, "agt_past").Status; got != agentcap.StatusActive {
		t.Errorf("the stored status changed to %q; only Sweep and TouchAgent change it", got)
	}
}

func testRotateAgentKey(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	mustAgent(t, s, newAgent("agt_1", "hst_1"))
	mustAgent(t, s, newAgent("agt_2", "hst_1"))

	wantIs(t, "key of another agent", s.RotateAgentKey(ctx, "agt_1", store.AgentKey{PublicKey: jwk("agent:agt_2")}), store.ErrConflict)
	wantIs(t, "bad key", s.RotateAgentKey(ctx, "agt_1", store.AgentKey{}), store.ErrInvalid)
	must(t, s.RotateAgentKey(ctx, "agt_1", store.AgentKey{PublicKey: jwk("rotated")}))
	got := getAgent(t, s, "agt_1")
	if !slices.Equal(got.PublicKey, jwk("rotated")) || got.Thumbprint != thumb("rotated") {
		t.Errorf("after rotation: key %s thumbprint %s", got.PublicKey, got.Thumbprint)
	}
	if _, err := s.AgentByThumbprint(ctx, "hst_1", thumb("agent:agt_1")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("old thumbprint still finds the agent: %v", err)
	}
	if a, err := s.AgentByThumbprint(ctx, "hst_1", thumb("rotated")); err != nil || a.ID != "agt_1" {
		t.Errorf("new thumbprint: %v, %v", a, err)
	}
	// The old key is free again.
	a3 := newAgent("agt_3", "hst_1")
	a3.AgentKey = store.AgentKey{PublicKey: jwk("agent:agt_1")}
	mustAgent(t, s, a3)
	// To a JWKS key.
	must(t, s.RotateAgentKey(ctx, "agt_1", store.AgentKey{JWKSURL: "https://k.example.com/a.json", KID: "k2"}))
	got = getAgent(t, s, "agt_1")
	if got.PublicKey != nil || got.JWKSURL == "" || got.KID != "k2" || got.Thumbprint != "" {
		t.Errorf("JWKS rotation: %+v", got.AgentKey)
	}
	must(t, s.UpdateAgentStatus(ctx, "agt_2", []string{agentcap.StatusActive}, agentcap.StatusRevoked))
	wantStatus(t, "rotate revoked", s.RotateAgentKey(ctx, "agt_2", store.AgentKey{PublicKey: jwk("x")}), agentcap.StatusRevoked)
}

func testGrants(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	a := newAgent("agt_1", "hst_1")
	a.Grants = []store.Grant{
		{Capability: "b", Status: agentcap.StatusActive},
		{Capability: "d", Status: agentcap.StatusPending},
	}
	mustAgent(t, s, a)

	must(t, s.PutGrants(ctx, "agt_1", []store.Grant{
		{Capability: "a", Status: agentcap.StatusPending, Reason: "needs it"},
		{Capability: "b", Status: agentcap.StatusDenied, DeniedBy: "usr_1", Reason: "no"},
	}))
	gs, err := s.ListGrants(ctx, "agt_1")
	must(t, err)
	want := []store.Grant{
		{Capability: "a", Status: agentcap.StatusPending, Reason: "needs it"},
		{Capability: "b", Status: agentcap.StatusDenied, DeniedBy: "usr_1", Reason: "no"},
		{Capability: "d", Status: agentcap.StatusPending},
	}
	if diff := cmp.Diff(want, gs, ignoreUpdated); diff != "" {
		t.Errorf("after PutGrants (-want +got):\n%s", diff)
	}

	err = s.UpdateGrantStatus(ctx, "agt_1", "a", store.GrantChange{From: []string{agentcap.StatusActive}, To: agentcap.StatusDenied})
	wantStatus(t, "grant CAS", err, agentcap.StatusPending)
	must(t, s.UpdateGrantStatus(ctx, "agt_1", "a", store.GrantChange{From: []string{agentcap.StatusPending}, To: agentcap.StatusActive, By: "usr_1"}))
	must(t, s.UpdateGrantStatus(ctx, "agt_1", "d", store.GrantChange{From: []string{agentcap.StatusPending}, To: agentcap.StatusDenied, By: "usr_2", Reason: "too broad"}))
	gs, err = s.ListGrants(ctx, "agt_1")
	must(t, err)
	want = []store.Grant{
		{Capability: "a", Status: agentcap.StatusActive, GrantedBy: "usr_1", Reason: "needs it"},
		{Capability: "b", Status: agentcap.StatusDenied, DeniedBy: "usr_1", Reason: "no"},
		{Capability: "d", Status: agentcap.StatusDenied, DeniedBy: "usr_2", Reason: "too broad"},
	}
	if diff := cmp.Diff(want, gs, ignoreUpdated); diff != "" {
		t.Errorf("after UpdateGrantStatus (-want +got):\n%s", diff)
	}

	must(t, s.ReplaceGrants(ctx, "agt_1", []store.Grant{{Capability: "z", Status: agentcap.StatusActive}}))
	gs, err = s.ListGrants(ctx, "agt_1")
	must(t, err)
	if len(gs) != 1 || gs[0].Capability != "z" {
		t.Errorf("after ReplaceGrants: %+v", gs)
	}
	must(t, s.ReplaceGrants(ctx, "agt_1", nil))
	gs, err = s.ListGrants(ctx, "agt_1")
	must(t, err)
	if gs == nil || len(gs) != 0 {
		t.Errorf("ListGrants of no grants = %#v, want an empty slice", gs)
	}
	wantIs(t, "PutGrants invalid", s.PutGrants(ctx, "agt_1", []store.Grant{{Capability: "x", Status: "maybe"}}), store.ErrInvalid)
	wantIs(t, "PutGrants twice", s.PutGrants(ctx, "agt_1", []store.Grant{
		{Capability: "x", Status: agentcap.StatusActive}, {Capability: "x", Status: agentcap.StatusActive}}), store.ErrInvalid)
	if gs, _ := s.ListGrants(ctx, "agt_1"); len(gs) != 0 {
		t.Errorf("a refused PutGrants stored %+v", gs)
	}
}

func testConstraintBytes(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	cons := map[string]json.RawMessage{
		"amount":   json.RawMessage(`{ "min": 0.50,  "max": 1e3 }`),
		"currency": json.RawMessage(`{"in":["USD","EUR","\u00e9<&>"]}`),
		"dest":     json.RawMessage(`"acc_456"`),
		"big":      json.RawMessage(`123456789012345678901234567890`),
		"obj":      json.RawMessage(`{"eq":{"b":1,"a":[true,null]}}`),
		"unicode":  json.RawMessage(`"日本"`),
	}
	a := newAgent("agt_1", "hst_1")
	a.Grants = []store.Grant{{Capability: "transfer", Status: agentcap.StatusActive, Constraints: cons}}
	mustAgent(t, s, a)
	check := func(what string, got map[string]json.RawMessage) {
		t.Helper()
		for k, v := range cons {
			if string(got[k]) != string(v) {
				t.Errorf("%s: constraint %q = %s, want the bytes %s", what, k, got[k], v)
			}
		}
		if len(got) != len(cons) {
			t.Errorf("%s: %d constraints, want %d", what, len(got), len(cons))
		}
	}
	check("GetAgent", getAgent(t, s, "agt_1").Grants[0].Constraints)
	d, err := s.Agent(ctx, "agt_1")
	must(t, err)
	check("Directory", d.Grants[0].Constraints)

	// Surrounding whitespace is the only change.
	must(t, s.PutGrants(ctx, "agt_1", []store.Grant{{Capability: "t2", Status: agentcap.StatusActive,
		Constraints: map[string]json.RawMessage{"n": json.RawMessage(" \n 1.0 \t")}}}))
	if got := string(grant(t, getAgent(t, s, "agt_1"), "t2").Constraints["n"]); got != "1.0" {
		t.Errorf("trimmed constraint = %q, want 1.0", got)
	}
	// An empty constraint map is no constraints.
	must(t, s.PutGrants(ctx, "agt_1", []store.Grant{{Capability: "t3", Status: agentcap.StatusActive, Constraints: map[string]json.RawMessage{}}}))
	if got := grant(t, getAgent(t, s, "agt_1"), "t3").Constraints; got != nil {
		t.Errorf("empty constraints read back as %#v, want nil", got)
	}
	// Approvals keep proposed constraints the same way.
	must(t, s.CreateApproval(ctx, &store.Approval{ID: "apr_1", Method: store.MethodDeviceAuthorization, AgentID: "agt_1",
		Capabilities: []store.RequestedCapability{{Name: "transfer", Constraints: cons}, {Name: "read"}},
		Status:       store.ApprovalPending, ExpiresAt: at(time.Hour)}))
	ap, err := s.GetApproval(ctx, "apr_1")
	must(t, err)
	check("Approval", ap.Capabilities[0].Constraints)
	if ap.Capabilities[1].Name != "read" || ap.Capabilities[1].Constraints != nil {
		t.Errorf("second requested capability: %+v", ap.Capabilities[1])
	}
}

// grant returns a's grant for capability.
func grant(t *testing.T, a *store.Agent, capability string) store.Grant {
	t.Helper()
	for _, g := range a.Grants {
		if g.Capability == capability {
			return g
		}
	}
	t.Fatalf("agent %s has no grant for %s", a.ID, capability)
	return store.Grant{}
}

func testApprovals(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	mustAgent(t, s, newAgent("agt_1", "hst_1"))
	ap := &store.Approval{
		ID: "apr_1", Method: store.MethodDeviceAuthorization, AgentID: "agt_1", HostID: "hst_1", UserID: "usr_hint",
		Capabilities: []store.RequestedCapability{{Name: "read"}},
		UserCode:     "ABCD-1234", DeviceCode: "device-secret-1", Status: store.ApprovalPending,
		Interval: 5 * time.Second, ExpiresAt: at(5 * time.Minute), BindingMessage: "Approve Bank balance checker",
		CreatedAt: base,
	}
	must(t, s.CreateApproval(ctx, ap))
	want := store.CloneApproval(ap)
	want.UserCode, want.DeviceCode = "", ""
	for name, get := range map[string]func() (*store.Approval, error){
		"GetApproval":          func() (*store.Approval, error) { return s.GetApproval(ctx, "apr_1") },
		"ApprovalByUserCode":   func() (*store.Approval, error) { return s.ApprovalByUserCode(ctx, "ABCD-1234") },
		"ApprovalByDeviceCode": func() (*store.Approval, error) { return s.ApprovalByDeviceCode(ctx, "device-secret-1") },
	} {
		got, err := get()
		must(t, err)
		if diff := cmp.Diff(want, got, ignoreUpdated); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	_, err := s.ApprovalByUserCode(ctx, "abcd-1234")
	wantIs(t, "user code compared exactly", err, store.ErrNotFound)
	if err != nil && containsString(err.Error(), "abcd-1234") {
		t.Errorf("the error reveals the code: %v", err)
	}
	_, err = s.ApprovalByUserCode(ctx, "")
	wantIs(t, "empty user code", err, store.ErrNotFound)
	_, err = s.ApprovalByDeviceCode(ctx, "")
	wantIs(t, "empty device code", err, store.ErrNotFound)
	_, err = s.GetApproval(ctx, "apr_missing")
	wantIs(t, "GetApproval", err, store.ErrNotFound)

	for _, tc := range []struct {
		name string
		a    *store.Approval
		want error
	}{
		{"same id", &store.Approval{ID: "apr_1", Method: "ciba", HostID: "hst_1", Status: store.ApprovalPending, ExpiresAt: at(time.Hour)}, store.ErrConflict},
		{"same user code", &store.Approval{ID: "apr_2", Method: "ciba", HostID: "hst_1", UserCode: "ABCD-1234", Status: store.ApprovalPending, ExpiresAt: at(time.Hour)}, store.ErrConflict},
		{"same device code", &store.Approval{ID: "apr_3", Method: "ciba", HostID: "hst_1", DeviceCode: "device-secret-1", Status: store.ApprovalPending, ExpiresAt: at(time.Hour)}, store.ErrConflict},
		{"unknown agent", &store.Approval{ID: "apr_4", Method: "ciba", AgentID: "agt_missing", Status: store.ApprovalPending, ExpiresAt: at(time.Hour)}, store.ErrNotFound},
		{"unknown host", &store.Approval{ID: "apr_5", Method: "ciba", HostID: "hst_missing", Status: store.ApprovalPending, ExpiresAt: at(time.Hour)}, store.ErrNotFound},
		{"no subject", &store.Approval{ID: "apr_6", Method: "ciba", Status: store.ApprovalPending, ExpiresAt: at(time.Hour)}, store.ErrInvalid},
		{"no expiry", &store.Approval{ID: "apr_7", Method: "ciba", HostID: "hst_1", Status: store.ApprovalPending}, store.ErrInvalid},
		{"bad status", &store.Approval{ID: "apr_8", Method: "ciba", HostID: "hst_1", Status: "active", ExpiresAt: at(time.Hour)}, store.ErrInvalid},
		{"no method", &store.Approval{ID: "apr_9", HostID: "hst_1", Status: store.ApprovalPending, ExpiresAt: at(time.Hour)}, store.ErrInvalid},
		{"unnamed capability", &store.Approval{ID: "apr_10", Method: "ciba", HostID: "hst_1", Status: store.ApprovalPending, ExpiresAt: at(time.Hour),
			Capabilities: []store.RequestedCapability{{}}}, store.ErrInvalid},
		{"bad constraint", &store.Approval{ID: "apr_11", Method: "ciba", HostID: "hst_1", Status: store.ApprovalPending, ExpiresAt: at(time.Hour),
			Capabilities: []store.RequestedCapability{{Name: "a", Constraints: map[string]json.RawMessage{"x": json.RawMessage(`{"like":"%"}`)}}}}, store.ErrInvalid},
	} {
		wantIs(t, tc.name, s.CreateApproval(ctx, tc.a), tc.want)
	}

	must(t, s.CreateApproval(ctx, &store.Approval{ID: "apr_0", Method: store.MethodCIBA, AgentID: "agt_1",
		Status: store.ApprovalPending, ExpiresAt: at(time.Hour), CreatedAt: base.Add(-time.Minute)}))
	must(t, s.CreateApproval(ctx, &store.Approval{ID: "apr_host", Method: store.MethodCIBA, HostID: "hst_1",
		Status: store.ApprovalPending, ExpiresAt: at(time.Hour)}))
	list, err := s.ListApprovals(ctx, "agt_1")
	must(t, err)
	if len(list) != 2 || list[0].ID != "apr_0" || list[1].ID != "apr_1" {
		t.Errorf("ListApprovals: %d, first %v", len(list), list)
	}
	if list, err := s.ListApprovals(ctx, "agt_none"); err != nil || list == nil || len(list) != 0 {
		t.Errorf("ListApprovals of unknown agent: %#v, %v", list, err)
	}
}

func containsString(s, sub string) bool {
	return len(sub) > 0 && len(s) >= len(sub) && (func() bool {
		for i := 0; i+len(sub) <= len(s); i++ {
			if s[i:i+len(sub)] == sub {
				return true
			}
		}
		return false
	})()
}

func testApprovalPollAndDecide(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	mk := func(id string) {
		must(t, s.CreateApproval(ctx, &store.Approval{ID: id, Method: store.MethodDeviceAuthorization, HostID: "hst_1",
			UserCode: "code-" + id, Status: store.ApprovalPending, Interval: 5 * time.Second, ExpiresAt: at(time.Minute)}))
	}
	mk("apr_1")
	for i, step := range []struct {
		at   time.Duration
		slow bool
	}{
		{0, false},
		{5 * time.Second, false},
		{7 * time.Second, true}, // 2 s after the previous poll
		{9 * time.Second, true},
		{20 * time.Second, false},
	} {
		a, slow, err := s.PollApproval(ctx, "apr_1", at(step.at))
		must(t, err)
		if slow != step.slow || a.Status != store.ApprovalPending || !a.LastPolledAt.Equal(at(step.at)) {
			t.Errorf("poll %d at +%v: slow %v status %s last %v; want slow %v", i, step.at, slow, a.Status, a.LastPolledAt, step.slow)
		}
	}
	a, _, err := s.PollApproval(ctx, "apr_1", at(time.Minute))
	must(t, err)
	if a.Status != store.ApprovalExpired {
		t.Errorf("poll after expiry: status %s", a.Status)
	}
	err = s.DecideApproval(ctx, "apr_1", store.ApprovalApproved, "usr_1", at(30*time.Second))
	wantStatus(t, "decide expired", err, store.ApprovalExpired)

	mk("apr_2")
	wantIs(t, "decide to pending", s.DecideApproval(ctx, "apr_2", store.ApprovalPending, "usr_1", base), store.ErrInvalid)
	err = s.DecideApproval(ctx, "apr_2", store.ApprovalApproved, "usr_1", at(time.Minute))
	wantStatus(t, "decide at expiry", err, store.ApprovalExpired)
	if got, err := s.GetApproval(ctx, "apr_2"); err != nil || got.Status != store.ApprovalExpired {
		t.Errorf("late decision did not mark the request expired: %v, %v", got, err)
	}

	mk("apr_3")
	must(t, s.DecideApproval(ctx, "apr_3", store.ApprovalDenied, "usr_1", at(10*time.Second)))
	wantStatus(t, "decide twice", s.DecideApproval(ctx, "apr_3", store.ApprovalApproved, "usr_2", at(11*time.Second)), store.ApprovalDenied)
	got, err := s.GetApproval(ctx, "apr_3")
	must(t, err)
	if got.Status != store.ApprovalDenied || got.UserID != "usr_1" {
		t.Errorf("decided: %s by %s", got.Status, got.UserID)
	}
	_, _, err = s.PollApproval(ctx, "apr_missing", base)
	wantIs(t, "PollApproval", err, store.ErrNotFound)
	wantIs(t, "DecideApproval", s.DecideApproval(ctx, "apr_missing", store.ApprovalApproved, "u", base), store.ErrNotFound)
}

// testCallConfirmations stores a request to confirm one call, keeps its
// call byte for byte, and hands its token out once: of many concurrent
// moves from approved to used exactly one wins.
func testCallConfirmations(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	mustAgent(t, s, newAgent("agt_1", "hst_1"))
	call := &store.Call{Capability: "transfer_money", Audience: "https://bank.example/capability/execute",
		Arguments: json.RawMessage(`{"amount": 1500.00, "currency":"USD"}`),
		Preview:   json.RawMessage(`{"amount":1500,"source_balance_after":3500}`)}
	ap := &store.Approval{ID: "apr_1", Method: store.MethodDeviceAuthorization, AgentID: "agt_1", HostID: "hst_1", UserID: "usr_1",
		Capabilities: []store.RequestedCapability{{Name: "transfer_money"}}, UserCode: "CALL-CODE", Status: store.ApprovalPending,
		Interval: 2 * time.Second, ExpiresAt: at(10 * time.Minute), Call: call, CreatedAt: base}
	must(t, s.CreateApproval(ctx, ap))
	call.Preview[1] = 'X' // the store kept its own copy
	want := store.CloneApproval(ap)
	want.UserCode = ""
	want.Call.Preview = json.RawMessage(`{"amount":1500,"source_balance_after":3500}`)
	for name, get := range map[string]func() (*store.Approval, error){
		"GetApproval":        func() (*store.Approval, error) { return s.GetApproval(ctx, "apr_1") },
		"ApprovalByUserCode": func() (*store.Approval, error) { return s.ApprovalByUserCode(ctx, "CALL-CODE") },
		"ListApprovals": func() (*store.Approval, error) {
			l, err := s.ListApprovals(ctx, "agt_1")
			if err != nil || len(l) != 1 {
				return nil, fmt.Errorf("%d approvals, %v", len(l), err)
			}
			return l[0], nil
		},
		"ListUserApprovals": func() (*store.Approval, error) {
			l, err := s.ListUserApprovals(ctx, "usr_1")
			if err != nil || len(l) != 1 {
				return nil, fmt.Errorf("%d approvals, %v", len(l), err)
			}
			return l[0], nil
		},
	} {
		got, err := get()
		must(t, err)
		if diff := cmp.Diff(want, got, ignoreUpdated); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	for _, tc := range []struct {
		name string
		call *store.Call
	}{
		{"no capability", &store.Call{Arguments: json.RawMessage(`{}`), Preview: json.RawMessage(`{}`)}},
		{"arguments not JSON", &store.Call{Capability: "c", Arguments: json.RawMessage(`{`), Preview: json.RawMessage(`{}`)}},
		{"preview not JSON", &store.Call{Capability: "c", Arguments: json.RawMessage(`{}`)}},
	} {
		wantIs(t, tc.name, s.CreateApproval(ctx, &store.Approval{ID: "apr_bad", Method: store.MethodDeviceAuthorization, AgentID: "agt_1",
			Status: store.ApprovalPending, ExpiresAt: at(time.Hour), Call: tc.call}), store.ErrInvalid)
	}

	// Only an approved request is used, once.
	wantStatus(t, "use a pending request", s.DecideApproval(ctx, "apr_1", store.ApprovalUsed, "usr_1", at(time.Second)), store.ApprovalPending)
	must(t, s.DecideApproval(ctx, "apr_1", store.ApprovalApproved, "usr_1", at(time.Minute)))
	errs := parallel(20, func(int) error {
		return s.DecideApproval(ctx, "apr_1", store.ApprovalUsed, "usr_1", at(2*time.Minute))
	})
	oneWinner(t, "use", errs, store.ErrStatus)
	got, err := s.GetApproval(ctx, "apr_1")
	must(t, err)
	if got.Status != store.ApprovalUsed || got.UserID != "usr_1" || got.Call == nil {
		t.Errorf("used: %s by %s, call %v", got.Status, got.UserID, got.Call)
	}
	if l, err := s.ListUserApprovals(ctx, "usr_1"); err != nil || len(l) != 0 {
		t.Errorf("a used request is still waiting: %v %v", l, err)
	}
}

func testSweep(t *testing.T, s store.Store) {
	p := store.Policy{SessionTTL: 30 * time.Minute, MaxLifetime: 24 * time.Hour, AbsoluteLifetime: 7 * 24 * time.Hour, PendingTTL: 24 * time.Hour}
	now := at(10 * 24 * time.Hour)
	day := 24 * time.Hour
	mustHost(t, s, newHost("hst_1"))
	type spec struct {
		status                 string
		created                time.Time
		activated, used, until *time.Time
		want                   string // "" for deleted
	}
	agents := map[string]spec{
		// Used a minute ago: stays active.
		"agt_busy": {agentcap.StatusActive, now.Add(-2 * day), ptr(now.Add(-time.Hour)), ptr(now.Add(-time.Minute)), nil, agentcap.StatusActive},
		// Idle for exactly the session TTL.
		"agt_idle": {agentcap.StatusActive, now.Add(-2 * day), ptr(now.Add(-time.Hour)), ptr(now.Add(-30 * time.Minute)), nil, agentcap.StatusExpired},
		// Never used, activated long ago.
		"agt_never_used": {agentcap.StatusActive, now.Add(-2 * day), ptr(now.Add(-time.Hour)), nil, nil, agentcap.StatusExpired},
		// Busy but activated a day ago: max lifetime.
		"agt_max": {agentcap.StatusActive, now.Add(-3 * day), ptr(now.Add(-day)), ptr(now.Add(-time.Second)), nil, agentcap.StatusExpired},
		// A stored deadline from a stricter per-agent policy.
		"agt_deadline": {agentcap.StatusActive, now.Add(-day), ptr(now.Add(-time.Minute)), ptr(now.Add(-time.Second)), ptr(now), agentcap.StatusExpired},
		// Created over a week ago: revoked whether active or expired.
		"agt_old_active":  {agentcap.StatusActive, now.Add(-7 * day), ptr(now.Add(-time.Minute)), ptr(now.Add(-time.Second)), nil, agentcap.StatusRevoked},
		"agt_old_expired": {agentcap.StatusExpired, now.Add(-8 * day), nil, nil, nil, agentcap.StatusRevoked},
		"agt_expired":     {agentcap.StatusExpired, now.Add(-2 * day), nil, nil, nil, agentcap.StatusExpired},
		// Pending: deleted after the pending TTL.
		"agt_pending_old": {agentcap.StatusPending, now.Add(-day), nil, nil, nil, ""},
		"agt_pending_new": {agentcap.StatusPending, now.Add(-day + time.Second), nil, nil, nil, agentcap.StatusPending},
		// Terminal states stay.
		"agt_claimed_old": {agentcap.StatusClaimed, now.Add(-9 * day), nil, nil, nil, agentcap.StatusClaimed},
	}
	for id, sp := range agents {
		a := newAgent(id, "hst_1")
		a.Status, a.CreatedAt, a.ActivatedAt, a.LastUsedAt, a.ExpiresAt = sp.status, sp.created, sp.activated, sp.used, sp.until
		a.Grants = []store.Grant{{Capability: "read", Status: agentcap.StatusPending}}
		mustAgent(t, s, a)
	}
	// Pending hosts: deleted when old and empty.
	for id, created := range map[string]time.Time{"hst_pending_old": now.Add(-day), "hst_pending_new": now.Add(-time.Hour), "hst_pending_busy": now.Add(-2 * day)} {
		mustHost(t, s, &store.Host{ID: id, PublicKey: jwk(id), Status: agentcap.StatusPending, CreatedAt: created})
	}
	busy := newAgent("agt_on_busy_host", "hst_pending_busy")
	busy.Status, busy.CreatedAt = agentcap.StatusPending, now.Add(-time.Hour)
	mustAgent(t, s, busy)
	mustHost(t, s, &store.Host{ID: "hst_active_old", PublicKey: jwk("hao"), Status: agentcap.StatusActive, CreatedAt: now.Add(-30 * day)})
	// Approvals: deleted past their expiry, with their agents and hosts.
	for id, ap := range map[string]store.Approval{
		"apr_expired":          {AgentID: "agt_busy", ExpiresAt: now, Status: store.ApprovalPending},
		"apr_live":             {AgentID: "agt_busy", ExpiresAt: now.Add(time.Second), Status: store.ApprovalPending},
		"apr_decided_expired":  {HostID: "hst_1", ExpiresAt: now.Add(-time.Hour), Status: store.ApprovalApproved},
		"apr_of_deleted_agent": {AgentID: "agt_pending_old", ExpiresAt: now.Add(time.Hour), Status: store.ApprovalPending},
		"apr_of_deleted_host":  {HostID: "hst_pending_old", ExpiresAt: now.Add(time.Hour), Status: store.ApprovalPending},
	} {
		ap.ID, ap.Method, ap.UserCode = id, store.MethodDeviceAuthorization, "code-"+id
		must(t, s.CreateApproval(ctx, &ap))
	}

	r, err := s.Sweep(ctx, now, p)
	must(t, err)
	want := store.SweepResult{AgentsExpired: 4, AgentsRevoked: 2, AgentsDeleted: 1, HostsDeleted: 1, ApprovalsDeleted: 2}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("SweepResult (-want +got):\n%s", diff)
	}
	for id, sp := range agents {
		a, err := s.GetAgent(ctx, id)
		switch {
		case sp.want == "":
			wantIs(t, id+" deleted", err, store.ErrNotFound)
		case err != nil:
			t.Errorf("%s: %v", id, err)
		case a.Status != sp.want:
			t.Errorf("%s: status %q, want %q", id, a.Status, sp.want)
		}
	}
	for id, exists := range map[string]bool{"hst_pending_old": false, "hst_pending_new": true, "hst_pending_busy": true, "hst_active_old": true} {
		_, err := s.GetHost(ctx, id)
		if exists != (err == nil) {
			t.Errorf("host %s: err %v, want exists=%v", id, err, exists)
		}
	}
	for id, exists := range map[string]bool{"apr_expired": false, "apr_live": true, "apr_decided_expired": false, "apr_of_deleted_agent": false, "apr_of_deleted_host": false} {
		_, err := s.GetApproval(ctx, id)
		if exists != (err == nil) {
			t.Errorf("approval %s: err %v, want exists=%v", id, err, exists)
		}
	}
	if _, err := s.ApprovalByUserCode(ctx, "code-apr_expired"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the code of a swept approval still finds it: %v", err)
	}
	// A swept pending agent's key may register again.
	again := newAgent("agt_pending_old", "hst_1")
	again.CreatedAt = now
	mustAgent(t, s, again)
	// A second sweep finds nothing more to do.
	r, err = s.Sweep(ctx, now, p)
	must(t, err)
	if r != (store.SweepResult{}) {
		t.Errorf("second sweep: %+v", r)
	}
	// A zero policy only drops expired approvals.
	r, err = s.Sweep(ctx, now.Add(100*day), store.Policy{})
	must(t, err)
	if r != (store.SweepResult{ApprovalsDeleted: 1}) {
		t.Errorf("zero policy sweep: %+v", r)
	}
}

// parallel runs fn(i) for i in [0, n) at once and returns the errors.
func parallel(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = fn(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// oneWinner checks that exactly one call succeeded and the others failed
// with an error wrapping loss.
func oneWinner(t *testing.T, what string, errs []error, loss error) {
	t.Helper()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, loss):
			t.Errorf("%s: unexpected error %v", what, err)
		}
	}
	if wins != 1 {
		t.Errorf("%s: %d winners, want exactly 1", what, wins)
	}
}

const racers = 50

func testConcurrentRegistration(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	errs := parallel(racers, func(i int) error {
		a := newAgent(fmt.Sprintf("agt_%02d", i), "hst_1")
		a.Grants = []store.Grant{{Capability: "read", Status: agentcap.StatusActive}}
		return s.CreateAgent(ctx, a)
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("agent %d: %v", i, err)
		}
	}
	list, err := s.ListAgents(ctx, "hst_1")
	must(t, err)
	if len(list) != racers {
		t.Errorf("%d agents listed, want %d", len(list), racers)
	}
	// One key, many registration attempts: one agent.
	errs = parallel(racers, func(i int) error {
		a := newAgent(fmt.Sprintf("agt_same_key_%02d", i), "hst_1")
		a.AgentKey = store.AgentKey{PublicKey: jwk("shared")}
		return s.CreateAgent(ctx, a)
	})
	oneWinner(t, "same key", errs, store.ErrConflict)
	// One id, many attempts.
	errs = parallel(racers, func(i int) error {
		a := newAgent("agt_same_id", "hst_1")
		a.AgentKey = store.AgentKey{PublicKey: jwk(fmt.Sprintf("id-race-%d", i))}
		return s.CreateAgent(ctx, a)
	})
	oneWinner(t, "same id", errs, store.ErrConflict)
	// Registrations racing the host's revocation: every agent that got in
	// is revoked by the cascade.
	mustHost(t, s, newHost("hst_2"))
	errs = parallel(racers+1, func(i int) error {
		if i == racers {
			_, err := s.UpdateHostStatus(ctx, "hst_2", []string{agentcap.StatusActive}, agentcap.StatusRevoked)
			return err
		}
		err := s.CreateAgent(ctx, newAgent(fmt.Sprintf("agt_h2_%02d", i), "hst_2"))
		if errors.Is(err, store.ErrStatus) {
			return nil
		}
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("revocation race %d: %v", i, err)
		}
	}
	list, err = s.ListAgents(ctx, "hst_2")
	must(t, err)
	for _, a := range list {
		if a.Status != agentcap.StatusRevoked {
			t.Errorf("%s is %s under a revoked host", a.ID, a.Status)
		}
	}
}

func testConcurrentGrants(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	mustAgent(t, s, newAgent("agt_1", "hst_1"))
	errs := parallel(racers, func(i int) error {
		return s.PutGrants(ctx, "agt_1", []store.Grant{{
			Capability: fmt.Sprintf("cap_%02d", i), Status: agentcap.StatusPending,
			Constraints: map[string]json.RawMessage{"n": json.RawMessage(fmt.Sprintf(`{"max":%d}`, i))},
		}})
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("PutGrants %d: %v", i, err)
		}
	}
	gs, err := s.ListGrants(ctx, "agt_1")
	must(t, err)
	if len(gs) != racers {
		t.Fatalf("%d grants, want %d: concurrent updates were lost", len(gs), racers)
	}
	for i, g := range gs {
		if g.Capability != fmt.Sprintf("cap_%02d", i) || string(g.Constraints["n"]) != fmt.Sprintf(`{"max":%d}`, i) {
			t.Errorf("grant %d: %s %s", i, g.Capability, g.Constraints["n"])
		}
	}
	// Approving one pending grant: one approver wins.
	errs = parallel(racers, func(i int) error {
		return s.UpdateGrantStatus(ctx, "agt_1", "cap_07", store.GrantChange{
			From: []string{agentcap.StatusPending}, To: agentcap.StatusActive, By: fmt.Sprintf("usr_%d", i)})
	})
	oneWinner(t, "grant approval", errs, store.ErrStatus)
	// Approving each grant concurrently with touching the agent loses no
	// approval.
	errs = parallel(2*racers, func(i int) error {
		if i >= racers {
			return s.TouchAgent(ctx, "agt_1", at(time.Duration(i)*time.Second), store.Policy{SessionTTL: time.Hour})
		}
		if i == 7 {
			return nil
		}
		return s.UpdateGrantStatus(ctx, "agt_1", fmt.Sprintf("cap_%02d", i), store.GrantChange{
			From: []string{agentcap.StatusPending}, To: agentcap.StatusActive, By: "usr"})
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("racer %d: %v", i, err)
		}
	}
	gs, err = s.ListGrants(ctx, "agt_1")
	must(t, err)
	for _, g := range gs {
		if g.Status != agentcap.StatusActive {
			t.Errorf("%s is %s: a concurrent approval was lost", g.Capability, g.Status)
		}
	}
	if a := getAgent(t, s, "agt_1"); !a.LastUsedAt.Equal(at(time.Duration(2*racers-1) * time.Second)) {
		t.Errorf("last_used_at %v, want the latest touch", a.LastUsedAt)
	}
}

func testConcurrentTransitions(t *testing.T, s store.Store) {
	mustHost(t, s, newHost("hst_1"))
	a := newAgent("agt_1", "hst_1")
	a.Status = agentcap.StatusPending
	mustAgent(t, s, a)
	p := store.Policy{SessionTTL: time.Hour}
	errs := parallel(racers, func(i int) error {
		if i%2 == 0 {
			return s.ActivateAgent(ctx, "agt_1", []string{agentcap.StatusPending}, base, p)
		}
		return s.UpdateAgentStatus(ctx, "agt_1", []string{agentcap.StatusPending}, agentcap.StatusRejected)
	})
	oneWinner(t, "approve or reject", errs, store.ErrStatus)

	must(t, s.CreateApproval(ctx, &store.Approval{ID: "apr_1", Method: store.MethodDeviceAuthorization, AgentID: "agt_1",
		Status: store.ApprovalPending, ExpiresAt: at(time.Hour)}))
	errs = parallel(racers, func(i int) error {
		to := store.ApprovalApproved
		if i%3 == 0 {
			to = store.ApprovalDenied
		}
		return s.DecideApproval(ctx, "apr_1", to, fmt.Sprintf("usr_%d", i), at(time.Minute))
	})
	oneWinner(t, "approval decision", errs, store.ErrStatus)

	mustHost(t, s, newHost("hst_2"))
	errs = parallel(racers, func(i int) error {
		_, err := s.LinkHostUser(ctx, "hst_2", fmt.Sprintf("usr_%d", i))
		return err
	})
	oneWinner(t, "host link", errs, store.ErrConflict)

	errs = parallel(racers, func(i int) error {
		return s.RotateHostKey(ctx, "hst_2", thumb("host:hst_2"), jwk(fmt.Sprintf("rot-%d", i)), "")
	})
	oneWinner(t, "host key rotation", errs, store.ErrConflict)
}

// testVerifier: the agentauth verifier, given the store as its directory,
// accepts tokens of the agents the store holds and follows the store's
// changes.
func testVerifier(t *testing.T, s store.Store) {
	const aud = "https://api.example.com/capability/execute"
	th := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Key: key("verifier-host")})
	ta := th.NewAgent(agentauthtest.Agent{ID: "agt_1", Key: key("verifier-agent")})
	mustHost(t, s, &store.Host{ID: th.ID, PublicKey: th.PublicJWK(), Status: agentcap.StatusActive})
	past := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	mustAgent(t, s, &store.Agent{ID: ta.ID, HostID: th.ID, Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive,
		AgentKey: store.AgentKey{PublicKey: ta.PublicJWK()}, CreatedAt: past,
		Grants: []store.Grant{{Capability: "transfer", Status: agentcap.StatusActive,
			Constraints: map[string]json.RawMessage{"amount": json.RawMessage(`{"max":1000}`)}}}})
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: s, Audiences: []string{aud}})
	must(t, err)

	sess, err := v.Session(ctx, ta.Token(agentauthtest.Token{Audience: aud}))
	must(t, err)
	if sess.Agent.ID != "agt_1" || sess.Host.ID != "hst_1" || len(sess.Agent.Grants) != 1 || string(sess.Agent.Grants[0].Constraints["amount"]) != `{"max":1000}` {
		t.Errorf("session: %+v", sess.Agent)
	}
	call := &auth.Call{Capability: "transfer", Arguments: map[string]json.RawMessage{"amount": json.RawMessage("5000")}}
	var ae *agentcap.Error
	if err := agentauth.AuthorizeCall(sess, call, time.Now()); !errors.As(err, &ae) || ae.Code != agentcap.CodeConstraintViolated {
		t.Errorf("a call outside the stored constraints: %v", err)
	}

	// A session deadline in the past makes the agent expired at once.
	must(t, s.ActivateAgent(ctx, "agt_1", []string{agentcap.StatusActive}, past, store.Policy{SessionTTL: time.Minute}))
	_, err = v.Session(ctx, ta.Token(agentauthtest.Token{Audience: aud}))
	if !errors.As(err, &ae) || ae.Code != agentcap.CodeAgentExpired {
		t.Errorf("expired agent: %v", err)
	}
	must(t, s.ActivateAgent(ctx, "agt_1", []string{agentcap.StatusActive}, time.Now(), store.Policy{}))
	if _, err := v.Session(ctx, ta.Token(agentauthtest.Token{Audience: aud})); err != nil {
		t.Errorf("reactivated agent: %v", err)
	}
	// Revoking the host revokes the agent for the verifier too.
	if _, err := s.UpdateHostStatus(ctx, "hst_1", []string{agentcap.StatusActive}, agentcap.StatusRevoked); err != nil {
		t.Fatal(err)
	}
	_, err = v.Session(ctx, ta.Token(agentauthtest.Token{Audience: aud}))
	if !errors.As(err, &ae) || (ae.Code != agentcap.CodeAgentRevoked && ae.Code != agentcap.CodeHostRevoked) {
		t.Errorf("revoked: %v", err)
	}
}
