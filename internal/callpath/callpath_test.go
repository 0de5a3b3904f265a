// Package callpath_test measures how a request walks through the kit's
// packages: an HTTP execute of an Agent Auth agent must enter each
// package at most twice, and an MCP tools/call must never enter httpx. The walk is observed from inside: the test's own pieces
// (the session source, the application's authorizer, the context
// function, the handler, a value's JSON encoding) record the call stack
// each time they run, and every stack is read for the package boundaries
// it crosses.
package callpath_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/mcpx"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

const module = "github.com/agentcap/agentcap"

// stacks records call stacks as lists of the kit's packages, outermost
// first, one entry per contiguous run of frames in one package.
type stacks struct {
	mu   sync.Mutex
	runs [][]crossing
}

// crossing is where a stack enters a package: the package and the
// function (with its line) that called into it.
type crossing struct {
	pkg    string
	caller string
}

func (s *stacks) record() {
	pcs := make([]uintptr, 128)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var all []runtime.Frame
	for {
		f, more := frames.Next()
		all = append(all, f)
		if !more {
			break
		}
	}
	slices.Reverse(all) // outermost first
	var run []crossing
	prev, prevFrame := "", ""
	for _, f := range all {
		pkg := packageOf(f.Function)
		if pkg != prev {
			if strings.HasPrefix(pkg, module) && !strings.HasPrefix(pkg, module+"/internal/callpath") {
				run = append(run, crossing{pkg: pkg, caller: prevFrame})
			}
			prev = pkg
		}
		prevFrame = f.Function
	}
	s.mu.Lock()
	s.runs = append(s.runs, run)
	s.mu.Unlock()
}

// packageOf returns the import path of the package of a function as
// runtime names it ("example.com/a/b.(*T).M" is in "example.com/a/b").
func packageOf(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return fn
	}
	return fn[:slash+1+dot]
}

// check returns the packages the recorded stacks enter, each with the
// number of distinct call sites entering it, and what is wrong: a package
// entered from more than max call sites.
func (s *stacks) check(max int) (map[string]int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var problems []string
	if len(s.runs) == 0 {
		problems = append(problems, "no stack was recorded")
	}
	entries := map[string]map[string]bool{}
	for _, run := range s.runs {
		for _, c := range run {
			if entries[c.pkg] == nil {
				entries[c.pkg] = map[string]bool{}
			}
			entries[c.pkg][c.caller] = true
		}
	}
	counts := map[string]int{}
	for pkg, callers := range entries {
		counts[pkg] = len(callers)
		if len(callers) > max {
			problems = append(problems, fmt.Sprintf("%s is entered from %d places, more than %d: %v", pkg, len(callers), max, keys(callers)))
		}
	}
	return counts, problems
}

// mustPass fails t with the problems of check.
func (s *stacks) mustPass(t *testing.T, max int) map[string]int {
	t.Helper()
	counts, problems := s.check(max)
	for _, p := range problems {
		t.Error(p)
	}
	return counts
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// account is an input field whose decoding folds letter case: the grant's
// authorizer then asks the executor for the field's decoded value, and
// the value's encoding records that stack.
type account string

var rec = &stacks{}

func (a *account) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*a = account(strings.ToLower(s))
	return nil
}

// JSONSchema describes the field, whose own JSON methods hide its form.
func (account) JSONSchema() json.RawMessage {
	return json.RawMessage(`{"type":"string","minLength":1}`)
}

func (a account) MarshalJSON() ([]byte, error) {
	rec.record()
	return json.Marshal(string(a))
}

type balanceIn struct {
	Account account `json:"account"`
}

type balanceOut struct {
	Cents int `json:"cents"`
}

var checkBalance = core.MustDefine("check_balance", "Read an account's balance.",
	func(_ context.Context, user string, in balanceIn) (balanceOut, error) {
		rec.record()
		return balanceOut{Cents: 1250}, nil
	}, core.WithRequiredConstraints("account"))

// recordingSessions records the stack of the verifier's call into the
// session source.
type recordingSessions struct{ agentauth.SessionSource }

func (r recordingSessions) Session(ctx context.Context, token string) (*agentauth.Session, error) {
	rec.record()
	return r.SessionSource.Session(ctx, token)
}

// location is an Agent Auth capability location over one test agent whose
// grant constrains the account.
func location(t *testing.T, audience string) (*core.Executor, auth.Verifier, *agentauthtest.Agent) {
	t.Helper()
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", UserID: "alice"})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agt_1", Grants: []agentauth.Grant{{
		Capability: "check_balance", Status: "active",
		Constraints: map[string]json.RawMessage{"account": json.RawMessage(`{"in":["acc_1","ACC_1"]}`)},
	}}})
	dir, err := agentauthtest.NewDirectory([]*agentauthtest.Host{host}, []*agentauthtest.Agent{agent})
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{audience}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := agentauth.New(agentauth.Config{
		Sessions: recordingSessions{sessions},
		Issuer:   "https://bank.example",
		Authorize: func(context.Context, *auth.Identity, *auth.Call) error {
			rec.record()
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	exec := core.MustExecutor(core.MustRegistry(checkBalance),
		func(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (string, error) {
			rec.record()
			return id.UserID, nil
		}, core.Config{})
	return exec, v, agent
}

func TestHTTPExecute(t *testing.T) {
	*rec = stacks{}
	const aud = "https://bank.example/capability/execute"
	exec, v, agent := location(t, aud)
	h, err := httpx.New(exec, httpx.Config{Verifier: v})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"capability":"check_balance","arguments":{"account":"ACC_1"}}`
	req := httptest.NewRequest(http.MethodPost, "/capability/execute", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+agent.Token(agentauthtest.Token{Audience: aud}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	// The constrained account was changed by decoding, which the grant
	// check refuses: the whole path ran, the authorizer's question about
	// the decoded value included.
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "transformed_fields") {
		t.Fatalf("execute: %d %s", w.Code, w.Body)
	}
	counts := rec.mustPass(t, 2)
	for _, pkg := range []string{"httpx", "agentauth", "core"} {
		if counts[module+"/"+pkg] == 0 {
			t.Errorf("no stack went through %s: %v", pkg, counts)
		}
	}
	t.Logf("entries per package: %v", counts)

	// A call the grant admits reaches the handler through the same path.
	*rec = stacks{}
	req = httptest.NewRequest(http.MethodPost, "/capability/execute", strings.NewReader(`{"capability":"check_balance","arguments":{"account":"acc_1"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+agent.Token(agentauthtest.Token{Audience: aud}))
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK || w.Body.String() != `{"data":{"cents":1250}}`+"\n" {
		t.Fatalf("execute: %d %s", w.Code, w.Body)
	}
	rec.mustPass(t, 2)
}

func TestMCPToolsCallNeverEntersHTTPX(t *testing.T) {
	*rec = stacks{}
	const resource = "https://bank.example/mcp"
	exec, v, agent := location(t, resource)
	srv, err := mcpx.New(exec, mcpx.Config{Verifier: v, Resource: resource})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	tokens := &tokenTransport{agent: agent, aud: resource}
	c := mcp.NewClient(&mcp.Implementation{Name: "callpath"}, nil)
	ctx := context.Background()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: tokens}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "check_balance", Arguments: map[string]any{"account": "acc_1"}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call: %v %+v", err, res)
	}
	counts, _ := rec.check(2)
	if counts[module+"/httpx"] != 0 {
		t.Errorf("a tools/call entered httpx: %v", counts)
	}
	if counts[module+"/mcpx"] == 0 {
		t.Errorf("no stack went through mcpx: %v", counts)
	}
	t.Logf("entries per package: %v", counts)
}

// tokenTransport signs a fresh agent JWT for every request, as an Agent
// Auth client of an MCP endpoint does.
type tokenTransport struct {
	agent *agentauthtest.Agent
	aud   string
}

func (t *tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.agent.Token(agentauthtest.Token{Audience: t.aud}))
	return http.DefaultTransport.RoundTrip(r)
}

// TestRecorder checks the measuring itself: package names, and that too
// many entries are caught.
func TestRecorder(t *testing.T) {
	for fn, want := range map[string]string{
		"github.com/agentcap/agentcap/core.(*Executor).Execute": module + "/core",
		"github.com/agentcap/agentcap.NewError":                 module,
		"github.com/agentcap/agentcap/core.Call[...]":           module + "/core",
		"net/http.(*conn).serve":                                "net/http",
	} {
		if got := packageOf(fn); got != want {
			t.Errorf("packageOf(%q) = %q, want %q", fn, got, want)
		}
	}
	var s stacks
	func() { s.record() }()
	if len(s.runs) != 1 {
		t.Fatalf("runs: %v", s.runs)
	}
	bad := stacks{runs: [][]crossing{
		{{pkg: "a", caller: "x"}, {pkg: "b", caller: "a.f"}, {pkg: "a", caller: "b.g"}},
		{{pkg: "c", caller: "1"}}, {{pkg: "c", caller: "2"}}, {{pkg: "c", caller: "3"}},
	}}
	counts, problems := bad.check(2)
	if len(problems) != 1 || counts["c"] != 3 || counts["a"] != 2 || counts["b"] != 1 {
		t.Errorf("check found %v (counts %v), want the three entries of c only", problems, counts)
	}
}
