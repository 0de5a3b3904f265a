package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
)

// hiddenField reads the value of a hidden input of a page.
func hiddenField(page, name string) string {
	m := regexp.MustCompile(`name="` + regexp.QuoteMeta(name) + `" value="([^"]*)"`).FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return m[1]
}

// decideOnPage signs in as userID through the bank's development login
// and answers the approval page for userCode as a browser would: allow
// caps (for a call to confirm, the call's capability) or refuse, typing
// the code again when the page asks for the in-person step. It returns
// the last page.
func decideOnPage(base, userID, userCode string, refuse bool, caps ...string) (string, error) {
	c, err := newPageClient(base)
	if err != nil {
		return "", err
	}
	page, err := c.signIn(userID, "/approve?code="+url.QueryEscape(userCode))
	if err != nil {
		return "", err
	}
	action := "allow"
	if refuse {
		action = "deny"
	}
	page, err = c.post("/approve", url.Values{"csrf": {hiddenField(page, "csrf")}, "code": {userCode}, "step": {"review"},
		"action": {action}, "capability": caps})
	if err != nil || !strings.Contains(page, `name="presence_code"`) {
		return page, err
	}
	return c.post("/approve", url.Values{"csrf": {hiddenField(page, "csrf")}, "code": {userCode}, "step": {"confirm"},
		"action": {"allow"}, "capability": caps, "presence_code": {userCode}})
}

// TestOwnerConfirmsBigTransfers runs the bank as its own provider: an
// agent of Alice's confirms a small transfer itself, while one of more
// than 1000 waits for Alice, who confirms it on the approval page (Bob
// cannot), or refuses it.
func TestOwnerConfirmsBigTransfers(t *testing.T) {
	bin := buildBank(t)
	db := filepath.Join(t.TempDir(), "bank.db")
	// -debug: a failure shows the hidden causes in the logs.
	p := startBankIn(t, bin, "", func(addr, url string) []string {
		return []string{"-addr", addr, "-issuer", url, "-db", db, "-dev-presence-code", "-debug"}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := client.New(client.Config{AllowInsecureLoopback: true, Keys: client.NewMemoryKeyStore(), HostName: "test host"})
	if err != nil {
		t.Fatal(err)
	}
	var approveErr error
	a, _, err := cl.Connect(ctx, p.url, client.ConnectOptions{
		Name: "rent payer",
		Mode: agentcap.ModeDelegated,
		Capabilities: []client.CapabilityRequest{{Name: "check_balance"},
			{Name: "transfer_money", Constraints: map[string]json.RawMessage{"destination_account": json.RawMessage(`"acc_456"`)}}},
		OnApproval: func(ap client.Approval) {
			var page string
			page, approveErr = decideOnPage(p.url, "user_alice", ap.UserCode, false, "check_balance", "transfer_money")
			if approveErr == nil && !strings.Contains(page, "You allowed") {
				approveErr = fmt.Errorf("not allowed:\n%s", page)
			}
		},
	})
	if approveErr != nil || err != nil {
		t.Fatalf("connect: %v, approving: %v\n%s", err, approveErr, p.logs)
	}
	transfer := func(amount float64) map[string]any {
		return map[string]any{"source_account": "acc_123", "destination_account": "acc_456", "amount": amount, "currency": "USD"}
	}

	// 1000 USD: the agent's own confirmation is enough.
	pv, err := a.Preview(ctx, "transfer_money", transfer(1000))
	if err != nil || pv.Confirmation == nil || pv.RequiresHumanConfirmation {
		t.Fatalf("preview of 1000: %+v %v\n%s", pv, err, p.logs)
	}
	if _, err := a.Execute(ctx, "transfer_money", transfer(1000), client.WithConfirmationToken(pv.Confirmation.Token)); err != nil {
		t.Fatalf("1000: %v", err)
	}

	// 1500 USD waits for Alice.
	_, err = a.Execute(ctx, "transfer_money", transfer(1500))
	var pending *client.ConfirmationPending
	if !errors.As(err, &pending) {
		t.Fatalf("1500: %v", err)
	}
	var shown map[string]any
	if err := json.Unmarshal(pending.Preview, &shown); err != nil || shown["source_balance_after"] != 2500.0 || shown["debit"] != 1500.0 {
		t.Errorf("the preview shown: %s", pending.Preview)
	}
	code := pending.Approval.UserCode
	if !strings.HasPrefix(pending.Approval.VerificationURIComplete, p.url+"/approve?code=") || code == "" ||
		!strings.HasPrefix(pending.StatusURL, p.url+"/agent/confirmation?id=") {
		t.Fatalf("pending %+v", pending)
	}
	// The page shows Bob nothing to decide; Alice sees the call.
	if page, err := decideOnPage(p.url, "user_bob", code, false, "transfer_money"); err == nil {
		t.Errorf("Bob confirmed Alice's transfer:\n%s", page)
	}
	page, err := decideOnPage(p.url, "user_alice", code, false, "transfer_money")
	if err != nil || !strings.Contains(page, "You confirmed the call of transfer_money by rent payer.") {
		t.Fatalf("Alice confirms: %v\n%s", err, page)
	}
	token, err := a.AwaitConfirmation(ctx, pending, nil)
	if err != nil {
		t.Fatalf("waiting for Alice: %v", err)
	}
	if _, err := a.Execute(ctx, "transfer_money", transfer(1500), client.WithConfirmationToken(token.Token)); err != nil {
		t.Fatalf("1500 confirmed: %v", err)
	}
	res, err := a.Execute(ctx, "check_balance", map[string]string{"account_id": "acc_123"})
	if err != nil || !strings.Contains(string(res.Data), `"balance":2500`) {
		t.Errorf("balance after both transfers: %s %v", res.Data, err)
	}

	// Refused: the agent is told, and nothing moves.
	_, err = a.Execute(ctx, "transfer_money", transfer(2000))
	if !errors.As(err, &pending) {
		t.Fatalf("2000: %v", err)
	}
	if page, err := decideOnPage(p.url, "user_alice", pending.Approval.UserCode, true, "transfer_money"); err != nil ||
		!strings.Contains(page, "You refused the call of transfer_money") {
		t.Fatalf("Alice refuses: %v\n%s", err, page)
	}
	if _, err := a.AwaitConfirmation(ctx, pending, nil); !errors.Is(err, client.ErrApprovalDenied) {
		t.Errorf("after the refusal: %v", err)
	}
}
