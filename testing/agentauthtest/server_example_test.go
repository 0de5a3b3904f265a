package agentauthtest_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// exampleTB stands in for *testing.T in the server examples: it panics on
// failure and runs its cleanups when the example calls done.
type exampleTB struct{ cleanups []func() }

func (*exampleTB) Helper()                           {}
func (*exampleTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (e *exampleTB) Cleanup(f func())                { e.cleanups = append(e.cleanups, f) }
func (e *exampleTB) done() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
}

type payIn struct {
	To     string  `json:"to"`
	Amount float64 `json:"amount" exclusiveMinimum:"0"`
}

type payOut struct {
	Paid string `json:"paid"`
}

// bank is the application under test: one capability, pay, whose grants
// must constrain "to", paid from the account of the user the agent acts
// for, and its Agent Auth wiring.
func bank() (*core.Executor, agentauth.Config) {
	pay := core.MustDefine("pay", "Pay someone.",
		func(_ context.Context, from string, in payIn) (payOut, error) {
			return payOut{Paid: fmt.Sprintf("%s paid %s %.2f", from, in.To, in.Amount)}, nil
		}, core.WithRequiredConstraints("to"))
	exec := core.MustExecutor(core.MustRegistry(pay),
		func(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (string, error) {
			return id.UserID, nil
		}, core.Config{})
	return exec, agentauth.Config{}
}

func ExampleExecute() {
	t := &exampleTB{}
	defer t.done()
	exec, cfg := bank()

	r := agentauthtest.Execute(t, exec, cfg, agentauthtest.Call{
		Capability:  "pay",
		Arguments:   map[string]any{"to": "bob", "amount": 12.5},
		Constraints: map[string]any{"to": "bob", "amount": map[string]any{"max": 100}},
		Host:        agentauthtest.Host{UserID: "alice"},
	})
	fmt.Println(r.Status, string(r.Data))

	r = agentauthtest.Execute(t, exec, cfg, agentauthtest.Call{
		Capability:  "pay",
		Arguments:   map[string]any{"to": "bob", "amount": 500},
		Constraints: map[string]any{"to": "bob", "amount": map[string]any{"max": 100}},
	})
	fmt.Println(r.Status, r.Code, string(r.Member("violations")))
	// Output:
	// 200 {"paid":"alice paid bob 12.50"}
	// 403 constraint_violated [{"field":"amount","constraint":{"max":100},"actual":500}]
}

func ExampleExecute_identities() {
	t := &exampleTB{}
	defer t.done()
	exec, cfg := bank()
	call := func(c agentauthtest.Call) {
		c.Capability = "pay"
		c.Arguments = map[string]any{"to": "bob", "amount": 2}
		c.Constraints = map[string]any{"to": "bob"}
		r := agentauthtest.Execute(t, exec, cfg, c)
		fmt.Println(r.Status, r.Code)
	}
	call(agentauthtest.Call{Host: agentauthtest.Host{Status: agentcap.StatusPending}})
	call(agentauthtest.Call{Agent: agentauthtest.Agent{Status: agentcap.StatusClaimed}})
	// A token option: this token is only good for another capability.
	call(agentauthtest.Call{Token: agentauthtest.Token{Capabilities: []string{"refund"}}})
	call(agentauthtest.Call{Token: agentauthtest.Token{Type: "host+jwt"}})
	// Output:
	// 403 host_pending
	// 403 agent_claimed
	// 403 capability_not_granted
	// 401 invalid_jwt
}

func ExampleExecute_clock() {
	t := &exampleTB{}
	defer t.done()
	exec, cfg := bank()
	// The server's clock runs ten minutes ahead: the fresh host mints on
	// it, unless the host has a clock of its own.
	cfg.Now = func() time.Time { return time.Now().Add(10 * time.Minute) }
	call := agentauthtest.Call{
		Capability:  "pay",
		Arguments:   map[string]any{"to": "bob", "amount": 2},
		Constraints: map[string]any{"to": "bob"},
	}
	fmt.Println(agentauthtest.Execute(t, exec, cfg, call).Status)
	call.Host.Clock = time.Now
	r := agentauthtest.Execute(t, exec, cfg, call)
	fmt.Println(r.Status, r.Code, r.Message)
	// Output:
	// 200
	// 401 invalid_jwt agent JWT too old
}

func ExampleNewServer() {
	t := &exampleTB{}
	defer t.done()
	exec, cfg := bank()
	s := agentauthtest.NewServer(t, exec, cfg)

	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", UserID: "alice"})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agt_1"}).
		Grant("pay", map[string]any{"to": map[string]any{"in": []string{"bob", "carol"}}})
	s.Add(t, agent)

	r := s.Execute(t, s.Token(agent), "pay", map[string]any{"to": "carol", "amount": 3})
	fmt.Println(r.Status, string(r.Data))
	// Output: 200 {"paid":"alice paid carol 3.00"}
}

func ExampleNewServer_clock() {
	t := &exampleTB{}
	defer t.done()
	exec, cfg := bank()
	now := func() time.Time { return time.Unix(1767268800, 0) }
	cfg.Now = now
	s := agentauthtest.NewServer(t, exec, cfg)
	// The host mints with the same clock, so its tokens are current.
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Clock: now})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("pay", map[string]any{"to": "bob"})
	s.Add(t, agent)
	fmt.Println(s.Execute(t, s.Token(agent), "pay", map[string]any{"to": "bob", "amount": 1}).Status)
	// Output: 200
}

func ExampleOptions() {
	t := &exampleTB{}
	defer t.done()
	exec, cfg := bank()
	// Share one cache between two servers, as instances of one location
	// would through Redis: a token used on one is refused by the other.
	opts := agentauthtest.Options{Replay: agentauth.NewMemoryReplayCache(0)}
	a := agentauthtest.NewServer(t, exec, cfg, opts)
	b := agentauthtest.NewServer(t, exec, cfg, opts)
	agent := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1"}).
		Grant("pay", map[string]any{"to": "bob"})
	a.Add(t, agent)
	b.Add(t, agent)

	token := agent.Token(agentauthtest.Token{Claims: map[string]any{"aud": []string{a.Audience(), b.Audience()}}})
	args := map[string]any{"to": "bob", "amount": 1}
	fmt.Println(a.Execute(t, token, "pay", args).Status)
	fmt.Println(b.Execute(t, token, "pay", args).Code)
	// Output:
	// 200
	// invalid_jwt
}

func ExampleServer_Add() {
	t := &exampleTB{}
	defer t.done()
	exec, cfg := bank()
	s := agentauthtest.NewServer(t, exec, cfg)
	agent := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1"}).
		Grant("pay", map[string]any{"to": "bob"})
	s.Add(t, agent)

	// Change the agent, then Add it again: the server sees the change.
	agent.Status = agentcap.StatusRevoked
	s.Add(t, agent)
	fmt.Println(s.Execute(t, s.Token(agent), "pay", map[string]any{"to": "bob", "amount": 1}).Code)
	// Output: agent_revoked
}

func ExampleServer_Execute() {
	t := &exampleTB{}
	defer t.done()
	exec, cfg := bank()
	s := agentauthtest.NewServer(t, exec, cfg)
	agent := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1"}).
		Grant("pay", map[string]any{"to": "bob"})
	s.Add(t, agent)

	// Arguments given as text are sent as they are, malformed or not.
	r := s.Execute(t, s.Token(agent), "pay", `{"to":"bob","amount":-1}`)
	fmt.Println(r.Status, r.Code)
	// A token of its own: this one is only good for another capability.
	token := agent.Token(agentauthtest.Token{Audience: s.Audience(), Capabilities: []string{"refund"}})
	r = s.Execute(t, token, "pay", map[string]any{"to": "bob", "amount": 1})
	fmt.Println(r.Status, r.Code)
	// No token at all.
	r = s.Execute(t, "", "pay", map[string]any{"to": "bob", "amount": 1})
	fmt.Println(r.Status, r.Code)
	// Output:
	// 400 invalid_request
	// 403 capability_not_granted
	// 401 authentication_required
}

func ExampleServer_BatchExecute() {
	t := &exampleTB{}
	defer t.done()
	exec, cfg := bank()
	s := agentauthtest.NewServer(t, exec, cfg)
	agent := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", UserID: "alice"}).NewAgent(agentauthtest.Agent{ID: "agt_1"}).
		Grant("pay", map[string]any{"to": "bob"})
	s.Add(t, agent)

	r := s.BatchExecute(t, s.Token(agent), []agentauthtest.BatchRequest{
		{ID: "first", Capability: "pay", Arguments: map[string]any{"to": "bob", "amount": 1}},
		{Capability: "pay", Arguments: map[string]any{"to": "eve", "amount": 1}},
	})
	for _, it := range r.Items {
		fmt.Println(it.ID, it.Status, it.Code, string(it.Data))
	}
	// Output:
	// first completed  {"paid":"alice paid bob 1.00"}
	// 1 failed constraint_violated
}

func ExampleServer_Do() {
	t := &exampleTB{}
	defer t.done()
	exec, cfg := bank()
	s := agentauthtest.NewServer(t, exec, cfg)

	r := s.Do(t, http.MethodPost, "capability/execute", "", []byte(`{"capability":"pay"}`))
	fmt.Println(r.Status, r.Code)
	fmt.Println(r.Header.Get("WWW-Authenticate") == `AgentAuth discovery="`+s.URL+`/.well-known/agent-configuration"`)
	// Output:
	// 401 authentication_required
	// true
}

func ExampleServer_Token() {
	t := &exampleTB{}
	defer t.done()
	exec, cfg := bank()
	s := agentauthtest.NewServer(t, exec, cfg)
	agent := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", UserID: "alice"}).NewAgent(agentauthtest.Agent{ID: "agt_1"}).
		Grant("pay", map[string]any{"to": "bob"})
	s.Add(t, agent)

	// One token is good for one request.
	token := s.Token(agent)
	body := []byte(`{"capability":"pay","arguments":{"to":"bob","amount":1}}`)
	fmt.Println(s.Do(t, http.MethodPost, "capability/execute", token, body).Status)
	fmt.Println(s.Do(t, http.MethodPost, "capability/execute", token, body).Status)
	// Output:
	// 200
	// 401
}

func ExampleServer_Audience() {
	t := &exampleTB{}
	defer t.done()
	exec, cfg := bank()
	s := agentauthtest.NewServer(t, exec, cfg)
	fmt.Println(s.Audience() == s.URL+"/capability/execute")
	// Output: true
}

func ExampleServer_Close() {
	t := &exampleTB{}
	exec, cfg := bank()
	s := agentauthtest.NewServer(t, exec, cfg)
	s.Close()
	t.done() // a second Close, from the cleanup, does nothing
	_, err := http.Get(s.URL + "/capability/list")
	fmt.Println(err != nil)
	// Output: true
}

func ExampleResponse_Decode() {
	t := &exampleTB{}
	defer t.done()
	exec, cfg := bank()
	r := agentauthtest.Execute(t, exec, cfg, agentauthtest.Call{
		Capability:  "pay",
		Arguments:   map[string]any{"to": "bob", "amount": 2},
		Constraints: map[string]any{"to": "bob"},
		Host:        agentauthtest.Host{UserID: "alice"},
	})
	var out payOut
	r.Decode(t, &out)
	fmt.Println(out.Paid)
	// Output: alice paid bob 2.00
}

func ExampleResponse_Member() {
	t := &exampleTB{}
	defer t.done()
	exec, cfg := bank()
	// The grant does not constrain "to", which pay requires.
	r := agentauthtest.Execute(t, exec, cfg, agentauthtest.Call{
		Capability: "pay",
		Arguments:  map[string]any{"to": "bob", "amount": 2},
	})
	fmt.Println(r.Code, string(r.Member("missing_constraints")))
	// Output: capability_not_granted ["to"]
}
