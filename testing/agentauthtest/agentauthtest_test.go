package agentauthtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

func TestRecords(t *testing.T) {
	expires := t0.Add(time.Hour)
	defaults := []string{"read_balance"}
	h := agentauthtest.NewHost(agentauthtest.Host{
		ID:                  "hst_1",
		Rand:                seeded(4),
		UserID:              "usr_1",
		Status:              agentcap.StatusPending,
		DefaultCapabilities: defaults,
	})
	defaults[0] = "changed"
	delegated := h.NewAgent(agentauthtest.Agent{ID: "agt_d"}).
		Grant("transfer", map[string]any{"amount": map[string]any{"max": 1000}, "currency": "USD"}).
		Grant("read_balance", nil)
	grants := []agentauth.Grant{
		{Capability: "transfer", Status: agentcap.StatusActive, ExpiresAt: &expires},
		{Capability: "close_account", Status: agentcap.StatusDenied},
	}
	autonomous := h.NewAgent(agentauthtest.Agent{
		ID:      "agt_a",
		Mode:    agentcap.ModeAutonomous,
		Status:  agentcap.StatusRevoked,
		JWKSURL: "https://agents.example/jwks",
		Grants:  grants,
	})
	grants[1].Status = agentcap.StatusActive
	otherUser := h.NewAgent(agentauthtest.Agent{ID: "agt_u", UserID: "usr_2"})
	hostsUser := h.NewAgent(agentauthtest.Agent{ID: "agt_h"})
	hostsUser.UserID = ""

	wantHost := &agentauth.Host{ID: "hst_1", PublicKey: h.PublicJWK(), UserID: "usr_1", Status: agentcap.StatusPending, DefaultCapabilities: []string{"read_balance"}}
	if diff := cmp.Diff(wantHost, h.Record()); diff != "" {
		t.Errorf("host record (-want +got):\n%s", diff)
	}
	tests := []struct {
		agent *agentauthtest.Agent
		want  *agentauth.Agent
	}{
		{delegated, &agentauth.Agent{ID: "agt_d", HostID: "hst_1", UserID: "usr_1", Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive,
			PublicKey: delegated.PublicJWK(), Grants: []agentauth.Grant{
				{Capability: "transfer", Status: agentcap.StatusActive, Constraints: map[string]json.RawMessage{
					"amount": json.RawMessage(`{"max":1000}`), "currency": json.RawMessage(`"USD"`)}},
				{Capability: "read_balance", Status: agentcap.StatusActive},
			}}},
		{autonomous, &agentauth.Agent{ID: "agt_a", HostID: "hst_1", Mode: agentcap.ModeAutonomous, Status: agentcap.StatusRevoked,
			JWKSURL: "https://agents.example/jwks", KID: autonomous.Thumbprint(), Grants: []agentauth.Grant{
				{Capability: "transfer", Status: agentcap.StatusActive, ExpiresAt: &expires},
				{Capability: "close_account", Status: agentcap.StatusDenied},
			}}},
		{otherUser, &agentauth.Agent{ID: "agt_u", HostID: "hst_1", UserID: "usr_2", Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive,
			PublicKey: otherUser.PublicJWK(), Grants: []agentauth.Grant{}}},
		{hostsUser, &agentauth.Agent{ID: "agt_h", HostID: "hst_1", Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive,
			PublicKey: hostsUser.PublicJWK(), Grants: []agentauth.Grant{}}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, tc.agent.Record()); diff != "" {
			t.Errorf("agent %s record (-want +got):\n%s", tc.agent.ID, diff)
		}
	}

	// Records are copies.
	r := delegated.Record()
	r.Grants[0].Constraints["amount"][1] = 'X'
	r.Grants = append(r.Grants, agentauth.Grant{})
	if got := delegated.Record(); string(got.Grants[0].Constraints["amount"]) != `{"max":1000}` || len(got.Grants) != 2 {
		t.Error("changing a record changed the agent")
	}

	jh := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_j", JWKSURL: "https://host.example/jwks"})
	if r := jh.Record(); r.JWKSURL != "https://host.example/jwks" || r.PublicKey != nil {
		t.Errorf("JWKS host record = %+v", r)
	}
}

func TestGrantPanicsOnUnencodableConstraint(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Grant with a channel constraint did not panic")
		}
	}()
	agentauthtest.NewHost(agentauthtest.Host{ID: "h"}).NewAgent(agentauthtest.Agent{ID: "a"}).Grant("x", map[string]any{"f": make(chan int)})
}

func TestNewDirectory(t *testing.T) {
	h := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Rand: seeded(5)})
	a := h.NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("transfer", map[string]any{"amount": map[string]any{"max": 1000}})
	d, err := agentauthtest.NewDirectory([]*agentauthtest.Host{h}, []*agentauthtest.Agent{a})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	gotHost, err := d.Host(ctx, "hst_1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h.Record(), gotHost); diff != "" {
		t.Errorf("host (-want +got):\n%s", diff)
	}
	gotAgent, err := d.Agent(ctx, "agt_1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a.Record(), gotAgent); diff != "" {
		t.Errorf("agent (-want +got):\n%s", diff)
	}
	if _, err := d.Agent(ctx, "agt_2"); !errors.Is(err, agentauth.ErrNotFound) {
		t.Errorf("unknown agent: %v, want ErrNotFound", err)
	}

	// An agent whose host is not in the directory is refused.
	orphan := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_2"}).NewAgent(agentauthtest.Agent{ID: "agt_2"})
	if _, err := agentauthtest.NewDirectory([]*agentauthtest.Host{h}, []*agentauthtest.Agent{orphan}); err == nil {
		t.Error("NewDirectory accepted an agent without its host")
	}
	bad := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_3", Status: "sleeping"})
	if _, err := agentauthtest.NewDirectory([]*agentauthtest.Host{bad}, nil); err == nil {
		t.Error("NewDirectory accepted a host with an invalid status")
	}
}

func TestWriteDirectoryFile(t *testing.T) {
	expires := t0.Add(90 * time.Minute)
	h := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Rand: seeded(6), UserID: "usr_1", DefaultCapabilities: []string{"read"}})
	jh := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_2", JWKSURL: "https://host.example/jwks"})
	a := h.NewAgent(agentauthtest.Agent{ID: "agt_1", Grants: []agentauth.Grant{{Capability: "read", Status: agentcap.StatusPending, ExpiresAt: &expires}}}).
		Grant("transfer", map[string]any{"amount": map[string]any{"min": 0, "max": 1000}, "currency": map[string]any{"in": []string{"USD"}}})
	b := jh.NewAgent(agentauthtest.Agent{ID: "agt_2", Mode: agentcap.ModeAutonomous, JWKSURL: "https://agents.example/jwks"})

	path := filepath.Join(t.TempDir(), "directory.json")
	if err := agentauthtest.WriteDirectoryFile(path, []*agentauthtest.Host{h, jh}, []*agentauthtest.Agent{a, b}); err != nil {
		t.Fatal(err)
	}
	d, err := agentauth.LoadDirectoryFile(path)
	if err != nil {
		raw, _ := os.ReadFile(path)
		t.Fatalf("LoadDirectoryFile: %v\n%s", err, raw)
	}
	ctx := context.Background()
	byValue := cmp.Comparer(jsonEqual)
	for _, want := range []*agentauth.Host{h.Record(), jh.Record()} {
		got, err := d.Host(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, byValue); diff != "" {
			t.Errorf("host %s (-want +got):\n%s", want.ID, diff)
		}
	}
	for _, want := range []*agentauth.Agent{a.Record(), b.Record()} {
		got, err := d.Agent(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, byValue); diff != "" {
			t.Errorf("agent %s (-want +got):\n%s", want.ID, diff)
		}
	}

	if err := agentauthtest.WriteDirectoryFile(filepath.Join(t.TempDir(), "missing", "dir.json"), nil, nil); err == nil {
		t.Error("WriteDirectoryFile into a missing directory succeeded")
	}
}

// jsonEqual compares JSON texts by value, since the fixture file is
// indented and the records are not.
func jsonEqual(x, y json.RawMessage) bool {
	var a, b any
	if json.Unmarshal(x, &a) != nil || json.Unmarshal(y, &b) != nil {
		return string(x) == string(y)
	}
	return cmp.Equal(a, b)
}

// TestVerifierAcceptsTokens checks the kit's tokens against the project's
// own verifier: valid ones pass, each broken variant fails as intended.
func TestVerifierAcceptsTokens(t *testing.T) {
	h := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Rand: seeded(7), Clock: fixedClock})
	a := h.NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("transfer", map[string]any{"amount": map[string]any{"max": 1000}})
	revoked := h.NewAgent(agentauthtest.Agent{ID: "agt_revoked", Status: agentcap.StatusRevoked})
	d, err := agentauthtest.NewDirectory([]*agentauthtest.Host{h}, []*agentauthtest.Agent{a, revoked})
	if err != nil {
		t.Fatal(err)
	}
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: d, Audiences: []string{audience}, Now: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	other := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_x", Rand: seeded(8)}).NewAgent(agentauthtest.Agent{ID: "agt_x"})

	s, err := v.Session(context.Background(), a.Token(agentauthtest.Token{Audience: audience, Capabilities: []string{"transfer"}}))
	if err != nil {
		t.Fatalf("valid token refused: %v", err)
	}
	if s.Agent.ID != "agt_1" || s.Host.ID != "hst_1" {
		t.Errorf("session for agent %q of host %q", s.Agent.ID, s.Host.ID)
	}
	if diff := cmp.Diff([]string{"transfer"}, s.Claims.Capabilities); diff != "" {
		t.Errorf("capabilities claim (-want +got):\n%s", diff)
	}
	if err := agentauth.AuthorizeCall(s, &auth.Call{Capability: "transfer", Arguments: map[string]json.RawMessage{"amount": json.RawMessage("10")}}, t0); err != nil {
		t.Errorf("AuthorizeCall: %v", err)
	}
	if _, err := v.Session(context.Background(), a.Token(agentauthtest.Token{Audience: audience, Issuer: h.Thumbprint()})); err != nil {
		t.Errorf("token with the host thumbprint as iss refused: %v", err)
	}

	broken := []struct {
		name  string
		token string
		code  agentcap.Code
	}{
		{"replayed jti", a.Token(agentauthtest.Token{Audience: audience, JTI: "once"}), ""}, // first use passes
		{"replayed jti again", a.Token(agentauthtest.Token{Audience: audience, JTI: "once"}), agentcap.CodeInvalidJWT},
		{"host token", h.Token(agentauthtest.Token{Audience: audience}), agentcap.CodeInvalidJWT},
		{"wrong typ", a.Token(agentauthtest.Token{Audience: audience, Type: "host+jwt"}), agentcap.CodeInvalidJWT},
		{"alg none", a.Token(agentauthtest.Token{Audience: audience, Algorithm: "none"}), agentcap.CodeInvalidJWT},
		{"HS256 key confusion", a.Token(agentauthtest.Token{Audience: audience, Algorithm: "HS256"}), agentcap.CodeInvalidJWT},
		{"ES256 label", a.Token(agentauthtest.Token{Audience: audience, Algorithm: "ES256"}), agentcap.CodeInvalidJWT},
		{"wrong key", a.Token(agentauthtest.Token{Audience: audience, SigningKey: other.Key}), agentcap.CodeInvalidJWT},
		{"embedded jwk", a.Token(agentauthtest.Token{Audience: audience, Header: map[string]any{"jwk": other.PublicJWK()}}), agentcap.CodeInvalidJWT},
		{"wrong audience", a.Token(agentauthtest.Token{Audience: "https://elsewhere.example"}), agentcap.CodeInvalidJWT},
		{"expired", a.Token(agentauthtest.Token{Audience: audience, IssuedAt: t0.Add(-10 * time.Minute)}), agentcap.CodeInvalidJWT},
		{"too long", a.Token(agentauthtest.Token{Audience: audience, Lifetime: time.Hour}), agentcap.CodeInvalidJWT},
		{"no jti", a.Token(agentauthtest.Token{Audience: audience, Claims: map[string]any{"jti": nil}}), agentcap.CodeInvalidJWT},
		{"foreign iss", a.Token(agentauthtest.Token{Audience: audience, Issuer: "hst_other"}), agentcap.CodeInvalidJWT},
		{"unknown agent", other.Token(agentauthtest.Token{Audience: audience}), agentcap.CodeInvalidJWT},
		{"revoked agent", revoked.Token(agentauthtest.Token{Audience: audience}), agentcap.CodeAgentRevoked},
	}
	for _, tc := range broken {
		_, err := v.Session(context.Background(), tc.token)
		switch {
		case tc.code == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.code != "" && agentcap.CodeOf(err) != tc.code:
			t.Errorf("%s: error %v, want code %s", tc.name, err, tc.code)
		}
	}
}

// TestVerifierJWKS serves an agent's key set over loopback HTTP and checks
// that the verifier finds the key by the token's kid.
func TestVerifierJWKS(t *testing.T) {
	h := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Rand: seeded(9), Clock: fixedClock})
	var a *agentauthtest.Agent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(a.JWKS())
	}))
	defer srv.Close()
	a = h.NewAgent(agentauthtest.Agent{ID: "agt_1", JWKSURL: srv.URL + "/jwks"})
	d, err := agentauthtest.NewDirectory([]*agentauthtest.Host{h}, []*agentauthtest.Agent{a})
	if err != nil {
		t.Fatal(err)
	}
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{
		Directory: d, Audiences: []string{audience}, Now: fixedClock,
		KeyFetch: agentauth.FetchPolicy{AllowLoopback: true, Timeout: 5 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Session(context.Background(), a.Token(agentauthtest.Token{Audience: audience})); err != nil {
		t.Errorf("token of a JWKS-keyed agent refused: %v", err)
	}
	if _, err := v.Session(context.Background(), a.Token(agentauthtest.Token{Audience: audience, Header: map[string]any{"kid": nil}})); err == nil {
		t.Error("token without kid accepted for a JWKS-keyed agent")
	}
}
