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

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/jobs"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

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
				return sendOut{}, agentcap.NewError(agentcap.CodeUnauthorized, "no user")
			}
			return sendOut{From: user, To: in.To, Amount: in.Amount}, nil
		},
		core.WithRequiredConstraints("to"),
		core.WithVisibility(func(_ context.Context, id *auth.Identity, _ bool) bool { return id != nil }))

	ping = core.MustDefine("ping", "Answer pong.",
		func(context.Context, string, core.NoInput) (nothing, error) { return nothing{}, nil })
)

// userOf is the executor's context: the user the caller acts for, none
// for an anonymous caller or an autonomous agent.
func userOf(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (string, error) {
	if id == nil {
		return "", nil
	}
	return id.UserID, nil
}

func srvExecutor(t testing.TB, defs ...core.Definer) *core.Executor {
	t.Helper()
	if defs == nil {
		defs = []core.Definer{sendMoney, ping}
	}
	e, err := core.NewExecutor(core.MustRegistry(defs...), userOf, core.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func srvConfig() agentauth.Config {
	return agentauth.Config{AllowAnonymousDiscovery: true}
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
	ahead := func() time.Time { return time.Now().Add(time.Hour) }
	cases := []struct {
		name string
		call agentauthtest.Call
		now  func() time.Time // the server's clock
		want outcome
	}{
		{"ok", agentauthtest.Call{Capability: "send_money", Arguments: map[string]any{"to": "bob", "amount": 5}, Constraints: toBob}, nil,
			outcome{200, "", `{"from":"user_test","to":"bob","amount":5}`}},
		{"host user", agentauthtest.Call{Capability: "send_money", Arguments: `{"to":"bob","amount":5}`, Constraints: toBob,
			Host: agentauthtest.Host{UserID: "user_alice"}}, nil,
			outcome{200, "", `{"from":"user_alice","to":"bob","amount":5}`}},
		{"agent user", agentauthtest.Call{Capability: "send_money", Arguments: `{"to":"bob","amount":5}`, Constraints: toBob,
			Agent: agentauthtest.Agent{UserID: "user_bob"}}, nil,
			outcome{200, "", `{"from":"user_bob","to":"bob","amount":5}`}},
		{"no arguments", agentauthtest.Call{Capability: "ping"}, nil, outcome{200, "", `{}`}},
		{"constraint violated", agentauthtest.Call{Capability: "send_money", Arguments: map[string]any{"to": "eve", "amount": 5}, Constraints: toBob}, nil,
			outcome{403, "constraint_violated", ""}},
		{"missing required constraint", agentauthtest.Call{Capability: "send_money", Arguments: map[string]any{"to": "bob", "amount": 5}}, nil,
			outcome{403, "capability_not_granted", ""}},
		{"malformed arguments", agentauthtest.Call{Capability: "send_money", Arguments: `{"to":`, Constraints: toBob}, nil,
			outcome{400, "invalid_request", ""}},
		{"invalid arguments", agentauthtest.Call{Capability: "send_money", Arguments: `{"to":"bob","amount":-1}`, Constraints: toBob}, nil,
			outcome{400, "invalid_request", ""}},
		{"unknown capability", agentauthtest.Call{Capability: "no_such"}, nil, outcome{404, "capability_not_found", ""}},
		{"autonomous agent", agentauthtest.Call{Capability: "send_money", Arguments: map[string]any{"to": "bob", "amount": 5}, Constraints: toBob,
			Agent: agentauthtest.Agent{Mode: agentcap.ModeAutonomous}}, nil,
			outcome{403, "unauthorized", ""}},
		{"other grants kept", agentauthtest.Call{Capability: "ping",
			Agent: agentauthtest.Agent{Grants: []agentauth.Grant{{Capability: "ping", Status: agentcap.StatusDenied}}}}, nil,
			outcome{200, "", `{}`}},
		{"revoked agent", agentauthtest.Call{Capability: "ping", Agent: agentauthtest.Agent{Status: agentcap.StatusRevoked}}, nil,
			outcome{403, "agent_revoked", ""}},
		{"pending host", agentauthtest.Call{Capability: "ping", Host: agentauthtest.Host{Status: agentcap.StatusPending}}, nil,
			outcome{403, "host_pending", ""}},
		{"capabilities claim", agentauthtest.Call{Capability: "ping", Token: agentauthtest.Token{Capabilities: []string{"send_money"}}}, nil,
			outcome{403, "capability_not_granted", ""}},
		{"expired token", agentauthtest.Call{Capability: "ping", Token: agentauthtest.Token{IssuedAt: time.Now().Add(-time.Hour)}}, nil,
			outcome{401, "invalid_jwt", ""}},
		{"other audience", agentauthtest.Call{Capability: "ping", Token: agentauthtest.Token{Audience: "https://elsewhere.example"}}, nil,
			outcome{401, "invalid_jwt", ""}},
		{"host follows the server clock", agentauthtest.Call{Capability: "ping"}, ahead, outcome{200, "", `{}`}},
		{"host clock behind the server's", agentauthtest.Call{Capability: "ping", Host: agentauthtest.Host{Clock: time.Now}}, ahead,
			outcome{401, "invalid_jwt", ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := srvConfig()
			cfg.Now = c.now
			r := agentauthtest.Execute(t, exec, cfg, c.call)
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
	cfg := srvConfig()
	cfg.Now = clock
	s := agentauthtest.NewServer(t, srvExecutor(t), cfg)
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || s.Audience() != s.URL+"/capability/execute" {
		t.Fatalf("URL %q, audience %q", s.URL, s.Audience())
	}
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", UserID: "user_1", Clock: clock})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("send_money", map[string]any{"to": "bob"}).Grant("ping", nil)
	s.Add(t, agent)

	t.Run("execute", func(t *testing.T) {
		r := s.Execute(t, s.Token(agent), "send_money", map[string]any{"to": "bob", "amount": 2.5})
		var out sendOut
		r.Decode(t, &out)
		if diff := cmp.Diff(sendOut{From: "user_1", To: "bob", Amount: 2.5}, out); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("issuer as audience", func(t *testing.T) {
		r := s.Do(t, http.MethodPost, "capability/execute", agent.Token(agentauthtest.Token{Audience: s.URL}), []byte(`{"capability":"ping"}`))
		if r.Status != 200 {
			t.Errorf("status %d: %s", r.Status, r.Body)
		}
	})
	t.Run("members", func(t *testing.T) {
		r := s.Execute(t, s.Token(agent), "send_money", map[string]any{"to": "eve", "amount": 1})
		want := `[{"field":"to","constraint":"bob","actual":"eve"}]`
		if r.Code != "constraint_violated" || string(r.Member("violations")) != want || r.Member("absent") != nil {
			t.Errorf("code %q, violations %s", r.Code, r.Member("violations"))
		}
	})
	t.Run("batch", func(t *testing.T) {
		r := s.BatchExecute(t, s.Token(agent), []agentauthtest.BatchRequest{
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
		r = s.Do(t, http.MethodGet, agentcap.DiscoveryPath, "", nil)
		var doc agentcap.Discovery
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
		agent.Status = agentcap.StatusRevoked
		s.Add(t, agent)
		if r := s.Execute(t, s.Token(agent), "ping", nil); r.Code != "agent_revoked" {
			t.Errorf("after revoking: %d %q", r.Status, r.Code)
		}
	})
	t.Run("server clock", func(t *testing.T) {
		clockMu.Lock()
		now = now.Add(2 * time.Minute)
		clockMu.Unlock()
		late := host.NewAgent(agentauthtest.Agent{ID: "agt_late"}).Grant("ping", nil)
		s.Add(t, late)
		// Minted two minutes before the server's clock.
		stale := late.Token(agentauthtest.Token{Audience: s.Audience(), IssuedAt: now.Add(-2 * time.Minute)})
		if r := s.Execute(t, stale, "ping", nil); r.Code != "invalid_jwt" {
			t.Errorf("stale token: %d %q", r.Status, r.Code)
		}
		if r := s.Execute(t, s.Token(late), "ping", nil); r.Status != 200 {
			t.Errorf("current token: %d %s", r.Status, r.Body)
		}
	})
}

// refusingCache records nothing and refuses everything, to see that
// Options.Replay reaches the verifier.
type refusingCache struct{}

func (refusingCache) CheckAndSet(context.Context, string, time.Duration) (bool, error) {
	return false, errors.New("cache down")
}

func TestServerReplayCache(t *testing.T) {
	s := agentauthtest.NewServer(t, srvExecutor(t), srvConfig(), agentauthtest.Options{Replay: refusingCache{}})
	a := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("ping", nil)
	s.Add(t, a)
	if r := s.Execute(t, s.Token(a), "ping", nil); r.Status != 503 || r.Code != "temporarily_unavailable" {
		t.Errorf("%d %q", r.Status, r.Code)
	}
}

func TestServerReplayedToken(t *testing.T) {
	s := agentauthtest.NewServer(t, srvExecutor(t), srvConfig())
	a := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("ping", nil)
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
	exec := srvExecutor(t)
	s := agentauthtest.NewServer(rt, exec, srvConfig())
	a := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("ping", nil)
	s.Add(rt, a)

	r := s.Execute(rt, s.Token(a), "no_such", nil)
	var v map[string]any
	r.Decode(rt, &v)
	if len(rt.failures) != 1 || !strings.Contains(rt.failures[0], "capability_not_found") {
		t.Errorf("Decode of an error: %q", rt.failures)
	}

	rt.failures = nil
	s.Execute(rt, s.Token(a), "ping", func() {})
	if len(rt.failures) == 0 {
		t.Error("arguments that cannot be encoded did not fail the test")
	}

	rt.failures = nil
	bad := agentauthtest.NewHost(agentauthtest.Host{}).NewAgent(agentauthtest.Agent{ID: "agt_2"})
	s.Add(rt, bad)
	if len(rt.failures) != 1 {
		t.Errorf("Add of an invalid host: %q", rt.failures)
	}

	rt.failures = nil
	badIssuer := agentauth.Config{Issuer: "not a url"}
	if s := agentauthtest.NewServer(rt, exec, badIssuer); s != nil || len(rt.failures) != 1 {
		t.Errorf("NewServer with a bad issuer: %v, %q", s, rt.failures)
	}

	rt.failures = nil
	if r := agentauthtest.Execute(rt, exec, badIssuer, agentauthtest.Call{Capability: "ping"}); r.Status != 0 || len(rt.failures) != 1 {
		t.Errorf("Execute with a bad issuer: %d, %q", r.Status, rt.failures)
	}

	rt.failures = nil
	if s := agentauthtest.NewServer(rt, exec, srvConfig(), agentauthtest.Options{}, agentauthtest.Options{}); s != nil || len(rt.failures) != 1 {
		t.Errorf("NewServer with two Options: %v, %q", s, rt.failures)
	}
}

// waitIn is the input of the async capability wait, which runs until its
// test releases it.
type waitIn struct{}

// TestServerLongRunning checks that a server runs async capabilities in
// a job manager of its own, or in Options.LongRunning's with its
// idempotency guard, with status URLs under the server's URL.
func TestServerLongRunning(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	wait := core.MustDefine("wait", "Wait until released.",
		func(ctx context.Context, _ string, _ waitIn) (nothing, error) {
			select {
			case <-release:
				return nothing{}, nil
			case <-ctx.Done():
				return nothing{}, ctx.Err()
			}
		}, core.WithAsync())
	exec := srvExecutor(t, wait, ping)

	type pending struct {
		Status    string `json:"status"`
		StatusURL string `json:"status_url"`
	}
	start := func(t *testing.T, s *agentauthtest.Server, a *agentauthtest.Agent) string {
		t.Helper()
		r := s.Execute(t, s.Token(a), "wait", nil)
		var p pending
		if err := json.Unmarshal(r.Body, &p); err != nil || r.Status != 202 || p.Status != "pending" {
			t.Fatalf("execute: %d %s (%v)", r.Status, r.Body, err)
		}
		prefix := s.URL + "/capability/status?id="
		if !strings.HasPrefix(p.StatusURL, prefix) {
			t.Fatalf("status_url %q, want it under %q", p.StatusURL, prefix)
		}
		status := s.Do(t, http.MethodGet, strings.TrimPrefix(p.StatusURL, s.URL), s.Token(a), nil)
		if status.Status != 200 || !strings.Contains(string(status.Body), `"pending"`) {
			t.Fatalf("status: %d %s", status.Status, status.Body)
		}
		return strings.TrimPrefix(p.StatusURL, prefix)
	}

	t.Run("in memory", func(t *testing.T) {
		s := agentauthtest.NewServer(t, exec, srvConfig())
		a := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("wait", nil)
		s.Add(t, a)
		start(t, s, a)
	})

	t.Run("options", func(t *testing.T) {
		m, err := jobs.New(jobs.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		guard, err := idempotency.New(idempotency.Config{})
		if err != nil {
			t.Fatal(err)
		}
		s := agentauthtest.NewServer(t, exec, srvConfig(), agentauthtest.Options{
			LongRunning: httpx.LongRunning{Jobs: m, Idempotency: guard},
		})
		a := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("wait", nil).Grant("ping", nil)
		s.Add(t, a)
		id := start(t, s, a)
		if rec, err := m.Get(context.Background(), a.ID, id); err != nil || rec == nil {
			t.Errorf("the job %q is not in the given manager: %v", id, err)
		}

		// The guard honours Idempotency-Key: a repeat is replayed.
		send := func() *http.Response {
			t.Helper()
			req, err := http.NewRequest(http.MethodPost, s.URL+"/capability/execute", strings.NewReader(`{"capability":"ping"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+s.Token(a))
			req.Header.Set("Idempotency-Key", "key-1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp
		}
		if first := send(); first.StatusCode != 200 || first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first: %d, replayed %q", first.StatusCode, first.Header.Get("Idempotent-Replayed"))
		}
		if again := send(); again.StatusCode != 200 || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("repeat: %d, replayed %q", again.StatusCode, again.Header.Get("Idempotent-Replayed"))
		}
	})
}
