package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// buildBank compiles the command into a temporary directory.
func buildBank(t *testing.T) string {
	t.Helper()
	return buildCommand(t, ".", "bank")
}

// buildCommand compiles the command in pkg (relative to this directory)
// into a temporary directory as name.
func buildCommand(t *testing.T, pkg, name string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build %s: %v", pkg, err)
	}
	bin := filepath.Join(t.TempDir(), name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// syncBuffer collects a process's output while it runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// bankProcess is a running bank.
type bankProcess struct {
	url    string
	cmd    *exec.Cmd
	logs   *syncBuffer
	done   chan struct{}
	client *http.Client
}

// freeAddr returns a loopback address nobody listened on a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startBank runs the binary on a free loopback port with directory and
// extra flags, and waits until it serves its discovery document.
func startBank(t *testing.T, bin, directory string, extra ...string) *bankProcess {
	t.Helper()
	return startBankIn(t, bin, "", func(addr, url string) []string {
		return append([]string{"-addr", addr, "-issuer", url, "-directory", directory}, extra...)
	})
}

// startBankIn runs the binary in dir ("" for the test's directory) with
// the arguments args builds for a free loopback address and its URL, and
// waits until it serves its discovery document. Another process may take
// the port between freeAddr and the bank's listen, so a failed start is
// retried.
func startBankIn(t *testing.T, bin, dir string, args func(addr, url string) []string) *bankProcess {
	t.Helper()
	for attempt := 0; ; attempt++ {
		p, err := tryStart(t, bin, dir, args)
		if err == nil {
			t.Cleanup(func() { p.stop(t) })
			return p
		}
		if attempt == 2 {
			t.Fatalf("the bank did not start: %v", err)
		}
	}
}

func tryStart(t *testing.T, bin, dir string, args func(addr, url string) []string) (*bankProcess, error) {
	addr := freeAddr(t)
	url := "http://" + addr
	p := &bankProcess{
		url:    url,
		cmd:    exec.Command(bin, args(addr, url)...),
		logs:   &syncBuffer{},
		done:   make(chan struct{}),
		client: &http.Client{Timeout: 10 * time.Second},
	}
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		// The exit status is read from ProcessState once done is closed.
		_ = p.cmd.Wait()
		close(p.done)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return nil, fmt.Errorf("exited early: %s", p.logs)
		default:
		}
		resp, err := p.client.Get(url + agentcap.DiscoveryPath)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return nil, fmt.Errorf("not ready after 30s: %s", p.logs)
}

// stop asks the bank to shut down, as SIGTERM does in production, and
// kills it if it does not.
func (p *bankProcess) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if code := p.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("the bank exited with %d after SIGTERM:\n%s", code, p.logs)
		}
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("the bank ignored SIGTERM:\n%s", p.logs)
	}
}

// reply is an answer of the bank.
type reply struct {
	status int
	header http.Header
	body   []byte
	m      map[string]any
}

func (r reply) code() string {
	s, _ := r.m["error"].(string)
	return s
}

// roundTrip sends one request to a running bank: a JSON body when body is
// not empty, a bearer token when token is not empty. It returns the status,
// the headers and the whole body.
func roundTrip(t *testing.T, client *http.Client, url, method, path, token, body string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func (p *bankProcess) do(t *testing.T, method, path, token, body string) reply {
	t.Helper()
	status, header, b := roundTrip(t, p.client, p.url, method, path, token, body)
	r := reply{status: status, header: header, body: b}
	if err := json.Unmarshal(b, &r.m); err != nil {
		t.Fatalf("%s %s: the body is not a JSON object: %v: %s", method, path, err, b)
	}
	return r
}

func (p *bankProcess) execute(t *testing.T, token, capability, args string) reply {
	t.Helper()
	body := `{"capability":"` + capability + `"}`
	if args != "" {
		body = `{"capability":"` + capability + `","arguments":` + args + `}`
	}
	return p.do(t, http.MethodPost, "/capability/execute", token, body)
}

// executeConfirmed executes as an agent that confirms what it is asked
// to: a 428 confirmation_required is answered by executing again, with a
// fresh token from token, carrying the confirmation token that came with
// the refusal.
func (p *bankProcess) executeConfirmed(t *testing.T, token func() string, capability, args string) reply {
	t.Helper()
	r := p.execute(t, token(), capability, args)
	if r.status != http.StatusPreconditionRequired || r.code() != "confirmation_required" {
		return r
	}
	c, _ := r.m["confirmation"].(map[string]any)
	tok, _ := c["token"].(string)
	if tok == "" {
		t.Fatalf("428 without a confirmation token: %s", r.body)
	}
	return p.do(t, http.MethodPost, "/capability/execute", token(),
		`{"capability":"`+capability+`","arguments":`+args+`,"confirmation_token":"`+tok+`"}`)
}

// fixture is the directory the bank is started with.
type fixture struct {
	file   string
	agents map[string]*agentauthtest.Agent
	hosts  map[string]*agentauthtest.Host
	jwks   *httptest.Server
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{agents: map[string]*agentauthtest.Agent{}, hosts: map[string]*agentauthtest.Host{}}
	host := func(h agentauthtest.Host) *agentauthtest.Host {
		made := agentauthtest.NewHost(h)
		f.hosts[h.ID] = made
		return made
	}
	alice := host(agentauthtest.Host{ID: "hst_alice", UserID: "user_alice"})
	bob := host(agentauthtest.Host{ID: "hst_bob", UserID: "user_bob"})
	// Dave is a user of the bank without accounts.
	dave := host(agentauthtest.Host{ID: "hst_dave", UserID: "user_dave"})
	robots := host(agentauthtest.Host{ID: "hst_robots"})
	revoked := host(agentauthtest.Host{ID: "hst_revoked", UserID: "user_alice", Status: agentcap.StatusRevoked})
	pending := host(agentauthtest.Host{ID: "hst_pending", UserID: "user_alice", Status: agentcap.StatusPending})

	everyday := func(a *agentauthtest.Agent) *agentauthtest.Agent {
		return a.Grant("list_accounts", nil).Grant("check_balance", nil).Grant("exchange_rate", nil)
	}
	// The JWKS of one agent is served on loopback.
	var jwksAgent *agentauthtest.Agent
	f.jwks = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwksAgent.JWKS())
	}))
	t.Cleanup(f.jwks.Close)
	jwksAgent = everyday(alice.NewAgent(agentauthtest.Agent{ID: "agt_alice_jwks", JWKSURL: f.jwks.URL + "/jwks.json"}))

	agents := []*agentauthtest.Agent{
		everyday(alice.NewAgent(agentauthtest.Agent{ID: "agt_alice"})).Grant("transfer_money", map[string]any{
			"destination_account": map[string]any{"not_in": []string{"acc_666"}},
			"amount":              map[string]any{"max": 1000},
			"currency":            "USD",
		}),
		// Any amount in any currency, to Bob: no bound, so no currency.
		alice.NewAgent(agentauthtest.Agent{ID: "agt_alice_to_bob"}).Grant("transfer_money", map[string]any{"destination_account": "acc_456"}),
		// A bound on the amount without its currency: no use.
		alice.NewAgent(agentauthtest.Agent{ID: "agt_alice_unitless"}).Grant("transfer_money", map[string]any{
			"destination_account": "acc_456",
			"amount":              map[string]any{"max": 1000},
		}),
		alice.NewAgent(agentauthtest.Agent{ID: "agt_alice_currency"}).Grant("transfer_money", map[string]any{
			"destination_account": "acc_456",
			"currency":            map[string]any{"in": []string{"usd", "USD"}},
		}),
		alice.NewAgent(agentauthtest.Agent{ID: "agt_alice_loose"}).Grant("transfer_money", nil).Grant("exchange_rate", nil),
		alice.NewAgent(agentauthtest.Agent{ID: "agt_alice_badop"}).Grant("transfer_money", map[string]any{
			"destination_account": "acc_456",
			"amount":              map[string]any{"between": []int{1, 10}},
		}),
		jwksAgent,
		everyday(bob.NewAgent(agentauthtest.Agent{ID: "agt_bob"})).Grant("transfer_money", map[string]any{"destination_account": "acc_123"}),
		everyday(dave.NewAgent(agentauthtest.Agent{ID: "agt_dave"})),
		robots.NewAgent(agentauthtest.Agent{ID: "agt_robot", Mode: agentcap.ModeAutonomous}).
			Grant("exchange_rate", nil).Grant("check_balance", nil),
		everyday(alice.NewAgent(agentauthtest.Agent{ID: "agt_revoked", Status: agentcap.StatusRevoked})),
		everyday(alice.NewAgent(agentauthtest.Agent{ID: "agt_pending", Status: agentcap.StatusPending})),
		everyday(alice.NewAgent(agentauthtest.Agent{ID: "agt_expired", Status: agentcap.StatusExpired})),
		everyday(alice.NewAgent(agentauthtest.Agent{ID: "agt_rejected", Status: agentcap.StatusRejected})),
		everyday(alice.NewAgent(agentauthtest.Agent{ID: "agt_claimed", Status: agentcap.StatusClaimed})),
		everyday(revoked.NewAgent(agentauthtest.Agent{ID: "agt_of_revoked_host"})),
		everyday(pending.NewAgent(agentauthtest.Agent{ID: "agt_of_pending_host"})),
	}
	for _, a := range agents {
		f.agents[a.ID] = a
	}
	f.file = filepath.Join(t.TempDir(), "directory.json")
	if err := agentauthtest.WriteDirectoryFile(f.file, []*agentauthtest.Host{alice, bob, dave, robots, revoked, pending}, agents); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestBank(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the command")
	}
	bin := buildBank(t)
	t.Run("command line", func(t *testing.T) { testCommandLine(t, bin) })

	f := newFixture(t)
	p := startBank(t, bin, f.file, "-dev-allow-loopback-jwks")
	audience := p.url + "/capability/execute"
	token := func(agent string, tok ...agentauthtest.Token) string {
		a, ok := f.agents[agent]
		if !ok {
			t.Fatalf("no agent %q", agent)
		}
		var tk agentauthtest.Token
		if len(tok) > 0 {
			tk = tok[0]
		}
		if tk.Audience == "" {
			tk.Audience = audience
		}
		return a.Token(tk)
	}

	t.Run("discovery", func(t *testing.T) { testDiscovery(t, p) })
	t.Run("listing", func(t *testing.T) { testListing(t, p, token) })
	t.Run("happy paths", func(t *testing.T) { testHappyPaths(t, p, token) })
	t.Run("errors", func(t *testing.T) { testErrors(t, p, f, token) })
	t.Run("batch", func(t *testing.T) { testBatch(t, p, token) })

	t.Run("loopback JWKS needs the flag", func(t *testing.T) {
		strict := startBank(t, bin, f.file)
		r := strict.execute(t, f.agents["agt_alice_jwks"].Token(agentauthtest.Token{Audience: strict.url + "/capability/execute"}), "list_accounts", "")
		if r.status != 401 || r.code() != "invalid_jwt" {
			t.Errorf("%d %s", r.status, r.body)
		}
	})

	t.Run("one line per execution", func(t *testing.T) { testLogLines(t, bin, f) })

	// Stop now to read the whole log.
	p.stop(t)
	logs := p.logs.String()
	// Account ids are argument values; none may reach the log.
	for _, leak := range []string{"s3cret", "acc_", `"amount"`, "source_account", "ledger"} {
		if strings.Contains(logs, leak) {
			t.Errorf("the log holds %q:\n%s", leak, logs)
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(logs, "\n"), "\n") {
		if _, ok := parseLogLine(line); !ok {
			t.Errorf("unexpected log line %q", line)
		}
	}
	for _, line := range []string{
		"msg=execution agent=agt_alice capability=check_balance outcome=completed duration=",
		"msg=execution agent=agt_alice capability=check_balance outcome=internal_error duration=",
		"msg=execution agent=agt_bob capability=transfer_money outcome=insufficient_funds duration=",
		"msg=execution agent=agt_robot capability=check_balance outcome=unauthorized duration=",
	} {
		if !strings.Contains(logs, line) {
			t.Errorf("the log lacks %q:\n%s", line, logs)
		}
	}
}

// logLinePattern is the whole of a line the bank logs by default: the
// start and the end of serving, and one line per execution.
var logLinePattern = regexp.MustCompile(`^time=\S+ level=INFO (?:msg=listening addr=\S+ issuer=\S+|msg="shutting down"|msg=execution agent=(\S*) capability=(\S+) outcome=(\S+) duration=\S+)$`)

// parseLogLine reads a line of the default log. For an execution line it
// returns "agent capability outcome"; for the others "".
func parseLogLine(line string) (string, bool) {
	m := logLinePattern.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	if m[3] == "" {
		return "", true
	}
	return m[1] + " " + m[2] + " " + m[3], true
}

// testLogLines runs a known set of calls against a fresh bank and reads
// its whole log: by default exactly one line per execution and nothing
// from the arguments, even for an internal error whose hidden cause
// quotes an account id; with -debug, that cause is logged too.
func testLogLines(t *testing.T, bin string, f *fixture) {
	calls := func(t *testing.T, p *bankProcess) {
		aud := p.url + "/capability/execute"
		alice := f.agents["agt_alice"]
		steps := []struct {
			capability, args string
			status           int
		}{
			{"check_balance", `{"account_id":"acc_123"}`, 200},
			{"check_balance", `{"account_id":"acc_999"}`, 500},
			{"transfer_money", `{"source_account":"acc_123","destination_account":"acc_666","amount":1,"currency":"USD"}`, 403},
			{"close_account", ``, 404},
		}
		for _, s := range steps {
			if r := p.execute(t, alice.Token(agentauthtest.Token{Audience: aud}), s.capability, s.args); r.status != s.status {
				t.Fatalf("%s: %d %s", s.capability, r.status, r.body)
			}
		}
		r := p.do(t, http.MethodPost, "/capability/batch-execute", alice.Token(agentauthtest.Token{Audience: aud}), `{"requests":[
			{"id":"a","capability":"check_balance","arguments":{"account_id":"acc_124"}},
			{"id":"b","capability":"check_balance","arguments":{"account_id":"acc_999"}}]}`)
		if r.status != 200 {
			t.Fatalf("batch: %d %s", r.status, r.body)
		}
		// Refused before any execution: no line.
		tok := alice.Token(agentauthtest.Token{Audience: aud})
		p.execute(t, tok, "exchange_rate", `{"from":"USD","to":"EUR"}`)
		if r := p.execute(t, tok, "exchange_rate", `{"from":"USD","to":"EUR"}`); r.status != 401 {
			t.Fatalf("replay: %d %s", r.status, r.body)
		}
		if r := p.do(t, http.MethodGet, "/capability/list", "", ""); r.status != 200 {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
	}
	wantExecutions := []string{
		"agt_alice check_balance completed",
		"agt_alice check_balance completed",
		"agt_alice check_balance internal_error",
		"agt_alice check_balance internal_error",
		"agt_alice close_account capability_not_found",
		"agt_alice exchange_rate completed",
		"agt_alice transfer_money constraint_violated",
	}

	t.Run("default", func(t *testing.T) {
		p := startBank(t, bin, f.file)
		calls(t, p)
		p.stop(t)
		logs := p.logs.String()
		lines := strings.Split(strings.TrimSuffix(logs, "\n"), "\n")
		var executions []string
		for _, line := range lines {
			e, ok := parseLogLine(line)
			if !ok {
				t.Errorf("unexpected log line %q", line)
			}
			if e != "" {
				executions = append(executions, e)
			}
		}
		// Batch items run concurrently: compare in sorted order.
		slices.Sort(executions)
		if diff := cmp.Diff(wantExecutions, executions); diff != "" {
			t.Errorf("executions (-want +got):\n%s\n%s", diff, logs)
		}
		if want := len(wantExecutions) + 2; len(lines) != want {
			t.Errorf("%d lines, want %d (listening, one per execution, shutting down):\n%s", len(lines), want, logs)
		}
		for _, leak := range []string{"acc_", "s3cret", "ledger", "capability failed"} {
			if strings.Contains(logs, leak) {
				t.Errorf("the log holds %q:\n%s", leak, logs)
			}
		}
	})

	t.Run("debug", func(t *testing.T) {
		p := startBank(t, bin, f.file, "-debug")
		calls(t, p)
		p.stop(t)
		logs := p.logs.String()
		causes := 0
		for _, line := range strings.Split(strings.TrimSuffix(logs, "\n"), "\n") {
			if _, ok := parseLogLine(line); ok {
				continue
			}
			if !strings.Contains(line, "debug=true") || !strings.Contains(line, "acc_999") {
				t.Errorf("unexpected log line %q", line)
			}
			causes++
		}
		if causes != 2 {
			t.Errorf("%d debug lines, want one per internal error (2):\n%s", causes, logs)
		}
		if strings.Contains(logs, "s3cret") {
			t.Errorf("the debug log holds the ledger password:\n%s", logs)
		}
	})
}

func testCommandLine(t *testing.T, bin string) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no directory and no database", []string{"-db", ""}, 2, "-db must name a file"},
		{"unknown flag", []string{"-nope"}, 2, "flag provided but not defined"},
		{"missing file", []string{"-directory", filepath.Join(dir, "absent.json")}, 1, "absent.json"},
		{"malformed file", []string{"-directory", write("bad.json", `{"hosts": [`)}, 1, "bad.json"},
		{"unknown field", []string{"-directory", write("extra.json", `{"hosts": [], "agents": [], "users": []}`)}, 1, `unknown member "users"`},
		{"bad issuer", []string{"-directory", write("empty.json", `{"hosts": [], "agents": []}`), "-issuer", "ftp://x"}, 2, "-issuer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, c.args...).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != c.code {
				t.Fatalf("err %v, want exit code %d:\n%s", err, c.code, out)
			}
			if !strings.Contains(string(out), c.want) {
				t.Errorf("output lacks %q:\n%s", c.want, out)
			}
		})
	}
}

func testDiscovery(t *testing.T, p *bankProcess) {
	r := p.do(t, http.MethodGet, agentcap.DiscoveryPath, "", "")
	if r.status != 200 || r.header.Get("Cache-Control") != "public, max-age=300" {
		t.Fatalf("%d %v", r.status, r.header)
	}
	want := map[string]any{
		"issuer":           p.url,
		"default_location": p.url + "/capability/execute",
		"version":          "1.0-draft",
		"algorithms":       []any{"Ed25519"},
		"endpoints": map[string]any{
			"capabilities":        "/capability/list",
			"describe_capability": "/capability/describe",
			"execute":             "/capability/execute",
		},
	}
	got := map[string]any{}
	for k := range want {
		got[k] = r.m[k]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("document (-want +got):\n%s", diff)
	}
}

type listed struct {
	Name                string   `json:"name"`
	ApprovalStrength    string   `json:"approval_strength"`
	RequiredConstraints []string `json:"required_constraints,omitempty"`
	GrantStatus         string   `json:"grant_status,omitempty"`
}

func testListing(t *testing.T, p *bankProcess, token func(string, ...agentauthtest.Token) string) {
	list := func(tok string) []listed {
		r := p.do(t, http.MethodGet, "/capability/list", tok, "")
		if r.status != 200 {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		var body struct{ Capabilities []listed }
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatal(err)
		}
		return body.Capabilities
	}
	cases := []struct {
		name  string
		token string
		want  []listed
	}{
		{"anonymous", "", []listed{{Name: "exchange_rate", ApprovalStrength: "none"}}},
		{"autonomous agent", token("agt_robot"), []listed{{Name: "exchange_rate", ApprovalStrength: "none", GrantStatus: "granted"}}},
		{"delegated agent", token("agt_alice_loose"), []listed{
			{Name: "check_balance", ApprovalStrength: "session", GrantStatus: "not_granted"},
			{Name: "exchange_rate", ApprovalStrength: "none", GrantStatus: "granted"},
			{Name: "list_accounts", ApprovalStrength: "session", GrantStatus: "not_granted"},
			{Name: "statement_export", ApprovalStrength: "session", GrantStatus: "not_granted"},
			{Name: "transfer_money", ApprovalStrength: "webauthn", RequiredConstraints: []string{"destination_account"}, GrantStatus: "granted"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, list(c.token)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	t.Run("describe", func(t *testing.T) {
		r := p.do(t, http.MethodGet, "/capability/describe?name=transfer_money", token("agt_alice"), "")
		if r.status != 200 || r.m["risk"] != "high" || r.m["approval_strength"] != "webauthn" || r.m["grant_status"] != "granted" {
			t.Fatalf("%d %s", r.status, r.body)
		}
		currency := r.m["input"].(map[string]any)["properties"].(map[string]any)["currency"].(map[string]any)
		if currency["pattern"] != "^(?:[Uu][Ss][Dd]|[Ee][Uu][Rr]|[Gg][Bb][Pp])$" {
			t.Errorf("currency schema %v", currency)
		}
		// list_accounts answers a bare array of account summaries.
		r = p.do(t, http.MethodGet, "/capability/describe?name=list_accounts", token("agt_alice"), "")
		output, _ := r.m["output"].(map[string]any)
		items, _ := output["items"].(map[string]any)
		if r.status != 200 || output["type"] != "array" || items["type"] != "object" ||
			!cmp.Equal(items["required"], []any{"account_id", "name", "type", "currency"}) {
			t.Errorf("list_accounts output schema: %d %s", r.status, r.body)
		}
		if r := p.do(t, http.MethodGet, "/capability/describe?name=exchange_rate", "", ""); r.status != 200 {
			t.Errorf("anonymous describe of exchange_rate: %d", r.status)
		}
		if r := p.do(t, http.MethodGet, "/capability/describe?name=check_balance", "", ""); r.status != 404 || r.code() != "capability_not_found" {
			t.Errorf("anonymous describe of check_balance: %d %s", r.status, r.body)
		}
	})
}

func testHappyPaths(t *testing.T, p *bankProcess, token func(string, ...agentauthtest.Token) string) {
	cases := []struct {
		name, agent, capability, args string
		want                          string
	}{
		{"list accounts", "agt_alice", "list_accounts", "",
			`[{"account_id":"acc_123","name":"Everyday checking","type":"checking","currency":"USD"},{"account_id":"acc_124","name":"Rainy day savings","type":"savings","currency":"EUR"}]`},
		{"bob's accounts", "agt_bob", "list_accounts", "",
			`[{"account_id":"acc_456","name":"Main checking","type":"checking","currency":"USD"}]`},
		{"a user without accounts", "agt_dave", "list_accounts", "", `[]`},
		{"balance", "agt_alice", "check_balance", `{"account_id":"acc_123"}`, `{"account_id":"acc_123","balance":5000,"currency":"USD"}`},
		{"balance in euros", "agt_alice", "check_balance", `{"account_id":"acc_124"}`, `{"account_id":"acc_124","balance":1200,"currency":"EUR"}`},
		{"bob's balance", "agt_bob", "check_balance", `{"account_id":"acc_456"}`, `{"account_id":"acc_456","balance":300,"currency":"USD"}`},
		{"rate", "agt_alice", "exchange_rate", `{"from":"USD","to":"GBP"}`, `{"from":"USD","to":"GBP","rate":0.79}`},
		{"rate for an autonomous agent", "agt_robot", "exchange_rate", `{"from":"EUR","to":"USD"}`, `{"from":"EUR","to":"USD","rate":1.09}`},
		{"JWKS-keyed agent", "agt_alice_jwks", "check_balance", `{"account_id":"acc_124"}`, `{"account_id":"acc_124","balance":1200,"currency":"EUR"}`},
		{"transfer", "agt_alice", "transfer_money",
			`{"source_account":"acc_123","destination_account":"acc_456","amount":100,"currency":"USD"}`,
			`{"transfer_id":"tr_000001","status":"completed","amount":100,"currency":"USD"}`},
		{"the money arrived", "agt_bob", "check_balance", `{"account_id":"acc_456"}`, `{"account_id":"acc_456","balance":400,"currency":"USD"}`},
		{"currency in lower case, converted", "agt_alice_to_bob", "transfer_money",
			`{"source_account":"acc_124","destination_account":"acc_456","amount":10.5,"currency":"usd"}`,
			`{"transfer_id":"tr_000002","status":"completed","amount":10.5,"currency":"USD"}`},
		// 10.50 USD cost 9.66 EUR.
		{"the euros left", "agt_alice", "check_balance", `{"account_id":"acc_124"}`, `{"account_id":"acc_124","balance":1190.34,"currency":"EUR"}`},
		{"constrained currency already upper case", "agt_alice_currency", "transfer_money",
			`{"source_account":"acc_123","destination_account":"acc_456","amount":1,"currency":"USD"}`,
			`{"transfer_id":"tr_000003","status":"completed","amount":1,"currency":"USD"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := p.executeConfirmed(t, func() string { return token(c.agent) }, c.capability, c.args)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if got := string(jsonMember(t, r.body, "data")); got != c.want {
				t.Errorf("data %s, want %s", got, c.want)
			}
		})
	}
	t.Run("issuer as audience", func(t *testing.T) {
		r := p.execute(t, token("agt_alice", agentauthtest.Token{Claims: map[string]any{"aud": p.url}}), "exchange_rate", `{"from":"USD","to":"USD"}`)
		if r.status != 200 {
			t.Errorf("%d %s", r.status, r.body)
		}
	})
}

func jsonMember(t *testing.T, body []byte, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m[name]
}

func testErrors(t *testing.T, p *bankProcess, f *fixture, token func(string, ...agentauthtest.Token) string) {
	type tc struct {
		name       string
		auth       string // the bearer token; "" sends none
		capability string
		args       string
		status     int
		code       string
		members    map[string]string // member -> its exact JSON
	}
	replayed := token("agt_alice")
	if r := p.execute(t, replayed, "exchange_rate", `{"from":"USD","to":"EUR"}`); r.status != 200 {
		t.Fatalf("first use of the token: %d %s", r.status, r.body)
	}
	cases := []tc{
		{name: "unknown account", auth: token("agt_alice"), capability: "check_balance", args: `{"account_id":"acc_000"}`, status: 404, code: "account_not_found"},
		{name: "someone else's account", auth: token("agt_alice"), capability: "check_balance", args: `{"account_id":"acc_456"}`, status: 404, code: "account_not_found"},
		{name: "ledger outage", auth: token("agt_alice"), capability: "check_balance", args: `{"account_id":"acc_999"}`, status: 500, code: "internal_error",
			members: map[string]string{"message": `"internal error"`}},
		{name: "insufficient funds", auth: token("agt_bob"), capability: "transfer_money",
			args: `{"source_account":"acc_456","destination_account":"acc_123","amount":9999,"currency":"USD"}`, status: 409, code: "insufficient_funds"},
		{name: "source not owned", auth: token("agt_bob"), capability: "transfer_money",
			args: `{"source_account":"acc_123","destination_account":"acc_123","amount":1,"currency":"USD"}`, status: 404, code: "account_not_found"},
		{name: "unknown destination", auth: token("agt_alice"), capability: "transfer_money",
			args: `{"source_account":"acc_123","destination_account":"acc_000","amount":1,"currency":"USD"}`, status: 404, code: "account_not_found"},
		{name: "amount not positive", auth: token("agt_alice"), capability: "transfer_money",
			args: `{"source_account":"acc_123","destination_account":"acc_456","amount":0,"currency":"USD"}`, status: 400, code: "invalid_request"},
		{name: "unsupported currency", auth: token("agt_alice"), capability: "transfer_money",
			args: `{"source_account":"acc_123","destination_account":"acc_456","amount":1,"currency":"JPY"}`, status: 400, code: "invalid_request"},
		{name: "unsupported rate", auth: token("agt_alice"), capability: "exchange_rate", args: `{"from":"USD","to":"CHF"}`, status: 400, code: "invalid_request"},
		{name: "malformed body", auth: token("agt_alice"), capability: "exchange_rate", args: `{"from":`, status: 400, code: "invalid_request"},
		{name: "constrained currency changed by decoding", auth: token("agt_alice_currency"), capability: "transfer_money",
			args: `{"source_account":"acc_123","destination_account":"acc_456","amount":1,"currency":"usd"}`, status: 400, code: "invalid_request",
			members: map[string]string{"transformed_fields": `["currency"]`}},
		{name: "unknown constraint operator", auth: token("agt_alice_badop"), capability: "transfer_money",
			args: `{"source_account":"acc_123","destination_account":"acc_456","amount":5,"currency":"USD"}`, status: 400, code: "unknown_constraint_operator",
			members: map[string]string{"unknown_operators": `["between"]`, "operators": `["between"]`}},
		{name: "constraint violated", auth: token("agt_alice"), capability: "transfer_money",
			args: `{"source_account":"acc_123","destination_account":"acc_666","amount":1500,"currency":"USD"}`, status: 403, code: "constraint_violated",
			members: map[string]string{"violations": `[{"field":"amount","constraint":{"max":1000},"actual":1500},{"field":"destination_account","constraint":{"not_in":["acc_666"]},"actual":"acc_666"}]`}},
		{name: "no grant", auth: token("agt_alice_loose"), capability: "check_balance", args: `{"account_id":"acc_123"}`, status: 403, code: "capability_not_granted"},
		{name: "grant without the required constraint", auth: token("agt_alice_loose"), capability: "transfer_money",
			args: `{"source_account":"acc_123","destination_account":"acc_456","amount":1,"currency":"USD"}`, status: 403, code: "capability_not_granted",
			members: map[string]string{"missing_constraints": `["destination_account"]`}},
		{name: "amount bounded without its currency", auth: token("agt_alice_unitless"), capability: "transfer_money",
			args: `{"source_account":"acc_123","destination_account":"acc_456","amount":1,"currency":"GBP"}`, status: 403, code: "capability_not_granted",
			members: map[string]string{"missing_constraints": `["currency"]`}},
		{name: "another currency than the grant's", auth: token("agt_alice"), capability: "transfer_money",
			args: `{"source_account":"acc_123","destination_account":"acc_456","amount":500,"currency":"GBP"}`, status: 403, code: "constraint_violated",
			members: map[string]string{"violations": `[{"field":"currency","constraint":"USD","actual":"GBP"}]`}},
		{name: "outside the token's capabilities", auth: token("agt_alice", agentauthtest.Token{Capabilities: []string{"check_balance"}}), capability: "exchange_rate",
			args: `{"from":"USD","to":"EUR"}`, status: 403, code: "capability_not_granted"},
		{name: "autonomous agent acting for a user", auth: token("agt_robot"), capability: "check_balance", args: `{"account_id":"acc_123"}`, status: 403, code: "unauthorized"},
		{name: "autonomous agent without a grant", auth: token("agt_robot"), capability: "list_accounts", status: 403, code: "unauthorized"},
		{name: "unknown capability", auth: token("agt_alice"), capability: "close_account", status: 404, code: "capability_not_found"},
		{name: "no token", capability: "exchange_rate", args: `{"from":"USD","to":"EUR"}`, status: 401, code: "authentication_required"},
		{name: "replayed token", auth: replayed, capability: "exchange_rate", args: `{"from":"USD","to":"EUR"}`, status: 401, code: "invalid_jwt"},
		{name: "wrong audience", auth: f.agents["agt_alice"].Token(agentauthtest.Token{Audience: "http://127.0.0.1:1/capability/execute"}), capability: "exchange_rate",
			args: `{"from":"USD","to":"EUR"}`, status: 401, code: "invalid_jwt"},
		{name: "expired token", auth: token("agt_alice", agentauthtest.Token{IssuedAt: time.Now().Add(-10 * time.Minute)}), capability: "exchange_rate",
			args: `{"from":"USD","to":"EUR"}`, status: 401, code: "invalid_jwt"},
		{name: "host JWT", auth: f.hosts["hst_alice"].Token(agentauthtest.Token{Audience: p.url}), capability: "exchange_rate", args: `{"from":"USD","to":"EUR"}`, status: 401, code: "invalid_jwt"},
		{name: "agent JWT typed host+jwt", auth: token("agt_alice", agentauthtest.Token{Type: agentcap.TypeHostJWT}), capability: "exchange_rate",
			args: `{"from":"USD","to":"EUR"}`, status: 401, code: "invalid_jwt"},
		{name: "signed by another key", auth: token("agt_alice", agentauthtest.Token{SigningKey: f.agents["agt_bob"].Key}), capability: "exchange_rate",
			args: `{"from":"USD","to":"EUR"}`, status: 401, code: "invalid_jwt"},
		{name: "agent revoked", auth: token("agt_revoked"), capability: "exchange_rate", args: `{"from":"USD","to":"EUR"}`, status: 403, code: "agent_revoked"},
		{name: "agent pending", auth: token("agt_pending"), capability: "exchange_rate", args: `{"from":"USD","to":"EUR"}`, status: 403, code: "agent_pending"},
		{name: "agent expired", auth: token("agt_expired"), capability: "exchange_rate", args: `{"from":"USD","to":"EUR"}`, status: 403, code: "agent_expired"},
		{name: "agent rejected", auth: token("agt_rejected"), capability: "exchange_rate", args: `{"from":"USD","to":"EUR"}`, status: 403, code: "agent_rejected"},
		{name: "agent claimed", auth: token("agt_claimed"), capability: "exchange_rate", args: `{"from":"USD","to":"EUR"}`, status: 403, code: "agent_claimed"},
		{name: "host revoked", auth: token("agt_of_revoked_host"), capability: "exchange_rate", args: `{"from":"USD","to":"EUR"}`, status: 403, code: "host_revoked"},
		{name: "host pending", auth: token("agt_of_pending_host"), capability: "exchange_rate", args: `{"from":"USD","to":"EUR"}`, status: 403, code: "host_pending"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := p.execute(t, c.auth, c.capability, c.args)
			if r.status != c.status || r.code() != c.code {
				t.Fatalf("%d %q, want %d %q: %s", r.status, r.code(), c.status, c.code, r.body)
			}
			for name, want := range c.members {
				if got := string(jsonMember(t, r.body, name)); got != want {
					t.Errorf("%s: %s, want %s", name, got, want)
				}
			}
			for _, secret := range []string{"postgres", "s3cret", "ledger-db", "5432"} {
				if strings.Contains(string(r.body), secret) {
					t.Errorf("the answer leaks %q: %s", secret, r.body)
				}
			}
			if r.status == 401 {
				want := `AgentAuth discovery="` + p.url + `/.well-known/agent-configuration"`
				if got := r.header.Get("WWW-Authenticate"); got != want {
					t.Errorf("WWW-Authenticate %q, want %q", got, want)
				}
			}
		})
	}
}

func testBatch(t *testing.T, p *bankProcess, token func(string, ...agentauthtest.Token) string) {
	body := `{"requests":[
		{"id":"balance","capability":"check_balance","arguments":{"account_id":"acc_123"}},
		{"id":"not_mine","capability":"check_balance","arguments":{"account_id":"acc_456"}},
		{"capability":"exchange_rate","arguments":{"from":"GBP","to":"EUR"}},
		{"id":"too_much","capability":"transfer_money","arguments":{"source_account":"acc_123","destination_account":"acc_456","amount":5000,"currency":"USD"}},
		{"id":"outage","capability":"check_balance","arguments":{"account_id":"acc_999"}},
		{"id":"nope","capability":"close_account"}]}`
	r := p.do(t, http.MethodPost, "/capability/batch-execute", token("agt_alice"), body)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	type item struct {
		ID     string          `json:"id"`
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data,omitempty"`
		Error  *struct {
			Code string `json:"code"`
		} `json:"error,omitempty"`
	}
	var got struct{ Responses []item }
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	type brief struct{ ID, Status, Code, Data string }
	var briefs []brief
	for _, it := range got.Responses {
		b := brief{ID: it.ID, Status: it.Status, Data: string(it.Data)}
		if it.Error != nil {
			b.Code = it.Error.Code
		}
		briefs = append(briefs, b)
	}
	want := []brief{
		{"balance", "completed", "", ""},
		{"not_mine", "failed", "account_not_found", ""},
		{"2", "completed", "", `{"from":"GBP","to":"EUR","rate":1.16}`},
		{"too_much", "failed", "constraint_violated", ""},
		{"outage", "failed", "internal_error", ""},
		{"nope", "failed", "capability_not_found", ""},
	}
	// The balance depends on the transfers made before.
	briefs[0].Data = ""
	if diff := cmp.Diff(want, briefs); diff != "" {
		t.Errorf("(-want +got):\n%s\n%s", diff, r.body)
	}
	if strings.Contains(string(r.body), "s3cret") {
		t.Errorf("leak: %s", r.body)
	}
}
