package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/examples/bank/bank"
)

// startProviderBank runs the binary without -directory, as its own
// provider over the SQLite database db, on a free loopback port, with
// the development presence step, which lets a test confirm transfers
// over HTTP.
func startProviderBank(t *testing.T, bin, db string) *bankProcess {
	t.Helper()
	return startBankIn(t, bin, "", func(addr, url string) []string {
		return []string{"-addr", addr, "-issuer", url, "-db", db, "-dev-presence-code"}
	})
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// approve signs in as user through the bank's development login and
// allows caps on the approval page for the request with userCode, as a
// browser would: GET the page, then POST its form with its CSRF token.
func approve(base, userID, userCode string, caps ...string) error {
	c, err := newPageClient(base)
	if err != nil {
		return err
	}
	post := c.post
	page := "/approve?code=" + url.QueryEscape(userCode)
	// The login redirects to next, the review page, which the client
	// follows with the new cookie.
	reviewPage, err := c.signIn(userID, page)
	if err != nil {
		return err
	}
	m := csrfField.FindStringSubmatch(reviewPage)
	if m == nil {
		return fmt.Errorf("no approval form for %s:\n%s", userCode, reviewPage)
	}
	done, err := post("/approve", url.Values{
		"csrf": {m[1]}, "code": {userCode}, "step": {"review"},
		"action": {"allow"}, "capability": caps,
	})
	if err != nil {
		return err
	}
	if !strings.Contains(done, "You allowed") {
		return fmt.Errorf("approval not confirmed:\n%s", done)
	}
	return nil
}

// TestProviderMode connects an agent with the Go client to the bank as
// its own provider, has Alice approve it over HTTP, and executes with it.
func TestProviderMode(t *testing.T) {
	bin := buildBank(t)
	db := filepath.Join(t.TempDir(), "bank.db")
	p := startProviderBank(t, bin, db)

	disc := p.do(t, http.MethodGet, agentcap.DiscoveryPath, "", "")
	if disc.status != http.StatusOK {
		t.Fatalf("discovery: %d %s", disc.status, disc.body)
	}
	var doc struct {
		Issuer    string            `json:"issuer"`
		Methods   []string          `json:"approval_methods"`
		Endpoints map[string]string `json:"endpoints"`
	}
	if err := json.Unmarshal(disc.body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Issuer != p.url || !slices.Contains(doc.Methods, "device_authorization") ||
		doc.Endpoints["register"] == "" || doc.Endpoints["execute"] == "" {
		t.Errorf("discovery document: %s", disc.body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, st, approvals := connectBalanceReader(ctx, t, p.url, p.logs.String)
	if len(approvals) != 1 || !strings.HasPrefix(approvals[0].VerificationURIComplete, p.url+"/approve?code=") {
		t.Errorf("approvals %+v, want one on %s/approve", approvals, p.url)
	}
	if st.Status != "active" || st.Mode != agentcap.ModeDelegated || st.UserID != "user_alice" {
		t.Errorf("status %+v, want an active delegated agent of user_alice", st)
	}
	var grants []string
	for _, g := range st.Grants {
		grants = append(grants, g.Capability+":"+g.Status)
	}
	if diff := cmp.Diff([]string{"check_balance:active"}, grants); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}

	caps, err := a.AllCapabilities(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var listed, want []string
	for _, c := range caps {
		listed = append(listed, c.Name)
	}
	for _, d := range bank.Capabilities() {
		want = append(want, d.Definition().Name())
	}
	slices.Sort(listed)
	slices.Sort(want)
	if diff := cmp.Diff(want, listed); diff != "" {
		t.Errorf("listed capabilities (-want +got):\n%s", diff)
	}

	res, err := a.Execute(ctx, "check_balance", map[string]string{"account_id": "acc_123"})
	if err != nil {
		t.Fatalf("execute: %v\n%s", err, p.logs)
	}
	var bal map[string]any
	if err := json.Unmarshal(res.Data, &bal); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"account_id": "acc_123", "balance": 5000.0, "currency": "USD"}, bal); diff != "" {
		t.Errorf("balance (-want +got):\n%s", diff)
	}

	// Bob's account is not Alice's, and transfer_money was not granted.
	if _, err := a.Execute(ctx, "check_balance", map[string]string{"account_id": "acc_456"}); err == nil {
		t.Error("Alice's agent read Bob's balance")
	}
	if _, err := a.Execute(ctx, "transfer_money", map[string]any{
		"source_account": "acc_123", "destination_account": "acc_124", "amount": 1, "currency": "USD",
	}); err == nil {
		t.Error("an ungranted transfer_money was executed")
	}
}

// readmeCommands returns the first agentcap connect and execute command
// lines of the root README's walk-through, and the JSON the README shows
// the execution printing, as it shows it.
func readmeCommands(t *testing.T) (connect, execute, output string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	if !strings.HasPrefix(text[strings.Index(text, "```sh\n")+len("```sh\n"):], "go run ./examples/bank ") {
		t.Error("the README's first command is not go run ./examples/bank")
	}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "go run ./cmd/agentcap connect ") && connect == "":
			connect = line
		case strings.HasPrefix(line, "go run ./cmd/agentcap execute ") && execute == "":
			execute = line
		}
	}
	if connect == "" || execute == "" {
		t.Fatalf("the README lacks the agentcap connect and execute commands")
	}
	_, after, ok := strings.Cut(text, execute)
	if !ok {
		t.Fatal("execute command not found again")
	}
	_, block, ok := strings.Cut(after, "```json\n")
	if !ok {
		t.Fatal("no JSON output after the execute command")
	}
	block, _, _ = strings.Cut(block, "```")
	if !json.Valid([]byte(block)) {
		t.Fatalf("the README's output block is not JSON:\n%s", block)
	}
	return connect, execute, block
}

// TestReadmeWalkthrough runs the root README's walk-through: the bank as
// its own provider, agentcap connect, Alice's approval on the printed
// page, agentcap execute with the output the README shows, and the agent
// still connected after the bank restarts on the same database.
func TestReadmeWalkthrough(t *testing.T) {
	connectLine, executeLine, wantOutput := readmeCommands(t)
	bank := buildBank(t)
	agentcap := buildCommand(t, "../../cmd/agentcap", "agentcap")
	db := filepath.Join(t.TempDir(), "bank.db")
	state := t.TempDir()

	// words turns a README line into the agentcap arguments for the bank
	// at base, which listens on a free port instead of 8080.
	words := func(line, base string) []string {
		w, err := shellWords(strings.TrimPrefix(line, "go run ./cmd/agentcap "), nil)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		for i := range w {
			w[i] = strings.ReplaceAll(w[i], "http://localhost:8080", base)
		}
		return w
	}
	command := func(ctx context.Context, args []string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, agentcap, args...)
		cmd.Env = append(os.Environ(), "AGENTCAP_STATE="+state)
		return cmd
	}

	p := startProviderBank(t, bank, db)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := command(ctx, words(connectLine, p.url))
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	conn.Stdout, conn.Stderr = stdout, stderr
	if err := conn.Start(); err != nil {
		t.Fatal(err)
	}
	approvalURL := regexp.MustCompile(`Open (` + regexp.QuoteMeta(p.url) + `/approve\?code=([A-Z0-9-]+))`)
	var m []string
	for deadline := time.Now().Add(30 * time.Second); m == nil && time.Now().Before(deadline); {
		m = approvalURL.FindStringSubmatch(stderr.String())
		time.Sleep(20 * time.Millisecond)
	}
	if m == nil {
		_ = conn.Process.Kill()
		_ = conn.Wait()
		t.Fatalf("connect printed no approval URL:\n%s\n%s", stderr, p.logs)
	}
	if err := approve(p.url, "user_alice", m[2], "check_balance"); err != nil {
		_ = conn.Process.Kill()
		_ = conn.Wait()
		t.Fatal(err)
	}
	if err := conn.Wait(); err != nil {
		t.Fatalf("connect: %v\n%s\n%s", err, stdout, stderr)
	}
	if !regexp.MustCompile(`(?m)^check_balance +active`).MatchString(stdout.String()) {
		t.Errorf("connect output lacks the active grant:\n%s", stdout)
	}

	execute := func(p *bankProcess) {
		t.Helper()
		out, err := command(ctx, words(executeLine, p.url)).Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("execute: %v\n%s\n%s", err, ee.Stderr, p.logs)
		}
		if err != nil {
			t.Fatal(err)
		}
		if fresh(string(out)) != fresh(wantOutput) {
			t.Errorf("execute printed\n%s\nthe README shows\n%s", out, wantOutput)
		}
	}
	execute(p)

	// The README says the agent survives a restart: its records are in
	// the database, not in the process. The issuer is the same only if
	// the port is, so the restarted bank must get the same address.
	p.stop(t)
	restarted := restartBank(t, bank, p.url, db)
	execute(restarted)
}

// restartBank runs the binary again as its own provider on the address
// of base, so that the issuer is the same, and waits for it to serve.
// Nobody else should take a port freed a moment ago, but if somebody
// does the test cannot go on and is skipped.
func restartBank(t *testing.T, bin, base, db string) *bankProcess {
	t.Helper()
	p := &bankProcess{
		url:    base,
		cmd:    exec.Command(bin, "-addr", strings.TrimPrefix(base, "http://"), "-issuer", base, "-db", db, "-dev-presence-code"),
		logs:   &syncBuffer{},
		done:   make(chan struct{}),
		client: &http.Client{Timeout: 10 * time.Second},
	}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop(t) })
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-p.done:
			if strings.Contains(p.logs.String(), "address already in use") {
				t.Skipf("the port of %s was taken between the runs", base)
			}
			t.Fatalf("the restarted bank exited:\n%s", p.logs)
		default:
		}
		if resp, err := p.client.Get(base + agentcap.DiscoveryPath); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
	}
	t.Fatalf("the restarted bank did not serve within 30s:\n%s", p.logs)
	return nil
}

// TestProviderModeInMemory: with -memory the bank is its own provider
// with every store in memory: an agent approved over HTTP executes, and
// no file is written. -memory refuses the flags that name other stores.
func TestProviderModeInMemory(t *testing.T) {
	bin := buildBank(t)
	dir := t.TempDir()
	args := func(addr, url string) []string {
		return []string{"-addr", addr, "-issuer", url, "-memory", "-dev-presence-code"}
	}
	p := startBankIn(t, bin, dir, args)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, _, _ := connectBalanceReader(ctx, t, p.url, p.logs.String)
	if _, err := a.Execute(ctx, "check_balance", map[string]string{"account_id": "acc_123"}); err != nil {
		t.Fatalf("execute: %v\n%s", err, p.logs)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("the bank in memory wrote %v (%v)", entries, err)
	}
	if !strings.Contains(p.logs.String(), "store=memory") {
		t.Errorf("the bank's log does not say where it keeps its records:\n%s", p.logs)
	}

	for _, extra := range [][]string{{"-db", "x.db"}, {"-postgres", "postgres://127.0.0.1/x"}, {"-redis", "127.0.0.1:1"}, {"-directory", "agents.json"}} {
		cmd := exec.Command(bin, append([]string{"-memory"}, extra...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "-memory") {
			t.Errorf("-memory %s: %v\n%s", strings.Join(extra, " "), err, out)
		}
	}
}

// connectBalanceReader connects a new agent of a new host to the bank at
// url with check_balance, which Alice approves on the approval page, and
// returns it, its status and the approvals the client was shown; logs
// gives the bank's output for a failure message.
func connectBalanceReader(ctx context.Context, t *testing.T, url string, logs func() string) (*client.Agent, *client.AgentStatus, []client.Approval) {
	t.Helper()
	cl, err := client.New(client.Config{AllowInsecureLoopback: true, Keys: client.NewMemoryKeyStore(), HostName: "test host"})
	if err != nil {
		t.Fatal(err)
	}
	var (
		approvals  []client.Approval
		approveErr error
	)
	a, st, err := cl.Connect(ctx, url, client.ConnectOptions{
		Name:         "balance reader",
		Mode:         agentcap.ModeDelegated,
		Capabilities: []client.CapabilityRequest{{Name: "check_balance"}},
		OnApproval: func(ap client.Approval) {
			approvals = append(approvals, ap)
			approveErr = approve(url, "user_alice", ap.UserCode, "check_balance")
		},
	})
	if approveErr != nil || err != nil {
		t.Fatalf("connect: %v, approving: %v\n%s", err, approveErr, logs())
	}
	return a, st, approvals
}
