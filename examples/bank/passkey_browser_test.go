package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/internal/browsertest"
)

// TestPasskeysInChromium walks the README's transfers as Alice and Bob
// would, in headless Chromium with a DevTools virtual authenticator for
// their devices. The bank, started without -issuer, names itself
// localhost, where browsers offer passkeys. Alice allows a rent payer
// transfer_money, adding her passkey on the way; a 1500 transfer waits
// for her and she confirms it with that passkey, next to its preview;
// Bob then allows an agent of his own, adding his passkey on first use.
func TestPasskeysInChromium(t *testing.T) {
	bin := buildBank(t)
	db := filepath.Join(t.TempDir(), "bank.db")
	p := startBankIn(t, bin, "", func(addr, _ string) []string { return []string{"-addr", addr, "-db", db, "-debug"} })
	base := strings.Replace(p.url, "http://127.0.0.1:", "http://localhost:", 1)
	ctx := browsertest.New(t)
	browsertest.Authenticator(t, ctx)
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := client.New(client.Config{AllowInsecureLoopback: true, Keys: client.NewMemoryKeyStore(), HostName: "test host"})
	if err != nil {
		t.Fatal(err)
	}

	// allow signs in as user on the page of a request and allows it,
	// adding a passkey first when the user has none.
	allow := func(ap client.Approval, user, shot string) {
		browsertest.Do(t, ctx, "signing in as "+user,
			chromedp.Navigate(base+"/login?next="+strings.TrimPrefix(ap.VerificationURIComplete, base)),
			chromedp.Click(chromedp.CSS("#login-"+user)),
			chromedp.WaitVisible(chromedp.CSS("#allow")),
			chromedp.Click(chromedp.CSS("#allow")),
			chromedp.WaitVisible(chromedp.CSS("#passkey")))
		if browsertest.Value(t, ctx, "looking for the first-use offer", chromedp.Evaluate[bool](`!!document.getElementById("passkey-new")`)) {
			browsertest.Screenshot(t, ctx, shot)
			browsertest.Do(t, ctx, "adding a passkey",
				chromedp.SendKeys(chromedp.CSS("#passkey-name"), "laptop"),
				chromedp.Click(chromedp.CSS("#create-passkey")),
				chromedp.WaitVisible(chromedp.CSS("#use-passkey")))
		}
		if s := browsertest.Outcome(t, ctx, "allowing with the passkey", "#use-passkey"); !strings.HasPrefix(s, "You allowed ") {
			t.Errorf("outcome %q", s)
		}
	}

	a, _, err := cl.Connect(cctx, base, client.ConnectOptions{
		Name: "rent payer",
		Mode: agentcap.ModeDelegated,
		Capabilities: []client.CapabilityRequest{{Name: "transfer_money",
			Constraints: map[string]json.RawMessage{"destination_account": json.RawMessage(`"acc_456"`)}}},
		OnApproval: func(ap client.Approval) { allow(ap, "user_alice", "bank-alice-first-passkey.png") },
	})
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, p.logs)
	}
	if s := browsertest.Text(t, ctx, "#outcome"); s != "You allowed rent payer: transfer_money." {
		t.Errorf("outcome %q", s)
	}

	transfer := map[string]any{"source_account": "acc_123", "destination_account": "acc_456", "amount": 1500, "currency": "USD"}
	_, err = a.Execute(cctx, "transfer_money", transfer)
	var pending *client.ConfirmationPending
	if !errors.As(err, &pending) {
		t.Fatalf("1500: %v", err)
	}
	browsertest.Do(t, ctx, "opening the transfer to confirm",
		chromedp.Navigate(pending.Approval.VerificationURIComplete),
		chromedp.WaitVisible(chromedp.CSS("#allow")),
		chromedp.Click(chromedp.CSS("#allow")),
		chromedp.WaitVisible(chromedp.CSS("#use-passkey")))
	if s := browsertest.Text(t, ctx, "#confirm-preview"); !strings.Contains(s, "1500") || !strings.Contains(s, "acc_456") {
		t.Errorf("the preview beside the passkey prompt: %q", s)
	}
	browsertest.Screenshot(t, ctx, "bank-confirm-transfer.png")
	if s := browsertest.Outcome(t, ctx, "confirming with the passkey", "#use-passkey"); s != "You confirmed the call of transfer_money by rent payer." {
		t.Errorf("outcome %q", s)
	}
	token, err := a.AwaitConfirmation(cctx, pending, nil)
	if err != nil {
		t.Fatalf("waiting for Alice: %v", err)
	}
	res, err := a.Execute(cctx, "transfer_money", transfer, client.WithConfirmationToken(token.Token))
	if err != nil || !strings.Contains(string(res.Data), `"status":"completed"`) {
		t.Fatalf("the confirmed transfer: %s %v", res.Data, err)
	}

	// Bob's first approval of a transfer adds his passkey.
	bobs, err := client.New(client.Config{AllowInsecureLoopback: true, Keys: client.NewMemoryKeyStore(), HostName: "bob's host"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bobs.Connect(cctx, base, client.ConnectOptions{
		Name: "bob's payer",
		Mode: agentcap.ModeDelegated,
		Capabilities: []client.CapabilityRequest{{Name: "transfer_money",
			Constraints: map[string]json.RawMessage{"destination_account": json.RawMessage(`"acc_123"`)}}},
		OnApproval: func(ap client.Approval) { allow(ap, "user_bob", "bank-bob-first-passkey.png") },
	}); err != nil {
		t.Fatalf("bob's connect: %v\n%s", err, p.logs)
	}
	browsertest.Do(t, ctx, "bob's passkeys", chromedp.Navigate(base+"/agents"), chromedp.WaitVisible(chromedp.CSS(".passkey")))
	if s := browsertest.Text(t, ctx, "#user"); s != "Bob" {
		t.Errorf("signed in as %q", s)
	}
	browsertest.Screenshot(t, ctx, "bank-bob-passkeys.png")
}
