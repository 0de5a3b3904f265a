package bank_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/examples/bank/bank"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/redisstore"
	"github.com/agentcap/agentcap/sqlstore"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

type bankServer = agentauthtest.Server

// newBankServer serves store's bank through the Agent Auth wiring, with
// jobs and idempotency keys from lr, and confirmations from confirmer
// (nil: in memory).
func newBankServer(t *testing.T, store *bank.Store, lr *bank.LongRunning, confirmer core.Confirmer) *bankServer {
	t.Helper()
	exec, err := bank.NewExecutor(store, bank.Options{Confirmer: confirmer, Location: "https://bank.example/capability/execute"})
	if err != nil {
		t.Fatal(err)
	}
	return agentauthtest.NewServer(t, exec, agentauth.Config{Authorize: bank.Authorize, AllowAnonymousDiscovery: true},
		agentauthtest.Options{LongRunning: httpx.LongRunning{Jobs: lr.Jobs, Idempotency: lr.Idempotency}})
}

func newLongRunning(t *testing.T, s bank.Stores) *bank.LongRunning {
	t.Helper()
	lr, err := bank.NewLongRunning(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lr.Close() })
	return lr
}

func aliceAgent() *agentauthtest.Agent {
	return agentauthtest.NewHost(agentauthtest.Host{ID: "hst_alice", UserID: "user_alice"}).NewAgent(agentauthtest.Agent{ID: "agt_alice"}).
		Grant("statement_export", nil).Grant("check_balance", nil).
		Grant("transfer_money", map[string]any{"destination_account": "acc_456"})
}

func post(t *testing.T, s *bankServer, a *agentauthtest.Agent, body string, key string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.Audience(), strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.Token(a))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return send(t, req)
}

func send(t *testing.T, req *http.Request) (int, http.Header, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// confirmation previews the call in body and returns the token that
// confirms it.
func confirmation(t *testing.T, s *bankServer, a *agentauthtest.Agent, body string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+"/capability/preview", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.Token(a))
	req.Header.Set("Content-Type", "application/json")
	code, _, answer := send(t, req)
	var p struct {
		Confirmation struct{ Token string } `json:"confirmation"`
	}
	if err := json.Unmarshal([]byte(answer), &p); err != nil || code != 200 || p.Confirmation.Token == "" {
		t.Fatalf("preview: %d %s", code, answer)
	}
	return p.Confirmation.Token
}

// withToken adds a confirmation token to an execute body.
func withToken(body, token string) string {
	return strings.TrimSuffix(body, "}") + `,"confirmation_token":"` + token + `"}`
}

func poll(t *testing.T, s *bankServer, a *agentauthtest.Agent, statusURL string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", statusURL, nil)
	req.Header.Set("Authorization", "Bearer "+s.Token(a))
	code, _, body := send(t, req)
	return code, body
}

// statement_export answers 202, reports its progress while it runs, and
// ends with the statement and its CSV file.
func TestStatementExportJob(t *testing.T) {
	bank.StatementWork = 300 * time.Millisecond
	lr := newLongRunning(t, bank.Stores{})
	s := newBankServer(t, bank.NewStore(), lr, nil)
	alice := aliceAgent()
	s.Add(t, alice)
	code, hdr, body := post(t, s, alice, `{"capability":"statement_export","arguments":{"account_id":"acc_123","from":"2026-01-01","to":"2026-01-31"}}`, "")
	var ans struct {
		Status    string `json:"status"`
		StatusURL string `json:"status_url"`
	}
	if err := json.Unmarshal([]byte(body), &ans); err != nil || code != 202 || ans.Status != "pending" || hdr.Get("Retry-After") != "1" {
		t.Fatalf("%d %v %s", code, hdr, body)
	}
	sawProgress := false
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body = poll(t, s, alice, ans.StatusURL)
		if code != 200 {
			t.Fatalf("poll: %d %s", code, body)
		}
		if strings.Contains(body, `"progress":{"progress":`) && strings.Contains(body, "reading the ledger, part") {
			sawProgress = true
		}
		if !strings.Contains(body, `"status":"pending"`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !sawProgress {
		t.Error("no progress was reported while the job ran")
	}
	var done struct {
		Status string         `json:"status"`
		Result bank.Statement `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &done); err != nil || done.Status != "completed" {
		t.Fatalf("final: %s", body)
	}
	const csv = "date,transfer_id,amount,currency,counterparty\n" +
		"2026-01-02,tr_demo_01,3200,USD,Salary\n2026-01-05,tr_demo_02,-1200,USD,Rent\n2026-01-19,tr_demo_03,-45.5,USD,Groceries\n"
	f := done.Result.File
	if len(done.Result.Entries) != 3 || f.Content != csv || f.Name != "statement-acc_123-2026-01-01-2026-01-31.csv" || f.ContentType != "text/csv" {
		t.Errorf("statement: %+v", done.Result)
	}
	// The account and dates are checked by the handler, so a call for
	// another user's account is a job that fails with the handler's error.
	code, _, body = post(t, s, alice, `{"capability":"statement_export","arguments":{"account_id":"acc_456","from":"2026-01-01","to":"2026-01-31"}}`, "")
	if err := json.Unmarshal([]byte(body), &ans); err != nil || code != 202 {
		t.Fatalf("another user's account: %d %s", code, body)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, body = poll(t, s, alice, ans.StatusURL); !strings.Contains(body, "pending") {
			break
		}
	}
	want := `{"status":"failed","error":{"error":"account_not_found","message":"no such account among the user's accounts","code":"account_not_found"}}` + "\n"
	if body != want {
		t.Errorf("another user's account: %s", body)
	}
}

// A retried transfer with the same Idempotency-Key moves the money once
// and answers the same, marked as a replay, without spending another
// confirmation.
func TestTransferMoneyIdempotencyKey(t *testing.T) {
	lr := newLongRunning(t, bank.Stores{})
	store := bank.NewStore()
	s := newBankServer(t, store, lr, nil)
	alice := aliceAgent()
	s.Add(t, alice)
	const transfer = `{"capability":"transfer_money","arguments":{"source_account":"acc_123","destination_account":"acc_456","amount":10,"currency":"USD"}}`
	confirmed := withToken(transfer, confirmation(t, s, alice, transfer))
	code1, h1, b1 := post(t, s, alice, confirmed, "pay-bob-1")
	code2, h2, b2 := post(t, s, alice, confirmed, "pay-bob-1")
	if code1 != 200 || code2 != 200 || b1 != b2 || h1.Get("Idempotent-Replayed") != "" || h2.Get("Idempotent-Replayed") != "true" {
		t.Errorf("first %d %s, retry %d %v %s", code1, b1, code2, h2, b2)
	}
	cents, _, err := store.Balance(context.Background(), "user_alice", "acc_123")
	if err != nil || cents.String() != "4990" {
		t.Errorf("balance %s (%v), want 4990: one transfer", cents, err)
	}
	code, _, body := post(t, s, alice, strings.Replace(confirmed, `"amount":10`, `"amount":11`, 1), "pay-bob-1")
	if code != 422 || !strings.Contains(body, "idempotency_key_reused") {
		t.Errorf("other amount, same key: %d %s", code, body)
	}
}

// Two bank instances sharing PostgreSQL and Redis: a statement started on
// one is polled on the other, and 50 concurrent retries of one transfer
// spread over both, confirmed by a token that instance a issued, move
// the money once.
func TestTwoInstancesShareJobsAndKeys(t *testing.T) {
	newPool := servicetest.PostgresSchema(t)
	rdb, prefix := servicetest.Redis(t)
	bank.StatementWork = 100 * time.Millisecond
	store := bank.NewStore() // the bank's ledger, shared as a real database would be
	alice := aliceAgent()
	var servers []*bankServer
	for _, inst := range []string{"bank-a", "bank-b"} {
		db, err := sqlstore.NewPostgres(context.Background(), newPool())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		rs, err := redisstore.New(context.Background(), rdb, redisstore.Config{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		stores := bank.Stores{SQL: db, Redis: rs, Instance: inst}
		lr := newLongRunning(t, stores)
		confirmer, err := bank.NewConfirmer(context.Background(), stores)
		if err != nil {
			t.Fatal(err)
		}
		s := newBankServer(t, store, lr, confirmer)
		s.Add(t, alice)
		servers = append(servers, s)
	}
	_, _, body := post(t, servers[0], alice, `{"capability":"statement_export","arguments":{"account_id":"acc_124","from":"2026-01-01","to":"2026-12-31"}}`, "")
	var ans struct {
		StatusURL string `json:"status_url"`
	}
	if err := json.Unmarshal([]byte(body), &ans); err != nil || ans.StatusURL == "" {
		t.Fatalf("start: %s", body)
	}
	// The status URL names instance a; instance b answers it too.
	onB := servers[1].URL + strings.TrimPrefix(ans.StatusURL, servers[0].URL)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body = poll(t, servers[1], alice, onB)
		if strings.Contains(body, `"status":"completed"`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(body, `"status":"completed"`) || !strings.Contains(body, "tr_demo_10") {
		t.Errorf("polled on b: %s", body)
	}

	transfer := `{"capability":"transfer_money","arguments":{"source_account":"acc_123","destination_account":"acc_456","amount":1,"currency":"USD"}}`
	transfer = withToken(transfer, confirmation(t, servers[0], alice, transfer))
	var wg sync.WaitGroup
	bodies := make([]string, 50)
	for i := range 50 {
		wg.Go(func() {
			code, _, b := post(t, servers[i%2], alice, transfer, "retry-storm")
			if code != 200 {
				t.Errorf("call %d: %d %s", i, code, b)
			}
			bodies[i] = b
		})
	}
	wg.Wait()
	for i, b := range bodies {
		if b != bodies[0] {
			t.Errorf("call %d answered %s, call 0 %s", i, b, bodies[0])
		}
	}
	cents, _, _ := store.Balance(context.Background(), "user_alice", "acc_123")
	if cents.String() != "4999" {
		t.Errorf("balance %s, want 4999: the transfer ran more than once", cents)
	}
}
