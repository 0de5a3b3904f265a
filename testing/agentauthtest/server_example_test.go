package agentauthtest_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/agentcap/agentcap/agentauth"
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

type user struct{ ID string }

type payIn struct {
	To     string  `json:"to"`
	Amount float64 `json:"amount" exclusiveMinimum:"0"`
}

type payOut struct {
	Paid string `json:"paid"`
}

// bank is the application under test: one capability, pay, whose grants
// must constrain "to", and its Agent Auth wiring.
func bank() (*core.Executor[string, agentauth.Caller[user]], agentauth.HTTPOptions[user]) {
	pay := core.MustDefine("pay", "Pay someone.",
		func(_ context.Context, from string, in payIn) (payOut, error) {
			return payOut{Paid: fmt.Sprintf("%s paid %s %.2f", from, in.To, in.Amount)}, nil
		}, core.WithRequiredConstraints("to"))
	exec := core.MustExecutor(core.MustRegistry(pay), core.ExecutorConfig[string, agentauth.Caller[user]]{
		CreateContext: func(_ context.Context, c agentauth.Caller[user], _ *core.Definition, _ any) (string, error) {
			return c.Principal.ID, nil
		},
	})
	opts := agentauth.HTTPOptions[user]{
		Principal: func(_ context.Context, s *agentauth.Session) (user, error) { return user{ID: s.Agent.UserID}, nil },
	}
	return exec, opts
}

func ExampleExecute() {
	t := &exampleTB{}
	defer t.done()
	exec, opts := bank()

	r := agentauthtest.Execute(t, exec, opts, "pay",
		map[string]any{"to": "bob", "amount": 12.5},
		map[string]any{"to": "bob", "amount": map[string]any{"max": 100}},
		agentauthtest.WithHostOptions(agentauthtest.WithUser("alice")))
	fmt.Println(r.Status, string(r.Data))

	r = agentauthtest.Execute(t, exec, opts, "pay",
		map[string]any{"to": "bob", "amount": 500},
		map[string]any{"to": "bob", "amount": map[string]any{"max": 100}})
	fmt.Println(r.Status, r.Code, string(r.Member("violations")))
	// Output:
	// 200 {"paid":"alice paid bob 12.50"}
	// 403 constraint_violated [{"field":"amount","constraint":{"max":100},"actual":500}]
}

func ExampleNewServer() {
	t := &exampleTB{}
	defer t.done()
	exec, opts := bank()
	s := agentauthtest.NewServer(t, exec, opts)

	agent := agentauthtest.NewHost("hst_1", agentauthtest.WithUser("alice")).NewAgent("agt_1").
		Grant("pay", map[string]any{"to": map[string]any{"in": []string{"bob", "carol"}}})
	s.Add(t, agent)

	r := s.Execute(t, agent, "pay", map[string]any{"to": "carol", "amount": 3})
	fmt.Println(r.Status, string(r.Data))
	// Output: 200 {"paid":"alice paid carol 3.00"}
}

func ExampleServer_Add() {
	t := &exampleTB{}
	defer t.done()
	exec, opts := bank()
	s := agentauthtest.NewServer(t, exec, opts)
	agent := agentauthtest.NewHost("hst_1").NewAgent("agt_1").Grant("pay", map[string]any{"to": "bob"})
	s.Add(t, agent)

	// Change the agent, then Add it again: the server sees the change.
	agent.Status = agentauth.StatusRevoked
	s.Add(t, agent)
	fmt.Println(s.Execute(t, agent, "pay", map[string]any{"to": "bob", "amount": 1}).Code)
	// Output: agent_revoked
}

func ExampleServer_Execute() {
	t := &exampleTB{}
	defer t.done()
	exec, opts := bank()
	s := agentauthtest.NewServer(t, exec, opts)
	agent := agentauthtest.NewHost("hst_1").NewAgent("agt_1").Grant("pay", map[string]any{"to": "bob"})
	s.Add(t, agent)

	// Arguments given as text are sent as they are, malformed or not.
	r := s.Execute(t, agent, "pay", `{"to":"bob","amount":-1}`)
	fmt.Println(r.Status, r.Code)
	// A token option: this token is only good for another capability.
	r = s.Execute(t, agent, "pay", map[string]any{"to": "bob", "amount": 1}, agentauthtest.WithCapabilities("refund"))
	fmt.Println(r.Status, r.Code)
	// Output:
	// 400 invalid_request
	// 403 capability_not_granted
}

func ExampleServer_BatchExecute() {
	t := &exampleTB{}
	defer t.done()
	exec, opts := bank()
	s := agentauthtest.NewServer(t, exec, opts)
	agent := agentauthtest.NewHost("hst_1", agentauthtest.WithUser("alice")).NewAgent("agt_1").
		Grant("pay", map[string]any{"to": "bob"})
	s.Add(t, agent)

	r := s.BatchExecute(t, agent, []agentauthtest.BatchRequest{
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
	exec, opts := bank()
	s := agentauthtest.NewServer(t, exec, opts)

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
	exec, opts := bank()
	s := agentauthtest.NewServer(t, exec, opts)
	agent := agentauthtest.NewHost("hst_1", agentauthtest.WithUser("alice")).NewAgent("agt_1").Grant("pay", map[string]any{"to": "bob"})
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
	exec, opts := bank()
	s := agentauthtest.NewServer(t, exec, opts)
	fmt.Println(s.Audience() == s.URL+"/capability/execute")
	// Output: true
}

func ExampleServer_Close() {
	t := &exampleTB{}
	exec, opts := bank()
	s := agentauthtest.NewServer(t, exec, opts)
	s.Close()
	t.done() // a second Close, from the cleanup, does nothing
	_, err := http.Get(s.URL + "/capability/list")
	fmt.Println(err != nil)
	// Output: true
}

func ExampleResponse_Decode() {
	t := &exampleTB{}
	defer t.done()
	exec, opts := bank()
	r := agentauthtest.Execute(t, exec, opts, "pay", map[string]any{"to": "bob", "amount": 2}, map[string]any{"to": "bob"},
		agentauthtest.WithHostOptions(agentauthtest.WithUser("alice")))
	var out payOut
	r.Decode(t, &out)
	fmt.Println(out.Paid)
	// Output: alice paid bob 2.00
}

func ExampleResponse_Member() {
	t := &exampleTB{}
	defer t.done()
	exec, opts := bank()
	// The grant does not constrain "to", which pay requires.
	r := agentauthtest.Execute(t, exec, opts, "pay", map[string]any{"to": "bob", "amount": 2}, nil)
	fmt.Println(r.Code, string(r.Member("missing_constraints")))
	// Output: capability_not_granted ["to"]
}

func ExampleWithHostOptions() {
	t := &exampleTB{}
	defer t.done()
	exec, opts := bank()
	r := agentauthtest.Execute(t, exec, opts, "pay", map[string]any{"to": "bob", "amount": 2}, map[string]any{"to": "bob"},
		agentauthtest.WithHostOptions(agentauthtest.WithStatus(agentauth.StatusPending)))
	fmt.Println(r.Status, r.Code)
	// Output: 403 host_pending
}

func ExampleWithAgentOptions() {
	t := &exampleTB{}
	defer t.done()
	exec, opts := bank()
	r := agentauthtest.Execute(t, exec, opts, "pay", map[string]any{"to": "bob", "amount": 2}, map[string]any{"to": "bob"},
		agentauthtest.WithAgentOptions(agentauthtest.WithStatus(agentauth.StatusClaimed)))
	fmt.Println(r.Status, r.Code)
	// Output: 403 agent_claimed
}

func ExampleWithTokenOptions() {
	t := &exampleTB{}
	defer t.done()
	exec, opts := bank()
	r := agentauthtest.Execute(t, exec, opts, "pay", map[string]any{"to": "bob", "amount": 2}, map[string]any{"to": "bob"},
		agentauthtest.WithTokenOptions(agentauthtest.WithType("host+jwt")))
	fmt.Println(r.Status, r.Code)
	// Output: 401 invalid_jwt
}

func ExampleWithServerOptions() {
	t := &exampleTB{}
	defer t.done()
	exec, opts := bank()
	// The server's clock runs ten minutes ahead of the token's.
	ahead := func() time.Time { return time.Now().Add(10 * time.Minute) }
	r := agentauthtest.Execute(t, exec, opts, "pay", map[string]any{"to": "bob", "amount": 2}, map[string]any{"to": "bob"},
		agentauthtest.WithServerOptions(agentauthtest.WithServerClock(ahead)))
	fmt.Println(r.Status, r.Code, r.Message)
	// Output: 401 invalid_jwt agent JWT too old
}

func ExampleWithServerClock() {
	t := &exampleTB{}
	defer t.done()
	exec, opts := bank()
	now := func() time.Time { return time.Unix(1767268800, 0) }
	s := agentauthtest.NewServer(t, exec, opts, agentauthtest.WithServerClock(now))
	// The host mints with the same clock, so its tokens are current.
	agent := agentauthtest.NewHost("hst_1", agentauthtest.WithClock(now)).NewAgent("agt_1").Grant("pay", map[string]any{"to": "bob"})
	s.Add(t, agent)
	fmt.Println(s.Execute(t, agent, "pay", map[string]any{"to": "bob", "amount": 1}).Status)
	// Output: 200
}

func ExampleWithReplayCache() {
	t := &exampleTB{}
	defer t.done()
	exec, opts := bank()
	// Share one cache between two servers, as instances of one location
	// would through Redis: a token used on one is refused by the other.
	cache := agentauth.NewMemoryReplayCache(0)
	a := agentauthtest.NewServer(t, exec, opts, agentauthtest.WithReplayCache(cache))
	b := agentauthtest.NewServer(t, exec, opts, agentauthtest.WithReplayCache(cache))
	agent := agentauthtest.NewHost("hst_1").NewAgent("agt_1").Grant("pay", map[string]any{"to": "bob"})
	a.Add(t, agent)
	b.Add(t, agent)

	token := agent.Token(a.Audience(), agentauthtest.WithClaim("aud", []string{a.Audience(), b.Audience()}))
	body := []byte(`{"capability":"pay","arguments":{"to":"bob","amount":1}}`)
	fmt.Println(a.Do(t, http.MethodPost, "capability/execute", token, body).Status)
	fmt.Println(b.Do(t, http.MethodPost, "capability/execute", token, body).Code)
	// Output:
	// 200
	// invalid_jwt
}
