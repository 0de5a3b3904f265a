package agentauthtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// srvUser is the principal of the test executor.
type srvUser struct{ ID string }

type sendIn struct {
	To     string  `json:"to" minLength:"1"`
	Amount float64 `json:"amount" exclusiveMinimum:"0"`
}

type sendOut struct {
	From   string  `json:"from"`
	To     string  `json:"to"`
	Amount float64 `json:"amount"`
}

type nothing struct{}

var (
	sendMoney = core.MustDefine("send_money", "Send money to someone.",
		func(_ context.Context, user string, in sendIn) (sendOut, error) {
			if user == "" {
				return sendOut{}, core.Forbidden(agentauth.CodeUnauthorized, "no user")
			}
			return sendOut{From: user, To: in.To, Amount: in.Amount}, nil
		},
		core.WithRequiredConstraints("to"),
		core.VisibleTo(func(_ context.Context, c agentauth.Caller[srvUser]) bool { return c.Session != nil }))

	ping = core.MustDefine("ping", "Answer pong.",
		func(context.Context, string, core.NoInput) (nothing, error) { return nothing{}, nil })
)

func srvExecutor(t testing.TB) *core.Executor[string, agentauth.Caller[srvUser]] {
	t.Helper()
	reg := core.MustRegistry(sendMoney, ping)
	e, err := core.NewExecutor(reg, core.ExecutorConfig[string, agentauth.Caller[srvUser]]{
		CreateContext: func(_ context.Context, c agentauth.Caller[srvUser], _ *core.Definition, _ any) (string, error) {
			return c.Principal.ID, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func srvOptions() agentauth.HTTPOptions[srvUser] {
	return agentauth.HTTPOptions[srvUser]{
		Principal: func(_ context.Context, s *agentauth.Session) (srvUser, error) {
			if s.Agent.Mode == agentauth.ModeAutonomous {
				return srvUser{}, nil
			}
			return srvUser{ID: s.Agent.UserID}, nil
		},
		AllowAnonymousDiscovery: true,
	}
}

type outcome struct {
	Status int
	Code   string
	Data   string
}

func outcomeOf(r agentauthtest.Response) outcome {
	return outcome{Status: r.Status, Code: r.Code, Data: string(r.Data)}
}

func TestExecute(t *testing.T) {
	exec := srvExecutor(t)
	toBob := map[string]any{"to": "bob"}
	cases := []struct {
		name        string
		capability  string
		args        any
		constraints map[string]any
		opts        []agentauthtest.ExecuteOption
		want        outcome
	}{
		{"ok", "send_money", map[string]any{"to": "bob", "amount": 5}, toBob, nil,
			outcome{200, "", `{"from":"user_test","to":"bob","amount":5}`}},
		{"host user", "send_money", `{"to":"bob","amount":5}`, toBob,
			[]agentauthtest.ExecuteOption{agentauthtest.WithHostOptions(agentauthtest.WithUser("user_alice"))},
			outcome{200, "", `{"from":"user_alice","to":"bob","amount":5}`}},
		{"no arguments", "ping", nil, nil, nil, outcome{200, "", `{}`}},
		{"constraint violated", "send_money", map[string]any{"to": "eve", "amount": 5}, toBob, nil,
			outcome{403, "constraint_violated", ""}},
		{"missing required constraint", "send_money", map[string]any{"to": "bob", "amount": 5}, nil, nil,
			outcome{403, "capability_not_granted", ""}},
		{"malformed arguments", "send_money", `{"to":`, toBob, nil, outcome{400, "invalid_request", ""}},
		{"invalid arguments", "send_money", `{"to":"bob","amount":-1}`, toBob, nil, outcome{400, "invalid_request", ""}},
		{"unknown capability", "no_such", nil, nil, nil, outcome{404, "capability_not_found", ""}},
		{"autonomous agent", "send_money", map[string]any{"to": "bob", "amount": 5}, toBob,
			[]agentauthtest.ExecuteOption{agentauthtest.WithAgentOptions(agentauthtest.WithMode(agentauth.ModeAutonomous))},
			outcome{403, "unauthorized", ""}},
		{"revoked agent", "ping", nil, nil,
			[]agentauthtest.ExecuteOption{agentauthtest.WithAgentOptions(agentauthtest.WithStatus(agentauth.StatusRevoked))},
			outcome{403, "agent_revoked", ""}},
		{"pending host", "ping", nil, nil,
			[]agentauthtest.ExecuteOption{agentauthtest.WithHostOptions(agentauthtest.WithStatus(agentauth.StatusPending))},
			outcome{403, "host_pending", ""}},
		{"capabilities claim", "ping", nil, nil,
			[]agentauthtest.ExecuteOption{agentauthtest.WithTokenOptions(agentauthtest.WithCapabilities("send_money"))},
			outcome{403, "capability_not_granted", ""}},
		{"expired token", "ping", nil, nil,
			[]agentauthtest.ExecuteOption{agentauthtest.WithTokenOptions(agentauthtest.WithIssuedAt(time.Now().Add(-time.Hour)))},
			outcome{401, "invalid_jwt", ""}},
		{"server clock", "ping", nil, nil,
			[]agentauthtest.ExecuteOption{agentauthtest.WithServerOptions(agentauthtest.WithServerClock(func() time.Time { return time.Now().Add(time.Hour) }))},
			outcome{401, "invalid_jwt", ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := agentauthtest.Execute(t, exec, srvOptions(), c.capability, c.args, c.constraints, c.opts...)
			if diff := cmp.Diff(c.want, outcomeOf(r)); diff != "" {
				t.Errorf("(-want +got):\n%s\nbody: %s", diff, r.Body)
			}
			if r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type %q", r.Header.Get("Content-Type"))
			}
		})
	}
}

func TestServer(t *testing.T) {
	var clockMu sync.Mutex
	now := time.Unix(1767268800, 0)
	clock := func() time.Time {
		clockMu.Lock()
		defer clockMu.Unlock()
		return now
	}
	s := agentauthtest.NewServer(t, srvExecutor(t), srvOptions(), agentauthtest.WithServerClock(clock))
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || s.Audience() != s.URL+"/capability/execute" {
		t.Fatalf("URL %q, audience %q", s.URL, s.Audience())
	}
	host := agentauthtest.NewHost("hst_1", agentauthtest.WithUser("user_1"), agentauthtest.WithClock(clock))
	agent := host.NewAgent("agt_1").Grant("send_money", map[string]any{"to": "bob"}).Grant("ping", nil)
	s.Add(t, agent)

	t.Run("execute", func(t *testing.T) {
		r := s.Execute(t, agent, "send_money", map[string]any{"to": "bob", "amount": 2.5})
		var out sendOut
		r.Decode(t, &out)
		if diff := cmp.Diff(sendOut{From: "user_1", To: "bob", Amount: 2.5}, out); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("issuer as audience", func(t *testing.T) {
		r := s.Do(t, http.MethodPost, "capability/execute", agent.Token(s.URL), []byte(`{"capability":"ping"}`))
		if r.Status != 200 {
			t.Errorf("status %d: %s", r.Status, r.Body)
		}
	})
	t.Run("members", func(t *testing.T) {
		r := s.Execute(t, agent, "send_money", map[string]any{"to": "eve", "amount": 1})
		want := `[{"field":"to","constraint":"bob","actual":"eve"}]`
		if r.Code != "constraint_violated" || string(r.Member("violations")) != want || r.Member("absent") != nil {
			t.Errorf("code %q, violations %s", r.Code, r.Member("violations"))
		}
	})
	t.Run("batch", func(t *testing.T) {
		r := s.BatchExecute(t, agent, []agentauthtest.BatchRequest{
			{ID: "a", Capability: "ping"},
			{Capability: "send_money", Arguments: `{"to":"eve","amount":1}`},
			{ID: "c", Capability: "send_money", Arguments: map[string]any{"to": "bob", "amount": 1}},
		})
		if r.Status != 200 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		type item struct{ ID, Status, Code, Data string }
		var got []item
		for _, it := range r.Items {
			got = append(got, item{it.ID, it.Status, it.Code, string(it.Data)})
		}
		want := []item{
			{"a", "completed", "", "{}"},
			{"1", "failed", "constraint_violated", ""},
			{"c", "completed", "", `{"from":"user_1","to":"bob","amount":1}`},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if !strings.Contains(string(r.Items[1].Error), `"violations"`) {
			t.Errorf("item error %s", r.Items[1].Error)
		}
	})
	t.Run("anonymous list and discovery", func(t *testing.T) {
		r := s.Do(t, http.MethodGet, "/capability/list", "", nil)
		if r.Status != 200 || !strings.Contains(string(r.Body), `"ping"`) || strings.Contains(string(r.Body), "send_money") {
			t.Errorf("anonymous list: %d %s", r.Status, r.Body)
		}
		r = s.Do(t, http.MethodGet, agentauth.DiscoveryPath, "", nil)
		var doc agentauth.Discovery
		if err := json.Unmarshal(r.Body, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Issuer != s.URL || doc.DefaultLocation != s.Audience() || doc.Endpoints.Execute != "/capability/execute" {
			t.Errorf("discovery: %s", r.Body)
		}
	})
	t.Run("no token", func(t *testing.T) {
		r := s.Do(t, http.MethodPost, "capability/execute", "", []byte(`{"capability":"ping"}`))
		want := `AgentAuth discovery="` + s.URL + `/.well-known/agent-configuration"`
		if r.Status != 401 || r.Code != "authentication_required" || r.Header.Get("WWW-Authenticate") != want {
			t.Errorf("%d %q %q", r.Status, r.Code, r.Header.Get("WWW-Authenticate"))
		}
	})
	t.Run("add again after a change", func(t *testing.T) {
		agent.Status = agentauth.StatusRevoked
		s.Add(t, agent)
		if r := s.Execute(t, agent, "ping", nil); r.Code != "agent_revoked" {
			t.Errorf("after revoking: %d %q", r.Status, r.Code)
		}
	})
	t.Run("server clock", func(t *testing.T) {
		clockMu.Lock()
		now = now.Add(2 * time.Minute)
		clockMu.Unlock()
		late := host.NewAgent("agt_late").Grant("ping", nil)
		s.Add(t, late)
		// Minted two minutes before the server's clock.
		r := s.Execute(t, late, "ping", nil, agentauthtest.WithNow(now.Add(-2*time.Minute)))
		if r.Code != "invalid_jwt" {
			t.Errorf("stale token: %d %q", r.Status, r.Code)
		}
		if r := s.Execute(t, late, "ping", nil); r.Status != 200 {
			t.Errorf("current token: %d %s", r.Status, r.Body)
		}
	})
}

// refusingCache records nothing and refuses everything, to see that
// WithReplayCache reaches the verifier.
type refusingCache struct{}

func (refusingCache) CheckAndSet(context.Context, string, time.Duration) (bool, error) {
	return false, errors.New("cache down")
}

func TestServerReplayCache(t *testing.T) {
	s := agentauthtest.NewServer(t, srvExecutor(t), srvOptions(), agentauthtest.WithReplayCache(refusingCache{}))
	a := agentauthtest.NewHost("hst_1").NewAgent("agt_1").Grant("ping", nil)
	s.Add(t, a)
	if r := s.Execute(t, a, "ping", nil); r.Status != 503 || r.Code != "temporarily_unavailable" {
		t.Errorf("%d %q", r.Status, r.Code)
	}
}

func TestServerReplayedToken(t *testing.T) {
	s := agentauthtest.NewServer(t, srvExecutor(t), srvOptions())
	a := agentauthtest.NewHost("hst_1").NewAgent("agt_1").Grant("ping", nil)
	s.Add(t, a)
	tok := s.Token(a)
	body := []byte(`{"capability":"ping"}`)
	if r := s.Do(t, http.MethodPost, "capability/execute", tok, body); r.Status != 200 {
		t.Fatalf("first: %d %s", r.Status, r.Body)
	}
	if r := s.Do(t, http.MethodPost, "capability/execute", tok, body); r.Status != 401 || r.Code != "invalid_jwt" {
		t.Errorf("replay: %d %q", r.Status, r.Code)
	}
}

// recordingTB records failures instead of stopping, to test the helpers'
// own failures.
type recordingTB struct {
	failures []string
	cleanups []func()
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) done() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestHelperFailures(t *testing.T) {
	rt := &recordingTB{}
	defer rt.done()
	s := agentauthtest.NewServer(rt, srvExecutor(t), srvOptions())
	a := agentauthtest.NewHost("hst_1").NewAgent("agt_1").Grant("ping", nil)
	s.Add(rt, a)

	r := s.Execute(rt, a, "no_such", nil)
	var v map[string]any
	r.Decode(rt, &v)
	if len(rt.failures) != 1 || !strings.Contains(rt.failures[0], "capability_not_found") {
		t.Errorf("Decode of an error: %q", rt.failures)
	}

	rt.failures = nil
	s.Execute(rt, a, "ping", func() {})
	if len(rt.failures) == 0 {
		t.Error("arguments that cannot be encoded did not fail the test")
	}

	rt.failures = nil
	bad := agentauthtest.NewHost("").NewAgent("agt_2")
	s.Add(rt, bad)
	if len(rt.failures) != 1 {
		t.Errorf("Add of an invalid host: %q", rt.failures)
	}

	rt.failures = nil
	agentauthtest.NewServer(rt, srvExecutor(t), agentauth.HTTPOptions[srvUser]{Issuer: "not a url"})
	if len(rt.failures) != 1 {
		t.Errorf("NewServer with a bad issuer: %q", rt.failures)
	}
}
