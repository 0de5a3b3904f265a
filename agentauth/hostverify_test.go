package agentauth_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// hostWorld is a directory of hosts for host JWT tests, and a location
// that accepts host JWTs on list and describe.
type hostWorld struct {
	alice, pending, revoked, unlinked, stranger *agentauthtest.Host
	verifier                                    *agentauth.HostVerifier
	handler                                     *httpx.Handler
}

func newHostWorld(t *testing.T) *hostWorld {
	t.Helper()
	w := &hostWorld{
		alice:    htHost(1, agentauthtest.Host{ID: "hst_alice", UserID: "user_alice", DefaultCapabilities: []string{"pay"}}),
		pending:  htHost(3, agentauthtest.Host{ID: "hst_pending", UserID: "user_p", Status: agentcap.StatusPending}),
		revoked:  htHost(2, agentauthtest.Host{ID: "hst_revoked", UserID: "user_r", Status: agentcap.StatusRevoked}),
		unlinked: htHost(4, agentauthtest.Host{ID: "hst_robots"}),
		stranger: htHost(5, agentauthtest.Host{ID: "hst_stranger"}),
	}
	dir, err := agentauthtest.NewDirectory([]*agentauthtest.Host{w.alice, w.pending, w.revoked, w.unlinked}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.verifier, err = agentauth.NewHostVerifier(agentauth.HostVerifierConfig{
		Directory: dir,
		Audiences: []string{htIssuer},
		Now:       htClock,
	})
	if err != nil {
		t.Fatal(err)
	}
	agents, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{htAudience, htIssuer}, Now: htClock})
	if err != nil {
		t.Fatal(err)
	}
	cfg := htConfig(agents, nil)
	cfg.Hosts = w.verifier
	w.handler = htHandler(t, core.MustExecutor(core.MustRegistry(htPay, htPublic, hostAware), htContext, core.Config{}), cfg)
	return w
}

// hostAware is visible to callers acting for a user, agents and hosts
// alike: the application's visibility reads the identity's user, which
// for a host is its linked user.
var hostAware = core.MustDefine("accounts", "Acts for the linked user.",
	func(context.Context, htApp, core.NoInput) (emptyOut, error) { return emptyOut{OK: true}, nil },
	core.WithVisibility(func(_ context.Context, id *auth.Identity, _ bool) bool { return id != nil && id.UserID != "" }))

// TestHostVerifier runs the host JWT checks of protocol §4.5.1 against a
// directory, in the order VerifyHost documents.
func TestHostVerifier(t *testing.T) {
	w := newHostWorld(t)
	other := ed25519.NewKeyFromSeed(make([]byte, 32))
	replayed := w.alice.Token(agentauthtest.Token{Audience: htIssuer})
	if _, err := w.verifier.VerifyHost(context.Background(), replayed); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		token    string
		status   int
		code     agentcap.Code
		wantUser string
	}{
		{"by key thumbprint", w.alice.Token(agentauthtest.Token{Audience: htIssuer}), 200, "", "user_alice"},
		{"by host id", w.alice.Token(agentauthtest.Token{Audience: htIssuer, Issuer: "hst_alice"}), 200, "", "user_alice"},
		{"aud array naming the issuer", w.alice.Token(agentauthtest.Token{Audience: htIssuer, Claims: map[string]any{"aud": []string{"x", htIssuer}}}), 200, "", "user_alice"},
		{"pending host without its user", w.pending.Token(agentauthtest.Token{Audience: htIssuer}), 200, "", ""},
		{"unlinked host", w.unlinked.Token(agentauthtest.Token{Audience: htIssuer}), 200, "", ""},
		{"revoked host", w.revoked.Token(agentauthtest.Token{Audience: htIssuer}), 403, agentcap.CodeHostRevoked, ""},
		{"unknown host", w.stranger.Token(agentauthtest.Token{Audience: htIssuer}), 401, agentcap.CodeInvalidJWT, ""},
		{"agent typ", w.alice.Token(agentauthtest.Token{Audience: htIssuer, Type: "agent+jwt"}), 401, agentcap.CodeInvalidJWT, ""},
		{"alg none", w.alice.Token(agentauthtest.Token{Audience: htIssuer, Algorithm: "none"}), 401, agentcap.CodeInvalidJWT, ""},
		{"jwk header", w.alice.Token(agentauthtest.Token{Audience: htIssuer, Header: map[string]any{"jwk": json.RawMessage(w.alice.PublicJWK())}}), 401, agentcap.CodeInvalidJWT, ""},
		{"other audience", w.alice.Token(agentauthtest.Token{Audience: "https://elsewhere.test"}), 401, agentcap.CodeInvalidJWT, ""},
		{"location as audience", w.alice.Token(agentauthtest.Token{Audience: htAudience}), 401, agentcap.CodeInvalidJWT, ""},
		{"iss of another host", w.alice.Token(agentauthtest.Token{Audience: htIssuer, Issuer: w.unlinked.Thumbprint()}), 401, agentcap.CodeInvalidJWT, ""},
		{"signed by another key", w.alice.Token(agentauthtest.Token{Audience: htIssuer, SigningKey: other}), 401, agentcap.CodeInvalidJWT, ""},
		{"expired", w.alice.Token(agentauthtest.Token{Audience: htIssuer, IssuedAt: htNow.Add(-2 * time.Minute)}), 401, agentcap.CodeInvalidJWT, ""},
		{"issued in the future", w.alice.Token(agentauthtest.Token{Audience: htIssuer, IssuedAt: htNow.Add(time.Minute)}), 401, agentcap.CodeInvalidJWT, ""},
		{"lifetime too long", w.alice.Token(agentauthtest.Token{Audience: htIssuer, Lifetime: time.Hour}), 401, agentcap.CodeInvalidJWT, ""},
		{"no jti", w.alice.Token(agentauthtest.Token{Audience: htIssuer, Claims: map[string]any{"jti": nil}}), 401, agentcap.CodeInvalidJWT, ""},
		{"no iss", w.alice.Token(agentauthtest.Token{Audience: htIssuer, Claims: map[string]any{"iss": nil}}), 401, agentcap.CodeInvalidJWT, ""},
		{"replayed", replayed, 401, agentcap.CodeInvalidJWT, ""},
		{"garbage", "a.b.c", 401, agentcap.CodeInvalidJWT, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := w.verifier.VerifyHost(context.Background(), tt.token)
			if tt.status == 200 {
				if err != nil {
					t.Fatalf("VerifyHost: %v", err)
				}
				if h.UserID != tt.wantUser {
					t.Errorf("user %q, want %q", h.UserID, tt.wantUser)
				}
				return
			}
			var ae *agentcap.Error
			if !errors.As(err, &ae) || ae.HTTPStatus() != tt.status || ae.Code != tt.code {
				t.Fatalf("VerifyHost: %v, want %d %s", err, tt.status, tt.code)
			}
		})
	}
}

// hostDirDown is a directory whose lookups fail, as a database that is
// down does.
type hostDirDown struct{ agentauth.Directory }

func (hostDirDown) Host(context.Context, string) (*agentauth.Host, error) {
	return nil, errors.New("db down")
}

// replayDown is a replay cache that cannot be reached.
type replayDown struct{}

func (replayDown) CheckAndSet(context.Context, string, time.Duration) (bool, error) {
	return false, errors.New("redis down")
}

// TestHostVerifierStoresDown refuses host JWTs whose host or jti cannot
// be checked with 503 temporarily_unavailable and a Retry-After of a
// second: never let through, and told apart from an internal error.
func TestHostVerifierStoresDown(t *testing.T) {
	host := htHost(1, agentauthtest.Host{ID: "hst_alice", UserID: "user_alice"})
	dir, err := agentauthtest.NewDirectory([]*agentauthtest.Host{host}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     agentauth.HostVerifierConfig
		message string
	}{
		{"directory down", agentauth.HostVerifierConfig{Directory: hostDirDown{dir}}, "the directory of agents and hosts cannot be read now; retry later"},
		{"replay cache down", agentauth.HostVerifierConfig{Directory: dir, Replay: replayDown{}}, "used tokens cannot be checked now; retry later"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Audiences, tt.cfg.Now = []string{htIssuer}, htClock
			v, err := agentauth.NewHostVerifier(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			h, err := v.VerifyHost(context.Background(), host.Token(agentauthtest.Token{Audience: htIssuer, Issuer: "hst_alice"}))
			var ae *agentcap.Error
			if h != nil || !errors.As(err, &ae) {
				t.Fatalf("VerifyHost: %v, %v", h, err)
			}
			got := []any{ae.HTTPStatus(), ae.Code, ae.Message, ae.RetryAfter, ae.Fields["retry_after"], ae.Unwrap() != nil}
			want := []any{503, agentcap.CodeTemporarilyUnavailable, tt.message, time.Second, 1, true}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHostJWTOnListAndDescribe checks the host JWT mode of protocol §5.2
// and §5.2.1 at a location trusting a directory: a linked host sees the
// capabilities available to its user, with no grant_status (only agent
// JWTs get one); a host without a user sees what an anonymous caller
// sees; execute never accepts a host JWT.
func TestHostJWTOnListAndDescribe(t *testing.T) {
	w := newHostWorld(t)
	list := func(token string) (int, []map[string]any, string) {
		r := call(t, w.handler, http.MethodGet, "/capability/list", token, "")
		var page struct {
			Capabilities []map[string]any `json:"capabilities"`
		}
		_ = json.Unmarshal([]byte(r.Body), &page)
		return r.Status, page.Capabilities, r.Body
	}
	names := func(caps []map[string]any) []string {
		var out []string
		for _, c := range caps {
			out = append(out, c["name"].(string))
			if _, ok := c["grant_status"]; ok {
				t.Errorf("%s carries grant_status for a host caller", c["name"])
			}
		}
		return out
	}
	status, caps, body := list(w.alice.Token(agentauthtest.Token{Audience: htIssuer}))
	if status != 200 {
		t.Fatalf("list with alice's host JWT: %d %s", status, body)
	}
	if diff := cmp.Diff([]string{"accounts", "public_info"}, names(caps)); diff != "" {
		t.Errorf("alice's host sees (-want +got):\n%s", diff)
	}
	status, caps, body = list(w.unlinked.Token(agentauthtest.Token{Audience: htIssuer}))
	if status != 200 {
		t.Fatalf("list with an unlinked host's JWT: %d %s", status, body)
	}
	if diff := cmp.Diff([]string{"public_info"}, names(caps)); diff != "" {
		t.Errorf("an unlinked host sees (-want +got):\n%s", diff)
	}
	// A pending host acts for nobody yet, whoever it is linked to.
	status, caps, body = list(w.pending.Token(agentauthtest.Token{Audience: htIssuer}))
	if status != 200 {
		t.Fatalf("list with a pending host's JWT: %d %s", status, body)
	}
	if diff := cmp.Diff([]string{"public_info"}, names(caps)); diff != "" {
		t.Errorf("a pending host sees (-want +got):\n%s", diff)
	}
	if status, _, body = list(w.revoked.Token(agentauthtest.Token{Audience: htIssuer})); status != 403 {
		t.Errorf("revoked host: %d %s", status, body)
	}
	if status, _, body = list(w.stranger.Token(agentauthtest.Token{Audience: htIssuer})); status != 401 {
		t.Errorf("unknown host: %d %s", status, body)
	}

	d := call(t, w.handler, http.MethodGet, "/capability/describe?name=accounts", w.alice.Token(agentauthtest.Token{Audience: htIssuer}), "")
	var desc map[string]any
	if err := json.Unmarshal([]byte(d.Body), &desc); err != nil || d.Status != 200 || desc["name"] != "accounts" || desc["grant_status"] != nil {
		t.Errorf("describe with a host JWT: %d %s", d.Status, d.Body)
	}
	if d := call(t, w.handler, http.MethodGet, "/capability/describe?name=accounts", w.unlinked.Token(agentauthtest.Token{Audience: htIssuer}), ""); d.Status != 404 {
		t.Errorf("describe hidden from an unlinked host: %d %s", d.Status, d.Body)
	}

	ex := call(t, w.handler, http.MethodPost, "/capability/execute", w.alice.Token(agentauthtest.Token{Audience: htIssuer}), `{"capability":"public_info"}`)
	if ex.Status != 401 || !jsonHasCode(ex.Body, agentcap.CodeInvalidJWT) {
		t.Errorf("execute with a host JWT: %d %s", ex.Status, ex.Body)
	}
}

// TestHostJWTWithoutHostSource keeps the old answer where no host source
// is configured: a host JWT is not an agent JWT.
func TestHostJWTWithoutHostSource(t *testing.T) {
	w := newHTWorld(t)
	host := htHost(1, agentauthtest.Host{ID: "hst_alice", UserID: "user_alice"})
	r := call(t, w.handler, http.MethodGet, "/capability/list", host.Token(agentauthtest.Token{Audience: htIssuer}), "")
	if r.Status != 401 || !jsonHasCode(r.Body, agentcap.CodeInvalidJWT) {
		t.Errorf("%d %s", r.Status, r.Body)
	}
}

func TestTokenType(t *testing.T) {
	host := htHost(1, agentauthtest.Host{ID: "hst_alice"})
	for _, tt := range []struct{ token, want string }{
		{host.Token(agentauthtest.Token{Audience: htIssuer}), agentcap.TypeHostJWT},
		{host.NewAgent(agentauthtest.Agent{ID: "agt"}).Token(agentauthtest.Token{Audience: htAudience}), agentcap.TypeAgentJWT},
		{"not a token", ""},
		{"%%%.x.y", ""},
	} {
		if got := agentauth.TokenType(tt.token); got != tt.want {
			t.Errorf("tokenType(%.20s) = %q, want %q", tt.token, got, tt.want)
		}
	}
}

func jsonHasCode(body string, code agentcap.Code) bool {
	var m map[string]any
	return json.Unmarshal([]byte(body), &m) == nil && m["error"] == string(code)
}

type hostCall struct {
	Status int
	Body   string
}

// call sends one request with a bearer token to h.
func call(t *testing.T, h http.Handler, method, path, token, body string) hostCall {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return hostCall{rec.Code, rec.Body.String()}
}
