package agentauth_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gofiber/fiber/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/labstack/echo/v4"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/echox"
	"github.com/agentcap/agentcap/fiberx"
	"github.com/agentcap/agentcap/ginx"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// The test location.
const (
	htIssuer    = "https://bank.test"
	htAudience  = htIssuer + "/capability/execute"
	htChallenge = `AgentAuth discovery="https://bank.test/.well-known/agent-configuration"`
	// htSecret appears in hidden causes only; no answer may contain it.
	htSecret = "postgres://ledger:s3cret@ledger-db.internal:5432/bank"
)

var htNow = time.Unix(1767268800, 0).UTC()

func htClock() time.Time { return htNow }

// htApp is the application context of the test capabilities: the user
// the caller acts for.
type htApp struct{ user string }

// upperCode decodes any letter case and holds upper case, the kind of
// normalisation that makes a constrained argument change when decoded.
type upperCode string

func (u *upperCode) UnmarshalText(b []byte) error {
	*u = upperCode(strings.ToUpper(string(b)))
	return nil
}

type payIn struct {
	To       string    `json:"to" minLength:"1"`
	Amount   float64   `json:"amount" exclusiveMinimum:"0"`
	Currency upperCode `json:"currency,omitempty"`
}

type payOut struct {
	To     string  `json:"to"`
	Amount float64 `json:"amount"`
	User   string  `json:"user"`
}

type emptyOut struct {
	OK bool `json:"ok"`
}

// Codes of the test application, answered with the status of the kit
// code each is declared like.
var (
	codeInsufficientFunds = agentcap.NewCode("insufficient_funds", agentcap.CodeConflict)
	codeUserSuspended     = agentcap.NewCode("user_suspended", agentcap.CodeUnauthorized)
)

// agentsOnly admits the identities of agents: not anonymous callers, not
// host JWT callers.
func agentsOnly(_ context.Context, id *auth.Identity, _ bool) bool {
	return agentauth.SessionOf(id) != nil
}

var (
	htPay = core.MustDefine("pay", "Pay someone.",
		func(_ context.Context, a htApp, in payIn) (payOut, error) {
			if in.Amount > 1000 {
				return payOut{}, agentcap.NewError(codeInsufficientFunds, "not enough money").With("available", 1000)
			}
			return payOut{To: in.To, Amount: in.Amount, User: a.user}, nil
		},
		core.WithRequiredConstraints("to"), core.WithApproval(core.ApprovalWebAuthn), core.WithRisk(core.RiskHigh),
		core.WithVisibility(agentsOnly))

	htPublic = core.MustDefine("public_info", "Anyone may see this.",
		func(context.Context, htApp, core.NoInput) (emptyOut, error) { return emptyOut{OK: true}, nil })

	// htNeedsUser is listed to agents acting for a user, and visible to
	// every agent executing it, so that Config.Authorize can refuse an
	// autonomous agent in precise words.
	htNeedsUser = core.MustDefine("needs_user", "Acts for a user.",
		func(context.Context, htApp, core.NoInput) (emptyOut, error) { return emptyOut{OK: true}, nil },
		core.WithVisibility(func(_ context.Context, id *auth.Identity, executing bool) bool {
			return agentauth.SessionOf(id) != nil && (id.UserID != "" || executing)
		}))

	htBoom = core.MustDefine("boom", "Fails inside.",
		func(context.Context, htApp, core.NoInput) (emptyOut, error) {
			return emptyOut{}, errors.New("ledger: dial " + htSecret + ": connection refused")
		},
		core.WithVisibility(agentsOnly))

	htRefuse = core.MustDefine("refuse_plain", "Refused by the application with a plain error.",
		func(context.Context, htApp, core.NoInput) (emptyOut, error) { return emptyOut{OK: true}, nil },
		core.WithVisibility(agentsOnly))
)

// htContext is the application's context function: the user the caller
// acts for, read from the identity. Two agents stand for an application
// whose own records refuse the user, in its own words or by failing.
func htContext(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (htApp, error) {
	if id == nil {
		return htApp{}, nil
	}
	switch id.AgentID {
	case "agt_context_fails":
		return htApp{}, errors.New("loading the user: " + htSecret)
	case "agt_suspended":
		return htApp{}, agentcap.NewError(codeUserSuspended, "the user is suspended")
	}
	return htApp{user: id.UserID}, nil
}

func htExecutor(t testing.TB, hooks ...core.Hook) *core.Executor {
	t.Helper()
	reg, err := core.NewRegistry(htPay, htPublic, htNeedsUser, htBoom, htRefuse)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := core.NewExecutor(reg, htContext, core.Config{Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

// htConfig is the application's Agent Auth wiring: a refusal that does
// not depend on grants, and anonymous listings.
func htConfig(sessions agentauth.SessionSource, logger *slog.Logger) agentauth.Config {
	return agentauth.Config{
		Sessions: sessions,
		Authorize: func(_ context.Context, id *auth.Identity, call *auth.Call) error {
			switch call.Capability {
			case "needs_user":
				if id.UserID == "" {
					return agentcap.NewError(agentcap.CodeUnauthorized, "this capability acts for a user")
				}
			case "refuse_plain":
				return errors.New("policy says no: " + htSecret)
			}
			return nil
		},
		Issuer:                  htIssuer,
		AllowAnonymousDiscovery: true,
		Now:                     htClock,
		Logger:                  logger,
	}
}

// htHandler serves exec through httpx, verified by agentauth.New(cfg);
// both log to cfg.Logger.
func htHandler(t testing.TB, exec core.Source, cfg agentauth.Config) *httpx.Handler {
	t.Helper()
	v, err := agentauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpx.New(exec, httpx.Config{Verifier: v, Logger: cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// htWorld is a location with its directory of test agents.
type htWorld struct {
	handler *httpx.Handler
	agents  map[string]*agentauthtest.Agent
	logs    *bytes.Buffer
	replays *countingReplay
}

// countingReplay counts the token ids a verifier records.
type countingReplay struct {
	inner agentauth.ReplayCache
	calls atomic.Int64
}

func (c *countingReplay) CheckAndSet(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	c.calls.Add(1)
	return c.inner.CheckAndSet(ctx, key, ttl)
}

// htHost makes a host of h whose keys come from seed and whose tokens are
// minted at htNow.
func htHost(seed byte, h agentauthtest.Host) *agentauthtest.Host {
	h.Rand = rand.NewChaCha8([32]byte{seed})
	h.Clock = htClock
	return agentauthtest.NewHost(h)
}

func newHTWorld(t testing.TB) *htWorld {
	t.Helper()
	alice := htHost(1, agentauthtest.Host{ID: "hst_alice", UserID: "user_alice", DefaultCapabilities: []string{"pay", "public_info"}})
	revokedHost := htHost(2, agentauthtest.Host{ID: "hst_revoked", UserID: "user_r", Status: agentcap.StatusRevoked})
	pendingHost := htHost(3, agentauthtest.Host{ID: "hst_pending", UserID: "user_p", Status: agentcap.StatusPending})
	robots := htHost(4, agentauthtest.Host{ID: "hst_robots"})

	expired := htNow.Add(-time.Hour)
	agents := []*agentauthtest.Agent{
		alice.NewAgent(agentauthtest.Agent{ID: "agt_alice"}).
			Grant("pay", map[string]any{"to": map[string]any{"in": []string{"bob", "carol"}}, "amount": map[string]any{"max": 500}}).
			Grant("public_info", nil).Grant("needs_user", nil).Grant("boom", nil).Grant("refuse_plain", nil),
		// Two grants for one capability: the call passes when one is satisfied.
		alice.NewAgent(agentauthtest.Agent{ID: "agt_two_grants"}).
			Grant("pay", map[string]any{"to": "bob", "amount": map[string]any{"max": 10}}).
			Grant("pay", map[string]any{"to": "carol", "amount": map[string]any{"max": 900}}),
		alice.NewAgent(agentauthtest.Agent{ID: "agt_unconstrained"}).Grant("pay", nil),
		alice.NewAgent(agentauthtest.Agent{ID: "agt_bad_operator"}).Grant("pay", map[string]any{"to": "bob", "amount": map[string]any{"between": []int{1, 9}}}),
		alice.NewAgent(agentauthtest.Agent{ID: "agt_currency"}).Grant("pay", map[string]any{"to": "bob", "currency": map[string]any{"not_in": []string{"GBP"}}}),
		alice.NewAgent(agentauthtest.Agent{ID: "agt_no_grants"}),
		alice.NewAgent(agentauthtest.Agent{ID: "agt_stale_grants", Grants: []agentauth.Grant{
			{Capability: "pay", Status: agentcap.StatusActive, ExpiresAt: &expired,
				Constraints: map[string]json.RawMessage{"to": json.RawMessage(`"bob"`)}},
			{Capability: "public_info", Status: agentcap.StatusPending},
		}}),
		alice.NewAgent(agentauthtest.Agent{ID: "agt_revoked", Status: agentcap.StatusRevoked}).Grant("public_info", nil),
		alice.NewAgent(agentauthtest.Agent{ID: "agt_expired", Status: agentcap.StatusExpired}).Grant("public_info", nil),
		alice.NewAgent(agentauthtest.Agent{ID: "agt_pending", Status: agentcap.StatusPending}).Grant("public_info", nil),
		alice.NewAgent(agentauthtest.Agent{ID: "agt_rejected", Status: agentcap.StatusRejected}).Grant("public_info", nil),
		alice.NewAgent(agentauthtest.Agent{ID: "agt_claimed", Status: agentcap.StatusClaimed}).Grant("public_info", nil),
		alice.NewAgent(agentauthtest.Agent{ID: "agt_context_fails"}).Grant("public_info", nil),
		alice.NewAgent(agentauthtest.Agent{ID: "agt_suspended"}).Grant("public_info", nil),
		revokedHost.NewAgent(agentauthtest.Agent{ID: "agt_of_revoked_host"}).Grant("public_info", nil),
		pendingHost.NewAgent(agentauthtest.Agent{ID: "agt_of_pending_host"}).Grant("public_info", nil),
		robots.NewAgent(agentauthtest.Agent{ID: "agt_robot", Mode: agentcap.ModeAutonomous}).
			Grant("public_info", nil).Grant("needs_user", nil),
		// An autonomous agent of a host linked to a user still acts for
		// nobody, and holds no grant for needs_user.
		alice.NewAgent(agentauthtest.Agent{ID: "agt_alice_robot", Mode: agentcap.ModeAutonomous}).Grant("public_info", nil),
	}
	dir, err := agentauthtest.NewDirectory([]*agentauthtest.Host{alice, revokedHost, pendingHost, robots}, agents)
	if err != nil {
		t.Fatal(err)
	}
	w := &htWorld{agents: map[string]*agentauthtest.Agent{}, logs: &bytes.Buffer{}}
	for _, a := range agents {
		w.agents[a.ID] = a
	}
	w.replays = &countingReplay{inner: agentauth.NewMemoryReplayCache(0).WithClock(htClock)}
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{
		Directory: dir,
		Audiences: []string{htAudience, htIssuer},
		Replay:    w.replays,
		Now:       htClock,
	})
	if err != nil {
		t.Fatal(err)
	}
	w.handler = htHandler(t, htExecutor(t), htConfig(v, slog.New(slog.NewTextHandler(w.logs, nil))))
	return w
}

// token mints a token of the named agent for the test location.
func (w *htWorld) token(t testing.TB, agent string) string {
	t.Helper()
	return w.tokenWith(t, agent, agentauthtest.Token{})
}

// tokenWith mints the token tok describes, of the named agent, for the
// test location unless tok names another audience.
func (w *htWorld) tokenWith(t testing.TB, agent string, tok agentauthtest.Token) string {
	t.Helper()
	a, ok := w.agents[agent]
	if !ok {
		t.Fatalf("no agent %q", agent)
	}
	if tok.Audience == "" {
		tok.Audience = htAudience
	}
	return a.Token(tok)
}

// htAnswer is what the tests compare: status, code and the members asked
// for.
type htAnswer struct {
	Status    int
	Code      string
	Challenge string
	Members   map[string]any
}

// serve sends one request to h and decodes the answer.
func serve(t testing.TB, h http.Handler, method, path, authorization, body string) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("%s %s: body is not a JSON object: %v: %s", method, path, err, rec.Body)
	}
	return rec, m
}

func answerOf(rec *httptest.ResponseRecorder, m map[string]any, members []string) htAnswer {
	a := htAnswer{Status: rec.Code, Challenge: rec.Header().Get("WWW-Authenticate")}
	if c, ok := m["error"].(string); ok {
		a.Code = c
	}
	for _, k := range members {
		if v, ok := m[k]; ok {
			if k == "errors" {
				// Schema messages belong to another package; the paths
				// are what an agent acts on.
				v = errorPaths(v)
			}
			if a.Members == nil {
				a.Members = map[string]any{}
			}
			a.Members[k] = v
		}
	}
	return a
}

func errorPaths(v any) any {
	list, _ := v.([]any)
	paths := make([]any, 0, len(list))
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			paths = append(paths, m["path"])
		}
	}
	return paths
}

func execBody(capability, args string) string {
	if args == "" {
		return `{"capability":"` + capability + `"}`
	}
	return `{"capability":"` + capability + `","arguments":` + args + `}`
}

// jsonOf decodes JSON text for expectations.
func jsonOf(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestHTTPExecuteErrorCodes(t *testing.T) {
	w := newHTWorld(t)
	otherKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))

	type tc struct {
		name string
		// agent signs the bearer token tok describes; empty agent sends
		// auth as the Authorization header instead.
		agent   string
		tok     agentauthtest.Token
		auth    string
		body    string
		members []string
		want    htAnswer
	}
	bearer := func(agent string, tok agentauthtest.Token) string {
		return "Bearer " + w.tokenWith(t, agent, tok)
	}
	payBob := execBody("pay", `{"to":"bob","amount":20}`)
	cases := []tc{
		{name: "ok", agent: "agt_alice", body: payBob, members: []string{"data"},
			want: htAnswer{Status: 200, Members: map[string]any{"data": jsonOf(t, `{"to":"bob","amount":20,"user":"user_alice"}`)}}},
		{name: "ok with the issuer as audience", auth: bearer("agt_alice", agentauthtest.Token{Claims: map[string]any{"aud": htIssuer}}), body: payBob,
			want: htAnswer{Status: 200}},
		{name: "ok with one of several grants", agent: "agt_two_grants", body: execBody("pay", `{"to":"carol","amount":800}`),
			want: htAnswer{Status: 200}},

		// 400 invalid_request
		{name: "malformed JSON", agent: "agt_alice", body: `{"capability":`,
			want: htAnswer{Status: 400, Code: "invalid_request"}},
		{name: "missing capability", agent: "agt_alice", body: `{"arguments":{}}`, members: []string{"errors"},
			want: htAnswer{Status: 400, Code: "invalid_request", Members: map[string]any{
				"errors": []any{"/capability"}}}},
		{name: "arguments fail the schema", agent: "agt_alice", body: execBody("pay", `{"to":"bob","amount":-1,"Amount":2}`), members: []string{"errors"},
			want: htAnswer{Status: 400, Code: "invalid_request", Members: map[string]any{
				"errors": []any{"/Amount", "/amount"}}}},
		{name: "constrained field changed by decoding", agent: "agt_currency", body: execBody("pay", `{"to":"bob","amount":5,"currency":"usd"}`),
			members: []string{"transformed_fields"},
			want:    htAnswer{Status: 400, Code: "invalid_request", Members: map[string]any{"transformed_fields": []any{"currency"}}}},
		{name: "constrained field already normalised", agent: "agt_currency", body: execBody("pay", `{"to":"bob","amount":5,"currency":"USD"}`),
			want: htAnswer{Status: 200}},

		// 400 unknown_constraint_operator
		{name: "unknown constraint operator", agent: "agt_bad_operator", body: payBob, members: []string{"unknown_operators", "operators"},
			want: htAnswer{Status: 400, Code: "unknown_constraint_operator", Members: map[string]any{
				"unknown_operators": []any{"between"}, "operators": []any{"between"}}}},

		// 401 authentication_required
		{name: "no credentials", body: payBob,
			want: htAnswer{Status: 401, Code: "authentication_required", Challenge: htChallenge}},
		{name: "another scheme", auth: "Basic YWxpY2U6c2VjcmV0", body: payBob,
			want: htAnswer{Status: 401, Code: "authentication_required", Challenge: htChallenge}},

		// 401 invalid_jwt
		{name: "bearer without a token", auth: "Bearer", body: payBob,
			want: htAnswer{Status: 401, Code: "invalid_jwt", Challenge: htChallenge}},
		{name: "bearer with two tokens", auth: "Bearer a.b.c d.e.f", body: payBob,
			want: htAnswer{Status: 401, Code: "invalid_jwt", Challenge: htChallenge}},
		{name: "not a JWT", auth: "Bearer not-a-jwt", body: payBob,
			want: htAnswer{Status: 401, Code: "invalid_jwt", Challenge: htChallenge}},
		{name: "bad signature", agent: "agt_alice", tok: agentauthtest.Token{SigningKey: otherKey}, body: payBob,
			want: htAnswer{Status: 401, Code: "invalid_jwt", Challenge: htChallenge}},
		{name: "expired", agent: "agt_alice", tok: agentauthtest.Token{IssuedAt: htNow.Add(-5 * time.Minute)}, body: payBob,
			want: htAnswer{Status: 401, Code: "invalid_jwt", Challenge: htChallenge}},
		{name: "wrong audience", agent: "agt_alice", tok: agentauthtest.Token{Claims: map[string]any{"aud": "https://other.test/capability/execute"}}, body: payBob,
			want: htAnswer{Status: 401, Code: "invalid_jwt", Challenge: htChallenge}},
		{name: "host JWT", auth: "Bearer " + w.agents["agt_alice"].Host.Token(agentauthtest.Token{Audience: htIssuer}), body: payBob,
			want: htAnswer{Status: 401, Code: "invalid_jwt", Challenge: htChallenge}},
		{name: "agent JWT typed host+jwt", agent: "agt_alice", tok: agentauthtest.Token{Type: "host+jwt"}, body: payBob,
			want: htAnswer{Status: 401, Code: "invalid_jwt", Challenge: htChallenge}},
		{name: "alg none", agent: "agt_alice", tok: agentauthtest.Token{Algorithm: "none"}, body: payBob,
			want: htAnswer{Status: 401, Code: "invalid_jwt", Challenge: htChallenge}},
		{name: "HMAC keyed with the public key", agent: "agt_alice", tok: agentauthtest.Token{Algorithm: "HS256"}, body: payBob,
			want: htAnswer{Status: 401, Code: "invalid_jwt", Challenge: htChallenge}},

		// 403 capability_not_granted
		{name: "no grant", agent: "agt_no_grants", body: payBob,
			want: htAnswer{Status: 403, Code: "capability_not_granted"}},
		{name: "expired and pending grants", agent: "agt_stale_grants", body: payBob,
			want: htAnswer{Status: 403, Code: "capability_not_granted"}},
		{name: "grant without the required constraints", agent: "agt_unconstrained", body: payBob, members: []string{"missing_constraints"},
			want: htAnswer{Status: 403, Code: "capability_not_granted", Members: map[string]any{"missing_constraints": []any{"to"}}}},
		{name: "capabilities claim excludes it, host defaults notwithstanding", agent: "agt_alice",
			tok: agentauthtest.Token{Capabilities: []string{"public_info"}}, body: payBob,
			want: htAnswer{Status: 403, Code: "capability_not_granted"}},
		{name: "empty capabilities claim", agent: "agt_alice",
			tok: agentauthtest.Token{Capabilities: []string{}}, body: execBody("public_info", ""),
			want: htAnswer{Status: 403, Code: "capability_not_granted"}},
		{name: "capabilities claim includes it", agent: "agt_alice",
			tok: agentauthtest.Token{Capabilities: []string{"pay"}}, body: payBob,
			want: htAnswer{Status: 200}},

		// 403 constraint_violated
		{name: "constraints violated", agent: "agt_alice", body: execBody("pay", `{"to":"mallory","amount":501}`), members: []string{"violations"},
			want: htAnswer{Status: 403, Code: "constraint_violated", Members: map[string]any{"violations": jsonOf(t, `[
				{"field":"amount","constraint":{"max":500},"actual":501},
				{"field":"to","constraint":{"in":["bob","carol"]},"actual":"mallory"}]`)}}},
		{name: "no grant of several satisfied", agent: "agt_two_grants", body: execBody("pay", `{"to":"bob","amount":11}`), members: []string{"violations"},
			want: htAnswer{Status: 403, Code: "constraint_violated", Members: map[string]any{"violations": jsonOf(t, `[
				{"field":"amount","constraint":{"max":10},"actual":11}]`)}}},

		// 403 agent and host states
		{name: "agent revoked", agent: "agt_revoked", body: execBody("public_info", ""), want: htAnswer{Status: 403, Code: "agent_revoked"}},
		{name: "agent expired", agent: "agt_expired", body: execBody("public_info", ""), want: htAnswer{Status: 403, Code: "agent_expired"}},
		{name: "agent pending", agent: "agt_pending", body: execBody("public_info", ""), want: htAnswer{Status: 403, Code: "agent_pending"}},
		{name: "agent rejected", agent: "agt_rejected", body: execBody("public_info", ""), want: htAnswer{Status: 403, Code: "agent_rejected"}},
		{name: "agent claimed", agent: "agt_claimed", body: execBody("public_info", ""), want: htAnswer{Status: 403, Code: "agent_claimed"}},
		{name: "host revoked", agent: "agt_of_revoked_host", body: execBody("public_info", ""), want: htAnswer{Status: 403, Code: "host_revoked"}},
		{name: "host pending", agent: "agt_of_pending_host", body: execBody("public_info", ""), want: htAnswer{Status: 403, Code: "host_pending"}},

		// 403 unauthorized and application refusals
		{name: "application refuses an agent without a user", agent: "agt_robot", body: execBody("needs_user", ""),
			want: htAnswer{Status: 403, Code: "unauthorized"}},
		{name: "application refuses with a plain error", agent: "agt_alice", body: execBody("refuse_plain", ""),
			want: htAnswer{Status: 403, Code: "unauthorized"}},
		{name: "application refusal wins over capability_not_granted", agent: "agt_alice_robot", body: execBody("needs_user", ""),
			members: []string{"message"},
			want:    htAnswer{Status: 403, Code: "unauthorized", Members: map[string]any{"message": "this capability acts for a user"}}},
		{name: "application context refuses in its own words", agent: "agt_suspended", body: execBody("public_info", ""),
			want: htAnswer{Status: 403, Code: "user_suspended"}},
		// 404 capability_not_found
		{name: "unknown capability", agent: "agt_alice", body: execBody("no_such_thing", ""),
			want: htAnswer{Status: 404, Code: "capability_not_found"}},

		// 500 internal_error
		{name: "capability fails inside", agent: "agt_alice", body: execBody("boom", ""),
			want: htAnswer{Status: 500, Code: "internal_error"}},
		{name: "application context fails", agent: "agt_context_fails", body: execBody("public_info", ""),
			want: htAnswer{Status: 500, Code: "internal_error"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			auth := c.auth
			if c.agent != "" {
				auth = bearer(c.agent, c.tok)
			}
			rec, m := serve(t, w.handler, http.MethodPost, "/capability/execute", auth, c.body)
			if diff := cmp.Diff(c.want, answerOf(rec, m, c.members)); diff != "" {
				t.Errorf("answer (-want +got):\n%s\nbody: %s", diff, rec.Body)
			}
			if strings.Contains(rec.Body.String(), "s3cret") || strings.Contains(rec.Body.String(), "ledger-db") {
				t.Errorf("the answer leaks a hidden cause: %s", rec.Body)
			}
			if got := rec.Header().Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q", got)
			}
		})
	}
	if !strings.Contains(w.logs.String(), "s3cret") {
		t.Errorf("hidden causes were not logged:\n%s", w.logs)
	}
}

func TestHTTPApplicationErrorPassesThrough(t *testing.T) {
	h := htHost(7, agentauthtest.Host{ID: "hst_dave", UserID: "user_dave"})
	a := h.NewAgent(agentauthtest.Agent{ID: "agt_dave"}).Grant("pay", map[string]any{"to": "dave"})
	dir, err := agentauthtest.NewDirectory([]*agentauthtest.Host{h}, []*agentauthtest.Agent{a})
	if err != nil {
		t.Fatal(err)
	}
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{htAudience}, Now: htClock})
	if err != nil {
		t.Fatal(err)
	}
	handler := htHandler(t, htExecutor(t), htConfig(v, nil))
	rec, m := serve(t, handler, http.MethodPost, "/capability/execute", "Bearer "+a.Token(agentauthtest.Token{Audience: htAudience}), execBody("pay", `{"to":"dave","amount":5000}`))
	want := htAnswer{Status: 409, Code: "insufficient_funds", Members: map[string]any{"message": "not enough money", "available": float64(1000)}}
	if diff := cmp.Diff(want, answerOf(rec, m, []string{"message", "available"})); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
}

func TestHTTPReplayedToken(t *testing.T) {
	w := newHTWorld(t)
	tok := "Bearer " + w.token(t, "agt_alice")
	body := execBody("public_info", "")
	rec, _ := serve(t, w.handler, http.MethodPost, "/capability/execute", tok, body)
	if rec.Code != 200 {
		t.Fatalf("first use: %d %s", rec.Code, rec.Body)
	}
	rec, m := serve(t, w.handler, http.MethodPost, "/capability/execute", tok, body)
	want := htAnswer{Status: 401, Code: "invalid_jwt", Challenge: htChallenge}
	if diff := cmp.Diff(want, answerOf(rec, m, nil)); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}
}

func TestHTTPBatch(t *testing.T) {
	w := newHTWorld(t)
	body := `{"requests":[
		{"id":"ok","capability":"pay","arguments":{"to":"bob","amount":20}},
		{"id":"violated","capability":"pay","arguments":{"to":"mallory","amount":20}},
		{"id":"not_granted","capability":"needs_user"},
		{"capability":"no_such_thing"},
		{"id":"refused","capability":"refuse_plain"},
		{"id":"boom","capability":"boom"},
		{"id":"public","capability":"public_info"}]}`
	before := w.replays.calls.Load()
	// The agent holds a grant for needs_user, but the token's claim
	// leaves it out.
	tok := "Bearer " + w.tokenWith(t, "agt_alice", agentauthtest.Token{Capabilities: []string{"pay", "public_info", "no_such_thing", "refuse_plain", "boom"}})
	rec, m := serve(t, w.handler, http.MethodPost, "/capability/batch-execute", tok, body)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if got := w.replays.calls.Load() - before; got != 1 {
		t.Errorf("the batch recorded %d token ids, want 1", got)
	}
	if strings.Contains(rec.Body.String(), "s3cret") {
		t.Errorf("leak: %s", rec.Body)
	}
	type item struct{ ID, Status, Code string }
	var got []item
	for _, r := range m["responses"].([]any) {
		r := r.(map[string]any)
		it := item{ID: r["id"].(string), Status: r["status"].(string)}
		if e, ok := r["error"].(map[string]any); ok {
			it.Code = e["code"].(string)
		}
		got = append(got, it)
	}
	want := []item{
		{"ok", "completed", ""},
		{"violated", "failed", "constraint_violated"},
		{"not_granted", "failed", "capability_not_granted"},
		{"3", "failed", "capability_not_found"},
		{"refused", "failed", "unauthorized"},
		{"boom", "failed", "internal_error"},
		{"public", "completed", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("batch items (-want +got):\n%s\nbody: %s", diff, rec.Body)
	}
	violated := m["responses"].([]any)[1].(map[string]any)["error"].(map[string]any)
	if diff := cmp.Diff(jsonOf(t, `[{"field":"to","constraint":{"in":["bob","carol"]},"actual":"mallory"}]`), violated["violations"]); diff != "" {
		t.Errorf("item violations (-want +got):\n%s", diff)
	}

	// The same token again: one token covers one request.
	rec, _ = serve(t, w.handler, http.MethodPost, "/capability/batch-execute", tok, `{"requests":[{"capability":"public_info"}]}`)
	if rec.Code != 401 {
		t.Errorf("replayed batch token: status %d, want 401", rec.Code)
	}

	// A batch without a token.
	rec, m = serve(t, w.handler, http.MethodPost, "/capability/batch-execute", "", `{"requests":[{"capability":"public_info"}]}`)
	if diff := cmp.Diff(htAnswer{Status: 401, Code: "authentication_required", Challenge: htChallenge}, answerOf(rec, m, nil)); diff != "" {
		t.Errorf("batch without a token (-want +got):\n%s", diff)
	}
}

func TestHTTPBatchUnknownOperatorAndInternal(t *testing.T) {
	w := newHTWorld(t)
	rec, m := serve(t, w.handler, http.MethodPost, "/capability/batch-execute", "Bearer "+w.token(t, "agt_bad_operator"),
		`{"requests":[{"capability":"pay","arguments":{"to":"bob","amount":1}},{"capability":"pay","arguments":{"to":"bob"}}]}`)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	items := m["responses"].([]any)
	first := items[0].(map[string]any)["error"].(map[string]any)
	if diff := cmp.Diff(map[string]any{
		"code": "unknown_constraint_operator", "message": first["message"],
		"unknown_operators": []any{"between"}, "operators": []any{"between"},
	}, first); diff != "" {
		t.Errorf("item 0 (-want +got):\n%s", diff)
	}
	second := items[1].(map[string]any)["error"].(map[string]any)
	if second["code"] != "invalid_request" || second["errors"] == nil {
		t.Errorf("item 1: %v", second)
	}
}

type htListEntry struct {
	Name                string   `json:"name"`
	ApprovalStrength    string   `json:"approval_strength"`
	RequiredConstraints []string `json:"required_constraints"`
	GrantStatus         string   `json:"grant_status"`
}

func list(t *testing.T, h http.Handler, auth string) (int, []htListEntry) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/capability/list", nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var body struct {
		Capabilities []htListEntry `json:"capabilities"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("list: %v: %s", err, rec.Body)
	}
	return rec.Code, body.Capabilities
}

func TestHTTPListAndDescribe(t *testing.T) {
	w := newHTWorld(t)
	cases := []struct {
		name string
		auth string
		want []htListEntry
	}{
		{"anonymous", "", []htListEntry{{Name: "public_info", ApprovalStrength: "none"}}},
		{"delegated agent", "Bearer " + w.token(t, "agt_alice"), []htListEntry{
			{Name: "boom", ApprovalStrength: "none", GrantStatus: "granted"},
			{Name: "needs_user", ApprovalStrength: "none", GrantStatus: "granted"},
			{Name: "pay", ApprovalStrength: "webauthn", RequiredConstraints: []string{"to"}, GrantStatus: "granted"},
			{Name: "public_info", ApprovalStrength: "none", GrantStatus: "granted"},
			{Name: "refuse_plain", ApprovalStrength: "none", GrantStatus: "granted"},
		}},
		{"capabilities claim narrows grant status", "Bearer " + w.tokenWith(t, "agt_alice", agentauthtest.Token{Capabilities: []string{"pay"}}), []htListEntry{
			{Name: "boom", ApprovalStrength: "none", GrantStatus: "not_granted"},
			{Name: "needs_user", ApprovalStrength: "none", GrantStatus: "not_granted"},
			{Name: "pay", ApprovalStrength: "webauthn", RequiredConstraints: []string{"to"}, GrantStatus: "granted"},
			{Name: "public_info", ApprovalStrength: "none", GrantStatus: "not_granted"},
			{Name: "refuse_plain", ApprovalStrength: "none", GrantStatus: "not_granted"},
		}},
		{"stale grants are not granted", "Bearer " + w.token(t, "agt_stale_grants"), []htListEntry{
			{Name: "boom", ApprovalStrength: "none", GrantStatus: "not_granted"},
			{Name: "needs_user", ApprovalStrength: "none", GrantStatus: "not_granted"},
			{Name: "pay", ApprovalStrength: "webauthn", RequiredConstraints: []string{"to"}, GrantStatus: "not_granted"},
			{Name: "public_info", ApprovalStrength: "none", GrantStatus: "not_granted"},
			{Name: "refuse_plain", ApprovalStrength: "none", GrantStatus: "not_granted"},
		}},
		// needs_user is admitted for execute only: an autonomous agent
		// does not see it listed.
		{"autonomous agent", "Bearer " + w.token(t, "agt_robot"), []htListEntry{
			{Name: "boom", ApprovalStrength: "none", GrantStatus: "not_granted"},
			{Name: "pay", ApprovalStrength: "webauthn", RequiredConstraints: []string{"to"}, GrantStatus: "not_granted"},
			{Name: "public_info", ApprovalStrength: "none", GrantStatus: "granted"},
			{Name: "refuse_plain", ApprovalStrength: "none", GrantStatus: "not_granted"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, got := list(t, w.handler, c.auth)
			if status != 200 {
				t.Fatalf("status %d", status)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("list (-want +got):\n%s", diff)
			}
		})
	}

	// A bad token is refused even where anonymous callers are welcome.
	rec, m := serve(t, w.handler, http.MethodGet, "/capability/list", "Bearer nope", "")
	if diff := cmp.Diff(htAnswer{Status: 401, Code: "invalid_jwt", Challenge: htChallenge}, answerOf(rec, m, nil)); diff != "" {
		t.Errorf("list with a bad token (-want +got):\n%s", diff)
	}

	describe := []struct {
		name, auth, capability string
		want                   htAnswer
		members                []string
	}{
		{"anonymous, public", "", "public_info", htAnswer{Status: 200, Members: map[string]any{"name": "public_info"}}, []string{"name", "grant_status"}},
		{"anonymous, hidden", "", "pay", htAnswer{Status: 404, Code: "capability_not_found"}, nil},
		{"unknown", "Bearer " + w.token(t, "agt_alice"), "nope", htAnswer{Status: 404, Code: "capability_not_found"}, nil},
		{"agent", "Bearer " + w.token(t, "agt_alice"), "pay", htAnswer{Status: 200, Members: map[string]any{
			"grant_status": "granted", "approval_strength": "webauthn", "required_constraints": []any{"to"}, "risk": "high"}},
			[]string{"grant_status", "approval_strength", "required_constraints", "risk"}},
		{"agent without grant", "Bearer " + w.token(t, "agt_no_grants"), "pay", htAnswer{Status: 200, Members: map[string]any{
			"grant_status": "not_granted"}}, []string{"grant_status"}},
	}
	for _, c := range describe {
		t.Run("describe "+c.name, func(t *testing.T) {
			rec, m := serve(t, w.handler, http.MethodGet, "/capability/describe?name="+c.capability, c.auth, "")
			if diff := cmp.Diff(c.want, answerOf(rec, m, c.members)); diff != "" {
				t.Errorf("describe (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHTTPAnonymousDiscoveryOff(t *testing.T) {
	dir := agentauth.NewMemoryDirectory()
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{htAudience}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := htConfig(v, nil)
	cfg.AllowAnonymousDiscovery = false
	h := htHandler(t, htExecutor(t), cfg)
	for _, path := range []string{"/capability/list", "/capability/describe?name=public_info"} {
		rec, m := serve(t, h, http.MethodGet, path, "", "")
		if diff := cmp.Diff(htAnswer{Status: 401, Code: "authentication_required", Challenge: htChallenge}, answerOf(rec, m, nil)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", path, diff)
		}
	}
}

// failingSessions is a SessionSource that fails the way a broken custom
// source might.
type failingSessions struct{ err error }

func (f failingSessions) Session(context.Context, string) (*agentauth.Session, error) {
	return nil, f.err
}

// nilSessions returns neither a session nor an error.
type nilSessions struct{}

func (nilSessions) Session(context.Context, string) (*agentauth.Session, error) { return nil, nil }

func TestHTTPSessionSourceFailures(t *testing.T) {
	cases := []struct {
		name    string
		source  agentauth.SessionSource
		want    htAnswer
		logged  bool
		message string
	}{
		{"plain error is redacted", failingSessions{errors.New("introspection: " + htSecret)},
			htAnswer{Status: 500, Code: "internal_error"}, true, "internal error"},
		{"server-side app error keeps its words, cause logged",
			failingSessions{agentcap.NewError(agentcap.CodeInternalError, "internal error").WithCause(errors.New(htSecret))},
			htAnswer{Status: 500, Code: "internal_error"}, true, "internal error"},
		{"client app error passes", failingSessions{agentcap.NewError(agentcap.CodeInvalidJWT, "invalid agent JWT")},
			htAnswer{Status: 401, Code: "invalid_jwt", Challenge: htChallenge}, false, "invalid agent JWT"},
		{"incomplete session", nilSessions{}, htAnswer{Status: 500, Code: "internal_error"}, true, "internal error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			h := htHandler(t, htExecutor(t), htConfig(c.source, slog.New(slog.NewTextHandler(&logs, nil))))
			rec, m := serve(t, h, http.MethodPost, "/capability/execute", "Bearer a.b.c", execBody("public_info", ""))
			if diff := cmp.Diff(c.want, answerOf(rec, m, nil)); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if m["message"] != c.message {
				t.Errorf("message %q, want %q", m["message"], c.message)
			}
			if strings.Contains(rec.Body.String(), "s3cret") {
				t.Errorf("leak: %s", rec.Body)
			}
			if got := logs.Len() > 0; got != c.logged {
				t.Errorf("logged %v, want %v:\n%s", got, c.logged, logs.String())
			}
		})
	}
}

// TestHTTPThroughRouters mounts one Agent Auth handler on Gin, Echo and
// Fiber: the mounts need no Agent Auth specifics, and every answer is the
// one net/http gives.
func TestHTTPThroughRouters(t *testing.T) {
	type req struct {
		method, path, body string
		agent              string // mint a fresh token of this agent
	}
	reqs := []req{
		{http.MethodPost, "/capability/execute", execBody("pay", `{"to":"bob","amount":20}`), "agt_alice"},
		{http.MethodPost, "/capability/execute", execBody("pay", `{"to":"mallory","amount":20}`), "agt_alice"},
		{http.MethodPost, "/capability/execute", execBody("pay", `{"to":"bob","amount":20}`), ""},
		{http.MethodGet, "/capability/list", "", "agt_robot"},
		{http.MethodGet, "/capability/list", "", ""},
		{http.MethodPost, "/capability/batch-execute", `{"requests":[{"capability":"public_info"},{"capability":"needs_user"}]}`, "agt_robot"},
	}
	type answer struct {
		Status    int
		Challenge string
		Body      string
	}
	run := func(t *testing.T, w *htWorld, do func(*http.Request) answer) []answer {
		var out []answer
		for _, r := range reqs {
			var body io.Reader
			if r.body != "" {
				body = strings.NewReader(r.body)
			}
			hr := httptest.NewRequest(r.method, "/agent"+r.path, body)
			if r.body != "" {
				hr.Header.Set("Content-Type", "application/json")
			}
			if r.agent != "" {
				hr.Header.Set("Authorization", "Bearer "+w.token(t, r.agent))
			}
			out = append(out, do(hr))
		}
		return out
	}
	recorder := func(h http.Handler) func(*http.Request) answer {
		return func(r *http.Request) answer {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			return answer{rec.Code, rec.Header().Get("WWW-Authenticate"), rec.Body.String()}
		}
	}

	// Each router gets its own world: a token is good for one request.
	netWorld := newHTWorld(t)
	mux := http.NewServeMux()
	mux.Handle("/agent/", http.StripPrefix("/agent", netWorld.handler))
	want := run(t, netWorld, recorder(mux))
	if want[0].Status != 200 || want[1].Status != 403 || want[2].Status != 401 || want[5].Status != 200 {
		t.Fatalf("unexpected net/http answers: %+v", want)
	}

	gin.SetMode(gin.TestMode)
	ginWorld := newHTWorld(t)
	g := gin.New()
	ginx.Mount(g.Group("/agent"), ginWorld.handler)

	echoWorld := newHTWorld(t)
	e := echo.New()
	echox.Mount(e.Group("/agent"), echoWorld.handler)

	fiberWorld := newHTWorld(t)
	f := fiber.New(fiber.Config{DisableStartupMessage: true})
	fiberx.Mount(f.Group("/agent"), fiberWorld.handler)
	fiberDo := func(r *http.Request) answer {
		resp, err := f.Test(r, 10_000)
		if err != nil {
			t.Fatalf("fiber: %v", err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return answer{resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)}
	}

	for _, router := range []struct {
		name string
		got  []answer
	}{
		{"gin", run(t, ginWorld, recorder(g))},
		{"echo", run(t, echoWorld, recorder(e))},
		{"fiber", run(t, fiberWorld, fiberDo)},
	} {
		if diff := cmp.Diff(want, router.got); diff != "" {
			t.Errorf("%s answers differ from net/http (-net/http +%s):\n%s", router.name, router.name, diff)
		}
	}
}
