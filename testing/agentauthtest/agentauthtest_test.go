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

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

func TestRecords(t *testing.T) {
	expires := t0.Add(time.Hour)
	h := agentauthtest.NewHost("hst_1",
		agentauthtest.WithRandom(seeded(4)),
		agentauthtest.WithUser("usr_1"),
		agentauthtest.WithStatus(agentauth.StatusPending),
		agentauthtest.WithDefaultCapabilities("read_balance"))
	delegated := h.NewAgent("agt_d").
		Grant("transfer", map[string]any{"amount": map[string]any{"max": 1000}, "currency": "USD"}).
		Grant("read_balance", nil)
	autonomous := h.NewAgent("agt_a",
		agentauthtest.WithMode(agentauth.ModeAutonomous),
		agentauthtest.WithStatus(agentauth.StatusRevoked),
		agentauthtest.WithJWKSURL("https://agents.example/jwks"),
		agentauthtest.WithGrants(agentauth.Grant{Capability: "transfer", Status: agentauth.StatusActive, ExpiresAt: &expires}),
	).AddGrant(agentauth.Grant{Capability: "close_account", Status: agentauth.StatusDenied})
	otherUser := h.NewAgent("agt_u", agentauthtest.WithUser("usr_2"))

	wantHost := &agentauth.Host{ID: "hst_1", PublicKey: h.PublicJWK(), UserID: "usr_1", Status: agentauth.StatusPending, DefaultCapabilities: []string{"read_balance"}}
	if diff := cmp.Diff(wantHost, h.Record()); diff != "" {
		t.Errorf("host record (-want +got):\n%s", diff)
	}
	tests := []struct {
		agent *agentauthtest.Agent
		want  *agentauth.Agent
	}{
		{delegated, &agentauth.Agent{ID: "agt_d", HostID: "hst_1", UserID: "usr_1", Mode: agentauth.ModeDelegated, Status: agentauth.StatusActive,
			PublicKey: delegated.PublicJWK(), Grants: []agentauth.Grant{
				{Capability: "transfer", Status: agentauth.StatusActive, Constraints: map[string]json.RawMessage{
					"amount": json.RawMessage(`{"max":1000}`), "currency": json.RawMessage(`"USD"`)}},
				{Capability: "read_balance", Status: agentauth.StatusActive},
			}}},
		{autonomous, &agentauth.Agent{ID: "agt_a", HostID: "hst_1", Mode: agentauth.ModeAutonomous, Status: agentauth.StatusRevoked,
			JWKSURL: "https://agents.example/jwks", KID: autonomous.Thumbprint(), Grants: []agentauth.Grant{
				{Capability: "transfer", Status: agentauth.StatusActive, ExpiresAt: &expires},
				{Capability: "close_account", Status: agentauth.StatusDenied},
			}}},
		{otherUser, &agentauth.Agent{ID: "agt_u", HostID: "hst_1", UserID: "usr_2", Mode: agentauth.ModeDelegated, Status: agentauth.StatusActive,
			PublicKey: otherUser.PublicJWK(), Grants: []agentauth.Grant{}}},
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

	jh := agentauthtest.NewHost("hst_j", agentauthtest.WithJWKSURL("https://host.example/jwks"))
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
	agentauthtest.NewHost("h").NewAgent("a").Grant("x", map[string]any{"f": make(chan int)})
}

func TestNewDirectory(t *testing.T) {
	h := agentauthtest.NewHost("hst_1", agentauthtest.WithRandom(seeded(5)))
	a := h.NewAgent("agt_1").Grant("transfer", map[string]any{"amount": map[string]any{"max": 1000}})
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
	orphan := agentauthtest.NewHost("hst_2").NewAgent("agt_2")
	if _, err := agentauthtest.NewDirectory([]*agentauthtest.Host{h}, []*agentauthtest.Agent{orphan}); err == nil {
		t.Error("NewDirectory accepted an agent without its host")
	}
	bad := agentauthtest.NewHost("hst_3", agentauthtest.WithStatus("sleeping"))
	if _, err := agentauthtest.NewDirectory([]*agentauthtest.Host{bad}, nil); err == nil {
		t.Error("NewDirectory accepted a host with an invalid status")
	}
}

func TestWriteDirectoryFile(t *testing.T) {
	expires := t0.Add(90 * time.Minute)
	h := agentauthtest.NewHost("hst_1", agentauthtest.WithRandom(seeded(6)), agentauthtest.WithUser("usr_1"), agentauthtest.WithDefaultCapabilities("read"))
	jh := agentauthtest.NewHost("hst_2", agentauthtest.WithJWKSURL("https://host.example/jwks"))
	a := h.NewAgent("agt_1").
		Grant("transfer", map[string]any{"amount": map[string]any{"min": 0, "max": 1000}, "currency": map[string]any{"in": []string{"USD"}}}).
		AddGrant(agentauth.Grant{Capability: "read", Status: agentauth.StatusPending, ExpiresAt: &expires})
	b := jh.NewAgent("agt_2", agentauthtest.WithMode(agentauth.ModeAutonomous), agentauthtest.WithJWKSURL("https://agents.example/jwks"))

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
	h := agentauthtest.NewHost("hst_1", agentauthtest.WithRandom(seeded(7)), agentauthtest.WithClock(fixedClock))
	a := h.NewAgent("agt_1").Grant("transfer", map[string]any{"amount": map[string]any{"max": 1000}})
	revoked := h.NewAgent("agt_revoked", agentauthtest.WithStatus(agentauth.StatusRevoked))
	d, err := agentauthtest.NewDirectory([]*agentauthtest.Host{h}, []*agentauthtest.Agent{a, revoked})
	if err != nil {
		t.Fatal(err)
	}
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: d, Audiences: []string{audience}, Now: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	other := agentauthtest.NewHost("hst_x", agentauthtest.WithRandom(seeded(8))).NewAgent("agt_x")

	s, err := v.Session(context.Background(), a.Token(audience, agentauthtest.WithCapabilities("transfer")))
	if err != nil {
		t.Fatalf("valid token refused: %v", err)
	}
	if s.Agent.ID != "agt_1" || s.Host.ID != "hst_1" {
		t.Errorf("session for agent %q of host %q", s.Agent.ID, s.Host.ID)
	}
	if diff := cmp.Diff([]string{"transfer"}, s.Claims.Capabilities); diff != "" {
		t.Errorf("capabilities claim (-want +got):\n%s", diff)
	}
	if err := agentauth.AuthorizeCall(s, agentauth.Call{Capability: "transfer", Arguments: map[string]json.RawMessage{"amount": json.RawMessage("10")}}, t0); err != nil {
		t.Errorf("AuthorizeCall: %v", err)
	}
	if _, err := v.Session(context.Background(), a.Token(audience, agentauthtest.WithIssuer(h.Thumbprint()))); err != nil {
		t.Errorf("token with the host thumbprint as iss refused: %v", err)
	}

	broken := []struct {
		name  string
		token string
		code  string
	}{
		{"replayed jti", a.Token(audience, agentauthtest.WithJTI("once")), ""}, // first use passes
		{"replayed jti again", a.Token(audience, agentauthtest.WithJTI("once")), agentauth.CodeInvalidJWT},
		{"host token", h.Token(audience), agentauth.CodeInvalidJWT},
		{"wrong typ", a.Token(audience, agentauthtest.WithType("host+jwt")), agentauth.CodeInvalidJWT},
		{"alg none", a.Token(audience, agentauthtest.WithAlgorithm("none")), agentauth.CodeInvalidJWT},
		{"HS256 key confusion", a.Token(audience, agentauthtest.WithAlgorithm("HS256")), agentauth.CodeInvalidJWT},
		{"ES256 label", a.Token(audience, agentauthtest.WithAlgorithm("ES256")), agentauth.CodeInvalidJWT},
		{"wrong key", a.Token(audience, agentauthtest.WithSigningKey(other.Key)), agentauth.CodeInvalidJWT},
		{"embedded jwk", a.Token(audience, agentauthtest.WithHeader("jwk", json.RawMessage(other.PublicJWK()))), agentauth.CodeInvalidJWT},
		{"wrong audience", a.Token("https://elsewhere.example"), agentauth.CodeInvalidJWT},
		{"expired", a.Token(audience, agentauthtest.WithIssuedAt(t0.Add(-10*time.Minute))), agentauth.CodeInvalidJWT},
		{"too long", a.Token(audience, agentauthtest.WithLifetime(time.Hour)), agentauth.CodeInvalidJWT},
		{"no jti", a.Token(audience, agentauthtest.WithoutClaim("jti")), agentauth.CodeInvalidJWT},
		{"foreign iss", a.Token(audience, agentauthtest.WithIssuer("hst_other")), agentauth.CodeInvalidJWT},
		{"unknown agent", other.Token(audience), agentauth.CodeInvalidJWT},
		{"revoked agent", revoked.Token(audience), agentauth.CodeAgentRevoked},
	}
	for _, tc := range broken {
		_, err := v.Session(context.Background(), tc.token)
		var ae *core.AppError
		switch {
		case tc.code == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.code != "" && (!errors.As(err, &ae) || ae.Code != tc.code):
			t.Errorf("%s: error %v, want code %s", tc.name, err, tc.code)
		}
	}
}

// TestVerifierJWKS serves an agent's key set over loopback HTTP and checks
// that the verifier finds the key by the token's kid.
func TestVerifierJWKS(t *testing.T) {
	h := agentauthtest.NewHost("hst_1", agentauthtest.WithRandom(seeded(9)), agentauthtest.WithClock(fixedClock))
	var a *agentauthtest.Agent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(a.JWKS())
	}))
	defer srv.Close()
	a = h.NewAgent("agt_1", agentauthtest.WithJWKSURL(srv.URL+"/jwks"))
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
	if _, err := v.Session(context.Background(), a.Token(audience)); err != nil {
		t.Errorf("token of a JWKS-keyed agent refused: %v", err)
	}
	if _, err := v.Session(context.Background(), a.Token(audience, agentauthtest.WithoutHeader("kid"))); err == nil {
		t.Error("token without kid accepted for a JWKS-keyed agent")
	}
}
