package bank_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/examples/bank/bank"
	"github.com/agentcap/agentcap/testing/agentauthtest"
	"github.com/agentcap/agentcap/testing/captest"
)

// callerFor is the identity of an agent acting for user ("" for an
// autonomous agent), as the Agent Auth verifier builds it, with the
// bank's own refusals (bank.Authorize) as its authorizer and no grants.
func callerFor(user string) *auth.Identity {
	mode := agentcap.ModeDelegated
	if user == "" {
		mode = agentcap.ModeAutonomous
	}
	s := &agentauth.Session{
		Agent: &agentauth.Agent{ID: "agt_test", HostID: "hst_test", UserID: user, Mode: mode, Status: agentcap.StatusActive},
		Host:  &agentauth.Host{ID: "hst_test", Status: agentcap.StatusActive},
	}
	id := &auth.Identity{Subject: "agt_test", AgentID: "agt_test", HostID: "hst_test", UserID: user, Claims: s}
	id.Authorizer = bankRules{id}
	return id
}

// bankRules is the authorizer of callerFor's identities: bank.Authorize,
// as the Agent Auth wiring runs it before an agent's grants.
type bankRules struct{ id *auth.Identity }

func (r bankRules) Authorize(ctx context.Context, call *auth.Call) error {
	return bank.Authorize(ctx, r.id, call)
}

func (bankRules) GrantStatus(string) string { return "" }

func (bankRules) Recheck(context.Context) error { return nil }

func newExec(t *testing.T) (*bank.Store, *core.Executor) {
	t.Helper()
	store := bank.NewStore()
	return store, execOn(t, store)
}

// execOn returns the bank's executor over store, with its confirmations
// in memory and an owner who confirms every transfer they are asked
// about (see confirmed).
func execOn(t testing.TB, store bank.Ledger) *core.Executor {
	t.Helper()
	m, err := confirm.New(confirm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	desk := &ownerDesk{m: m, tokens: map[string]string{}}
	exec, err := bank.NewExecutor(store, bank.Options{Confirmer: m, Human: desk, Location: "https://bank.example/capability/execute"})
	if err != nil {
		t.Fatal(err)
	}
	desks.Store(exec, desk)
	return exec
}

// desks holds the owner of each executor execOn made.
var desks sync.Map

// ownerDesk is a core.HumanConfirmer whose account owner says yes at
// once: the status URL it gives names the token the owner's decision
// gave, which confirmed reads back.
type ownerDesk struct {
	m      *confirm.Manager
	mu     sync.Mutex
	tokens map[string]string
	asked  []core.HumanConfirmationRequest
}

func (d *ownerDesk) RequestHumanConfirmation(ctx context.Context, r core.HumanConfirmationRequest) (*core.HumanConfirmationPending, error) {
	c, err := d.m.Issue(ctx, r.Binding)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	url := fmt.Sprintf("https://bank.example/agent/confirmation?id=apr_%d", len(d.tokens))
	d.tokens[url] = c.Token
	r.Preview = append([]byte(nil), r.Preview...)
	d.asked = append(d.asked, r)
	return &core.HumanConfirmationPending{StatusURL: url, Approval: core.ConfirmationApproval{Method: "device_authorization", ExpiresIn: 600, Interval: 5}}, nil
}

// confirmed runs a capability as an agent of user that confirms what it
// is asked to: a call refused with confirmation_required runs again with
// the token that came with the refusal, and one that waits for the owner
// (confirmation_pending), with the token the owner's yes gave.
func confirmed(t testing.TB, exec *core.Executor, user, name string, args any) captest.Result {
	t.Helper()
	r := captest.Run(t, exec, name, callerFor(user), args)
	var token string
	switch r.Code {
	case agentcap.CodeConfirmationRequired:
		token = r.Err.Fields["confirmation"].(map[string]string)["token"]
	case agentcap.CodeConfirmationPending:
		d, _ := desks.Load(exec)
		desk := d.(*ownerDesk)
		desk.mu.Lock()
		token = desk.tokens[r.Err.Fields["status_url"].(string)]
		desk.mu.Unlock()
	default:
		return r
	}
	raw, ok := args.(string)
	if !ok {
		t.Fatalf("confirmed: arguments %T, want a JSON string", args)
	}
	out, err := exec.Execute(core.WithConfirmationToken(context.Background(), token), name, callerFor(user), []byte(raw))
	if err == nil {
		return captest.Result{Output: out, Status: 200}
	}
	e := agentcap.As(err)
	return captest.Result{Err: e, Code: e.Code, Status: e.HTTPStatus()}
}

type result struct {
	Status int
	Code   agentcap.Code
	Output string
}

// run runs a capability as an agent of user, confirming what needs it.
func run(t *testing.T, exec *core.Executor, user, name string, args any) result {
	t.Helper()
	r := confirmed(t, exec, user, name, args)
	return result{r.Status, r.Code, string(r.Output)}
}

func TestCapabilities(t *testing.T) {
	cases := []struct {
		name       string
		user       string
		capability string
		args       any
		want       result
	}{
		{"alice's accounts", "user_alice", "list_accounts", nil, result{200, "", `[` +
			`{"account_id":"acc_123","name":"Everyday checking","type":"checking","currency":"USD"},` +
			`{"account_id":"acc_124","name":"Rainy day savings","type":"savings","currency":"EUR"}]`}},
		{"bob's accounts", "user_bob", "list_accounts", nil, result{200, "", `[` +
			`{"account_id":"acc_456","name":"Main checking","type":"checking","currency":"USD"}]`}},
		{"a user without accounts", "user_nobody", "list_accounts", nil, result{200, "", `[]`}},
		{"list refuses arguments", "user_alice", "list_accounts", `{"user":"user_bob"}`, result{400, "invalid_request", ""}},

		{"balance", "user_alice", "check_balance", `{"account_id":"acc_123"}`, result{200, "", `{"account_id":"acc_123","balance":5000,"currency":"USD"}`}},
		{"balance in euros", "user_alice", "check_balance", `{"account_id":"acc_124"}`, result{200, "", `{"account_id":"acc_124","balance":1200,"currency":"EUR"}`}},
		{"someone else's account", "user_alice", "check_balance", `{"account_id":"acc_456"}`, result{404, "account_not_found", ""}},
		{"unknown account", "user_alice", "check_balance", `{"account_id":"acc_000"}`, result{404, "account_not_found", ""}},
		{"ledger outage", "user_alice", "check_balance", `{"account_id":"acc_999"}`, result{500, "internal_error", ""}},
		{"empty account id", "user_alice", "check_balance", `{"account_id":""}`, result{400, "invalid_request", ""}},

		{"transfer", "user_alice", "transfer_money", `{"source_account":"acc_123","destination_account":"acc_456","amount":100,"currency":"USD"}`,
			result{200, "", `{"transfer_id":"tr_000001","status":"completed","amount":100,"currency":"USD"}`}},
		{"lower-case currency", "user_alice", "transfer_money", `{"source_account":"acc_123","destination_account":"acc_456","amount":0.5,"currency":"usd"}`,
			result{200, "", `{"transfer_id":"tr_000001","status":"completed","amount":0.5,"currency":"USD"}`}},
		{"insufficient funds", "user_bob", "transfer_money", `{"source_account":"acc_456","destination_account":"acc_123","amount":300.01,"currency":"USD"}`,
			result{409, "insufficient_funds", ""}},
		{"exactly the balance", "user_bob", "transfer_money", `{"source_account":"acc_456","destination_account":"acc_123","amount":300,"currency":"USD"}`,
			result{200, "", `{"transfer_id":"tr_000001","status":"completed","amount":300,"currency":"USD"}`}},
		{"huge amount", "user_bob", "transfer_money", `{"source_account":"acc_456","destination_account":"acc_123","amount":1e300,"currency":"USD"}`,
			result{409, "insufficient_funds", ""}},
		{"source not owned", "user_bob", "transfer_money", `{"source_account":"acc_123","destination_account":"acc_456","amount":1,"currency":"USD"}`,
			result{404, "account_not_found", ""}},
		{"unknown destination", "user_alice", "transfer_money", `{"source_account":"acc_123","destination_account":"acc_000","amount":1,"currency":"USD"}`,
			result{404, "account_not_found", ""}},
		{"destination on the broken shard", "user_alice", "transfer_money", `{"source_account":"acc_123","destination_account":"acc_999","amount":1,"currency":"USD"}`,
			result{500, "internal_error", ""}},
		{"same account", "user_alice", "transfer_money", `{"source_account":"acc_123","destination_account":"acc_123","amount":1,"currency":"USD"}`,
			result{400, "invalid_request", ""}},
		{"zero amount", "user_alice", "transfer_money", `{"source_account":"acc_123","destination_account":"acc_456","amount":0,"currency":"USD"}`,
			result{400, "invalid_request", ""}},
		{"negative amount", "user_alice", "transfer_money", `{"source_account":"acc_123","destination_account":"acc_456","amount":-5,"currency":"USD"}`,
			result{400, "invalid_request", ""}},
		{"fractions of a cent", "user_alice", "transfer_money", `{"source_account":"acc_123","destination_account":"acc_456","amount":1.005,"currency":"USD"}`,
			result{400, "invalid_request", ""}},
		{"amount as a string", "user_alice", "transfer_money", `{"source_account":"acc_123","destination_account":"acc_456","amount":"1","currency":"USD"}`,
			result{400, "invalid_request", ""}},
		{"unsupported currency", "user_alice", "transfer_money", `{"source_account":"acc_123","destination_account":"acc_456","amount":1,"currency":"JPY"}`,
			result{400, "invalid_request", ""}},
		{"case-variant key", "user_alice", "transfer_money", `{"source_account":"acc_123","Destination_Account":"acc_456","destination_account":"acc_124","amount":1,"currency":"USD"}`,
			result{400, "invalid_request", ""}},

		{"rate", "", "exchange_rate", `{"from":"USD","to":"EUR"}`, result{200, "", `{"from":"USD","to":"EUR","rate":0.92}`}},
		{"rate back", "user_alice", "exchange_rate", `{"from":"EUR","to":"USD"}`, result{200, "", `{"from":"EUR","to":"USD","rate":1.09}`}},
		{"same currency", "", "exchange_rate", `{"from":"GBP","to":"GBP"}`, result{200, "", `{"from":"GBP","to":"GBP","rate":1}`}},
		{"unsupported rate", "", "exchange_rate", `{"from":"USD","to":"JPY"}`, result{400, "invalid_request", ""}},
		{"rates are upper case", "", "exchange_rate", `{"from":"usd","to":"EUR"}`, result{400, "invalid_request", ""}},

		{"autonomous list", "", "list_accounts", nil, result{403, "unauthorized", ""}},
		{"autonomous balance", "", "check_balance", `{"account_id":"acc_123"}`, result{403, "unauthorized", ""}},
		{"autonomous transfer", "", "transfer_money", `{"source_account":"acc_123","destination_account":"acc_456","amount":1,"currency":"USD"}`,
			result{403, "unauthorized", ""}},
	}
	for _, l := range ledgers {
		for _, c := range cases {
			t.Run(l.name+"/"+c.name, func(t *testing.T) {
				exec := execOn(t, l.open(t))
				if diff := cmp.Diff(c.want, run(t, exec, c.user, c.capability, c.args)); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestLedgerOutageIsRedacted(t *testing.T) {
	_, exec := newExec(t)
	r := captest.Run(t, exec, "check_balance", callerFor("user_alice"), `{"account_id":"acc_999"}`)
	if r.Code != "internal_error" || strings.Contains(r.Err.Message, "s3cret") {
		t.Fatalf("code %q, message %q", r.Code, r.Err.Message)
	}
	// The cause is kept for the server's logs.
	if !strings.Contains(r.Err.Error(), "postgres://ledger:s3cret@ledger-db.internal:5432/bank") {
		t.Errorf("the hidden cause lost the driver's error: %v", r.Err)
	}
}

func balance(t *testing.T, store bank.Ledger, user, id string) string {
	t.Helper()
	c, cur, err := store.Balance(context.Background(), user, id)
	if err != nil {
		t.Fatal(err)
	}
	return c.String() + " " + cur
}

func TestTransfersMoveMoney(t *testing.T) {
	for _, l := range ledgers {
		t.Run(l.name, func(t *testing.T) { testTransfersMoveMoney(t, l.open(t)) })
	}
}

func testTransfersMoveMoney(t *testing.T, store bank.Ledger) {
	exec := execOn(t, store)
	steps := []struct {
		user, args string
	}{
		{"user_alice", `{"source_account":"acc_123","destination_account":"acc_456","amount":100.25,"currency":"USD"}`},
		// Euros from a euro account to a dollar account: 100 EUR buys 109 USD.
		{"user_alice", `{"source_account":"acc_124","destination_account":"acc_456","amount":100,"currency":"EUR"}`},
		// Dollars from a euro account: 10 USD cost 9.20 EUR.
		{"user_alice", `{"source_account":"acc_124","destination_account":"acc_456","amount":10,"currency":"usd"}`},
		// Pounds between dollar accounts: 1 GBP is 1.27 USD on both sides.
		{"user_bob", `{"source_account":"acc_456","destination_account":"acc_123","amount":1,"currency":"GBP"}`},
		// Rounding: 0.05 USD in euros is 0.046, rounded to 0.05.
		{"user_alice", `{"source_account":"acc_124","destination_account":"acc_123","amount":0.05,"currency":"USD"}`},
	}
	for i, s := range steps {
		if r := run(t, exec, s.user, "transfer_money", s.args); r.Status != 200 {
			t.Fatalf("step %d: %+v", i, r)
		}
	}
	got := []string{
		balance(t, store, "user_alice", "acc_123"),
		balance(t, store, "user_alice", "acc_124"),
		balance(t, store, "user_bob", "acc_456"),
	}
	want := []string{
		"4901.07 USD", // 5000 - 100.25 + 1.27 + 0.05
		"1090.75 EUR", // 1200 - 100 - 9.20 - 0.05
		"517.98 USD",  // 300 + 100.25 + 109 + 10 - 1.27
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("balances (-want +got):\n%s", diff)
	}
}

func TestConcurrentTransfersKeepTheBooks(t *testing.T) {
	for _, l := range ledgers {
		t.Run(l.name, func(t *testing.T) { testConcurrentTransfers(t, l.open(t)) })
	}
}

func testConcurrentTransfers(t *testing.T, store bank.Ledger) {
	exec := execOn(t, store)
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			user, src, dst := "user_alice", "acc_123", "acc_456"
			if i%2 == 1 {
				user, src, dst = "user_bob", "acc_456", "acc_123"
			}
			args := fmt.Sprintf(`{"source_account":%q,"destination_account":%q,"amount":1.5,"currency":"USD"}`, src, dst)
			r := confirmed(t, exec, user, "transfer_money", args)
			if r.Code != "" {
				t.Errorf("transfer %d: %s", i, r.Code)
			}
		})
	}
	wg.Wait()
	got := balance(t, store, "user_alice", "acc_123") + ", " + balance(t, store, "user_bob", "acc_456")
	if want := "5000 USD, 300 USD"; got != want {
		t.Errorf("balances %s, want %s", got, want)
	}
}

func TestStoreTransferChecks(t *testing.T) {
	store := bank.NewStore()
	ctx := context.Background()
	if _, err := store.TransferMoney(ctx, "user_alice", "acc_123", "acc_456", big.NewRat(-1, 1), bank.USD); err == nil {
		t.Error("a negative amount was accepted")
	}
	if _, err := store.TransferMoney(ctx, "user_alice", "acc_123", "acc_456", big.NewRat(1, 1000), bank.USD); err == nil {
		t.Error("a fraction of a cent was accepted")
	}
	if _, err := store.TransferMoney(ctx, "user_alice", "acc_123", "acc_456", big.NewRat(1, 1), "JPY"); !errors.Is(err, bank.ErrUnsupported) {
		t.Errorf("unsupported currency: %v", err)
	}
}

func TestCentsString(t *testing.T) {
	for c, want := range map[bank.Cents]string{0: "0", 5: "0.05", 50: "0.5", 100: "1", 120050: "1200.5", 500000: "5000", 123456: "1234.56", -250: "-2.5"} {
		if got := c.String(); got != want {
			t.Errorf("Cents(%d) = %q, want %q", int64(c), got, want)
		}
	}
}

func TestCurrencyDecoding(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{`"usd"`, "USD", true}, {`"Eur"`, "EUR", true}, {`"GBP"`, "GBP", true},
		{`"jpy"`, "", false}, {`1`, "", false}, {`null`, "", false}, {`"US D"`, "", false},
	}
	for _, c := range cases {
		var cur bank.Currency
		err := json.Unmarshal([]byte(c.in), &cur)
		if (err == nil) != c.ok || string(cur) != c.want {
			t.Errorf("%s: %q, %v", c.in, cur, err)
		}
	}
}

// TestActsForTheVerifiedUser runs list_accounts behind the Agent Auth
// wiring for agents whose user is named in different places: the user
// the verifier says the agent acts for is the one whose accounts it
// gets, and an autonomous agent acts for nobody, even under a host linked
// to a user.
func TestActsForTheVerifiedUser(t *testing.T) {
	_, exec := newExec(t)
	s := agentauthtest.NewServer(t, exec, agentauth.Config{Authorize: bank.Authorize})
	aliceHost := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_alice", UserID: "user_alice"})
	own := aliceHost.NewAgent(agentauthtest.Agent{ID: "agt_own", UserID: "user_bob"}).Grant("list_accounts", nil)
	hosts := aliceHost.NewAgent(agentauthtest.Agent{ID: "agt_hosts"}).Grant("list_accounts", nil)
	hosts.UserID = ""
	robot := aliceHost.NewAgent(agentauthtest.Agent{ID: "agt_robot", UserID: "user_alice", Mode: agentcap.ModeAutonomous}).Grant("list_accounts", nil)
	s.Add(t, own, hosts, robot)
	cases := []struct {
		name   string
		agent  *agentauthtest.Agent
		status int
		want   string
	}{
		{"the agent's user", own, 200, `[{"account_id":"acc_456","name":"Main checking","type":"checking","currency":"USD"}]`},
		{"the host's user", hosts, 200, `[{"account_id":"acc_123","name":"Everyday checking","type":"checking","currency":"USD"},` +
			`{"account_id":"acc_124","name":"Rainy day savings","type":"savings","currency":"EUR"}]`},
		{"autonomous under a user's host", robot, 403, ""},
	}
	for _, c := range cases {
		r := s.Execute(t, s.Token(c.agent), "list_accounts", nil)
		if r.Status != c.status || string(r.Data) != c.want {
			t.Errorf("%s: %d %s", c.name, r.Status, r.Body)
		}
	}
}

func TestExecutionLog(t *testing.T) {
	var logs bytes.Buffer
	store := bank.NewStore()
	exec, err := bank.NewExecutor(store, bank.Options{Hooks: []core.Hook{bank.ExecutionLog(slog.New(slog.NewTextHandler(&logs, nil)))}})
	if err != nil {
		t.Fatal(err)
	}
	captest.Run(t, exec, "check_balance", callerFor("user_alice"), `{"account_id":"acc_123"}`)
	captest.Run(t, exec, "check_balance", callerFor("user_alice"), `{"account_id":"acc_999"}`)
	captest.Run(t, exec, "transfer_money", callerFor("user_bob"), `{"source_account":"acc_456","destination_account":"acc_123","amount":9999,"currency":"USD"}`)

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	want := []string{
		"agent=agt_test capability=check_balance outcome=completed duration=",
		"agent=agt_test capability=check_balance outcome=internal_error duration=",
		"agent=agt_test capability=transfer_money outcome=insufficient_funds duration=",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), logs.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %q does not contain %q", i, lines[i], w)
		}
	}
	for _, secret := range []string{"acc_", "9999", "s3cret"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs.String())
		}
	}
}

// TestAgentAuthPath runs the bank behind the Agent Auth wiring.
func TestAgentAuthPath(t *testing.T) {
	_, exec := newExec(t)
	wiring := agentauth.Config{Authorize: bank.Authorize, AllowAnonymousDiscovery: true}
	alice := agentauthtest.Host{ID: "hst_alice", UserID: "user_alice"}
	payBob := map[string]any{"destination_account": "acc_456"}

	// A transfer must be confirmed: the preview says what it would do
	// and hands out the token.
	s := agentauthtest.NewServer(t, exec, wiring)
	payer := agentauthtest.NewHost(alice).NewAgent(agentauthtest.Agent{ID: "agt_payer"}).Grant("transfer_money", payBob)
	s.Add(t, payer)
	const call = `{"capability":"transfer_money","arguments":{"source_account":"acc_123","destination_account":"acc_456","amount":25,"currency":"USD"}}`
	if r := s.Do(t, "POST", "capability/execute", s.Token(payer), []byte(call)); r.Status != 428 || r.Code != "confirmation_required" {
		t.Errorf("unconfirmed transfer: %d %s", r.Status, r.Body)
	}
	p := s.Do(t, "POST", "capability/preview", s.Token(payer), []byte(call))
	var preview struct {
		Preview      map[string]any    `json:"preview"`
		Confirmation map[string]string `json:"confirmation"`
	}
	if err := json.Unmarshal(p.Body, &preview); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"source_account": "acc_123", "destination_account": "acc_456", "amount": 25.0, "currency": "USD",
		"source_currency": "USD", "debit": 25.0, "source_balance_after": 4975.0, "destination_currency": "USD", "credit": 25.0}
	if diff := cmp.Diff(want, preview.Preview); diff != "" || p.Status != 200 {
		t.Errorf("preview %d (-want +got):\n%s", p.Status, diff)
	}
	confirmedCall := strings.TrimSuffix(call, "}") + `,"confirmation_token":"` + preview.Confirmation["token"] + `"}`
	r := s.Do(t, "POST", "capability/execute", s.Token(payer), []byte(confirmedCall))
	if r.Status != 200 || string(r.Data) != `{"transfer_id":"tr_000001","status":"completed","amount":25,"currency":"USD"}` {
		t.Errorf("transfer: %d %s", r.Status, r.Body)
	}
	if r := s.Do(t, "POST", "capability/execute", s.Token(payer), []byte(confirmedCall)); r.Status != 409 || r.Code != "confirmation_used" {
		t.Errorf("second use of the token: %d %s", r.Status, r.Body)
	}

	// A grant constraining the currency, and a raw value that decoding
	// changes: the checked value would not be the value that runs.
	r = agentauthtest.Execute(t, exec, wiring, agentauthtest.Call{
		Capability:  "transfer_money",
		Arguments:   map[string]any{"source_account": "acc_123", "destination_account": "acc_456", "amount": 25, "currency": "usd"},
		Constraints: map[string]any{"destination_account": "acc_456", "currency": map[string]any{"in": []string{"usd", "USD"}}},
		Host:        alice,
	})
	if r.Status != 400 || r.Code != "invalid_request" || string(r.Member("transformed_fields")) != `["currency"]` {
		t.Errorf("transformed: %d %s", r.Status, r.Body)
	}

	// The grant must constrain the destination, and a grant that
	// bounds the amount its currency too: "at most 100" of what?
	r = agentauthtest.Execute(t, exec, wiring, agentauthtest.Call{
		Capability:  "transfer_money",
		Arguments:   map[string]any{"source_account": "acc_123", "destination_account": "acc_456", "amount": 25, "currency": "USD"},
		Constraints: map[string]any{"amount": map[string]any{"max": 100}},
		Host:        alice,
	})
	if r.Status != 403 || r.Code != "capability_not_granted" || string(r.Member("missing_constraints")) != `["currency","destination_account"]` {
		t.Errorf("missing constraints: %d %s", r.Status, r.Body)
	}
	r = agentauthtest.Execute(t, exec, wiring, agentauthtest.Call{
		Capability:  "transfer_money",
		Arguments:   map[string]any{"source_account": "acc_123", "destination_account": "acc_456", "amount": 25, "currency": "GBP"},
		Constraints: map[string]any{"destination_account": "acc_456", "amount": map[string]any{"max": 100}},
		Host:        alice,
	})
	if r.Status != 403 || r.Code != "capability_not_granted" || string(r.Member("missing_constraints")) != `["currency"]` {
		t.Errorf("an amount bounded without its currency: %d %s", r.Status, r.Body)
	}

	// An autonomous agent is refused before its grants are looked at.
	robot := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_robot"}).
		NewAgent(agentauthtest.Agent{ID: "agt_robot", Mode: agentcap.ModeAutonomous}).
		Grant("exchange_rate", nil)
	s.Add(t, robot)
	if r := s.Execute(t, s.Token(robot), "check_balance", map[string]any{"account_id": "acc_123"}); r.Status != 403 || r.Code != "unauthorized" {
		t.Errorf("autonomous check_balance: %d %s", r.Status, r.Body)
	}
	if r := s.Execute(t, s.Token(robot), "exchange_rate", map[string]any{"from": "GBP", "to": "EUR"}); string(r.Data) != `{"from":"GBP","to":"EUR","rate":1.16}` {
		t.Errorf("autonomous exchange_rate: %d %s", r.Status, r.Body)
	}
	list := func(token string) []string {
		var body struct {
			Capabilities []struct{ Name string } `json:"capabilities"`
		}
		r := s.Do(t, "GET", "capability/list", token, nil)
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range body.Capabilities {
			names = append(names, c.Name)
		}
		return names
	}
	if diff := cmp.Diff([]string{"exchange_rate"}, list(s.Token(robot))); diff != "" {
		t.Errorf("autonomous listing (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"exchange_rate"}, list("")); diff != "" {
		t.Errorf("anonymous listing (-want +got):\n%s", diff)
	}
	person := agentauthtest.NewHost(alice).NewAgent(agentauthtest.Agent{ID: "agt_alice"})
	s.Add(t, person)
	if diff := cmp.Diff([]string{"check_balance", "exchange_rate", "list_accounts", "statement_export", "transfer_money"}, list(s.Token(person))); diff != "" {
		t.Errorf("delegated listing (-want +got):\n%s", diff)
	}
}

func ExampleNewExecutor() {
	exec, err := bank.NewExecutor(bank.NewStore(), bank.Options{})
	if err != nil {
		panic(err)
	}
	// The identity of an agent acting for Alice, as the Agent Auth
	// verifier makes it.
	alice := &auth.Identity{Subject: "agt_1", AgentID: "agt_1", HostID: "hst_1", UserID: "user_alice"}
	out, err := exec.Execute(context.Background(), "check_balance", alice, []byte(`{"account_id":"acc_124"}`))
	fmt.Println(string(out), err)
	// Output: {"account_id":"acc_124","balance":1200,"currency":"EUR"} <nil>
}

// FuzzTransferArguments sends arbitrary arguments to transfer_money: the
// currency and amount decoders must never panic, a refusal is always a
// public code, and no balance ever goes below zero.
func FuzzTransferArguments(f *testing.F) {
	for _, s := range []string{
		`{"source_account":"acc_123","destination_account":"acc_456","amount":1,"currency":"usd"}`,
		`{"source_account":"acc_124","destination_account":"acc_123","amount":0.01,"currency":"GbP"}`,
		`{"source_account":"acc_123","destination_account":"acc_456","amount":1e-2,"currency":"EUR"}`,
		`{"source_account":"acc_123","destination_account":"acc_456","amount":5000.00,"currency":"USD"}`,
		`{"source_account":"acc_123","destination_account":"acc_456","amount":1e400,"currency":"USD"}`,
		`{"source_account":"acc_123","destination_account":"acc_456","amount":1,"currency":"\u0055SD"}`,
		`{"currency":null}`, `[]`, `{`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		store := bank.NewStore()
		exec := execOn(t, store)
		r := confirmed(t, exec, "user_alice", "transfer_money", args)
		switch r.Code {
		case "", "invalid_request", "account_not_found", "insufficient_funds":
		case "internal_error":
			// Only the broken ledger shard fails inside.
			if !strings.Contains(args, "acc_999") && !strings.Contains(args, `\u`) {
				t.Fatalf("internal error for %s: %v", args, r.Err)
			}
		default:
			t.Fatalf("code %q for %s", r.Code, args)
		}
		for _, id := range []string{"acc_123", "acc_124"} {
			if c, _, err := store.Balance(context.Background(), "user_alice", id); err != nil || c < 0 {
				t.Fatalf("%s: %v %v after %s", id, c, err, args)
			}
		}
	})
}

// schemaPatterns returns every "pattern" keyword in a JSON Schema.
func schemaPatterns(t *testing.T, schema json.RawMessage) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(schema, &v); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if s, ok := c.(string); ok && k == "pattern" {
					out = append(out, s)
				}
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(v)
	return out
}

// nonPortable finds regular expression syntax that RE2 (the server) reads
// but ECMA-262 engines (JavaScript clients validating arguments before
// they send them) refuse or read differently: inline flags and named
// groups, which start with "(?" other than "(?:", and the \A, \z, \Q
// escapes.
var nonPortable = regexp.MustCompile(`\(\?[^:]|\\[AzZQE]`)

// TestSchemaPatternsArePortable keeps every published pattern within the
// syntax that JSON Schema clients in other languages compile.
func TestSchemaPatternsArePortable(t *testing.T) {
	n := 0
	for _, d := range bank.Capabilities() {
		def := d.Definition()
		for _, schema := range []json.RawMessage{def.InputSchema(), def.OutputSchema()} {
			for _, p := range schemaPatterns(t, schema) {
				n++
				if _, err := regexp.Compile(p); err != nil {
					t.Errorf("%s: pattern %q: %v", def.Name(), p, err)
				}
				if loc := nonPortable.FindStringIndex(p); loc != nil {
					t.Errorf("%s: pattern %q uses %q, which ECMA-262 engines do not accept", def.Name(), p, p[loc[0]:loc[1]])
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no pattern found: the walk is broken")
	}
}

// TestCurrencyPattern checks that the published currency pattern admits
// exactly what Currency decodes: the three codes in any letter case.
func TestCurrencyPattern(t *testing.T) {
	patterns := schemaPatterns(t, bank.TransferMoney.Definition().InputSchema())
	if len(patterns) != 1 {
		t.Fatalf("patterns %q, want one", patterns)
	}
	re := regexp.MustCompile(patterns[0])
	_, exec := newExec(t)
	for _, in := range []string{"USD", "usd", "uSd", "Eur", "gbP", "GBP", "jpy", "usdx", "xusd", " usd", "usd\n", "us", "", "USDEUR", "ＵＳＤ"} {
		var cur bank.Currency
		decodes := json.Unmarshal([]byte(strconv.Quote(in)), &cur) == nil
		if got := re.MatchString(in); got != decodes {
			t.Errorf("%q: the pattern matches: %v, Currency decodes: %v", in, got, decodes)
		}
		args := fmt.Sprintf(`{"source_account":"acc_123","destination_account":"acc_456","amount":0.01,"currency":%s}`, strconv.Quote(in))
		r := run(t, exec, "user_alice", "transfer_money", args)
		if (r.Status == 200) != decodes {
			t.Errorf("%q: transfer %d %s", in, r.Status, r.Code)
		}
	}
}

// countingLedger counts the reads of a user's accounts.
type countingLedger struct {
	bank.Ledger
	reads atomic.Int64
	err   error
}

func (l *countingLedger) AccountsOf(ctx context.Context, user string) ([]bank.Account, error) {
	l.reads.Add(1)
	if l.err != nil {
		return nil, l.err
	}
	return l.Ledger.AccountsOf(ctx, user)
}

// Every call that acts for a user reads the user's accounts once, in the
// context function, but check_balance's, whose ledger read checks the
// account's owner. A list that cannot be read refuses the call there,
// before its input is checked or its job made.
func TestAccountsReadWhenNeeded(t *testing.T) {
	l := &countingLedger{Ledger: bank.NewStore()}
	exec := execOn(t, l)
	alice := callerFor("user_alice")
	for _, c := range []struct {
		capability, input string
		code              agentcap.Code
		reads             int64
	}{
		{"check_balance", `{"account_id":"acc_123"}`, "", 0},
		{"list_accounts", `{}`, "", 1},
		// Bob's account: refused once the list is read.
		{"statement_export", `{"account_id":"acc_456","from":"2026-01-01","to":"2026-01-31"}`, bank.CodeAccountNotFound, 1},
	} {
		before := l.reads.Load()
		if r := captest.Run(t, exec, c.capability, alice, c.input); r.Code != c.code {
			t.Fatalf("%s: %q %v; want %q", c.capability, r.Code, r.Err, c.code)
		}
		if got := l.reads.Load() - before; got != c.reads {
			t.Errorf("%s read the accounts %d times, want %d", c.capability, got, c.reads)
		}
	}
	l.err = fmt.Errorf("reading accounts: %w", bank.ErrLedgerUnavailable)
	r := captest.Run(t, exec, "list_accounts", alice, `{}`)
	if r.Code != agentcap.CodeTemporarilyUnavailable {
		t.Fatalf("list_accounts with the ledger down: %q %v", r.Code, r.Err)
	}
	if r := captest.Run(t, exec, "check_balance", alice, `{"account_id":"acc_123"}`); r.Err != nil {
		t.Fatalf("check_balance with the list unreadable: %v", r.Err)
	}
	r = captest.Run(t, exec, "statement_export", alice, `{"account_id":"acc_123","from":"2026-02-01","to":"2026-01-01"}`)
	if r.Code != agentcap.CodeTemporarilyUnavailable || r.Err.Stage != agentcap.StageContext {
		t.Fatalf("statement_export with the ledger down: %q at %q; want temporarily_unavailable from the context function", r.Code, r.Err.Stage)
	}
}
