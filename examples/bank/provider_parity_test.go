package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// hostToken signs a host JWT for the bank at base with the host key the
// client cl uses towards it.
func hostToken(t *testing.T, cl *client.Client, base string) string {
	t.Helper()
	id, err := cl.HostIdentity(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	return agentauthtest.NewHost("host", agentauthtest.WithKey(id.Key)).Token(base)
}

// listedNames lists the bank's capabilities with token and returns their
// names; no entry may carry grant_status, which only an agent JWT gets.
func listedNames(t *testing.T, p *bankProcess, token string) []string {
	t.Helper()
	r := p.do(t, http.MethodGet, "/capability/list", token, "")
	if r.status != http.StatusOK {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	var page struct {
		Capabilities []map[string]any `json:"capabilities"`
	}
	if err := json.Unmarshal(r.body, &page); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range page.Capabilities {
		if c["grant_status"] != nil {
			t.Errorf("%v carries grant_status", c["name"])
		}
		names = append(names, c["name"].(string))
	}
	slices.Sort(names)
	return names
}

// TestProviderParity runs the bank as its own provider and checks, through
// the protocol, that an autonomous agent is granted the public
// exchange_rate (approval strength none) and nothing that acts for a user,
// and that hosts list with host JWTs (§5.2): a host linked to Alice sees
// Alice's capabilities, an unlinked one the public ones.
func TestProviderParity(t *testing.T) {
	p := startProviderBank(t, buildBank(t), filepath.Join(t.TempDir(), "bank.db"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	newClient := func() *client.Client {
		cl, err := client.New(client.Config{AllowInsecureLoopback: true, Keys: client.NewMemoryKeyStore(), HostName: "parity"})
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}

	robots := newClient()
	a, st, err := robots.Connect(ctx, p.url, client.ConnectOptions{
		Name: "rate watcher", Mode: agentauth.ModeAutonomous,
		Capabilities: []client.CapabilityRequest{{Name: "exchange_rate"}, {Name: "list_accounts"}},
	})
	if err != nil {
		t.Fatalf("connect an autonomous agent: %v\n%s", err, p.logs)
	}
	got := map[string]string{}
	for _, g := range st.Grants {
		got[g.Capability] = g.Status
	}
	if st.Status != "active" || !cmp.Equal(map[string]string{"exchange_rate": "active", "list_accounts": "denied"}, got) {
		t.Fatalf("autonomous agent %s with grants %v", st.Status, got)
	}
	res, err := a.Execute(ctx, "exchange_rate", map[string]string{"from": "USD", "to": "EUR"})
	if err != nil {
		t.Fatalf("exchange_rate: %v", err)
	}
	var quote map[string]any
	if err := json.Unmarshal(res.Data, &quote); err != nil || quote["rate"] == nil {
		t.Errorf("quote %s", res.Data)
	}

	public := []string{"exchange_rate"}
	if diff := cmp.Diff(public, listedNames(t, p, hostToken(t, robots, p.url))); diff != "" {
		t.Errorf("the unlinked host lists (-want +got):\n%s", diff)
	}
	alice := newClient()
	if _, _, err := alice.Connect(ctx, p.url, client.ConnectOptions{
		Name: "assistant", Capabilities: []client.CapabilityRequest{{Name: "check_balance"}},
		OnApproval: func(ap client.Approval) {
			if err := approve(p.url, "user_alice", ap.UserCode, "check_balance"); err != nil {
				t.Error(err)
			}
		},
	}); err != nil {
		t.Fatalf("connect Alice's agent: %v", err)
	}
	all := []string{"check_balance", "exchange_rate", "list_accounts", "transfer_money"}
	if diff := cmp.Diff(all, listedNames(t, p, hostToken(t, alice, p.url))); diff != "" {
		t.Errorf("Alice's host lists (-want +got):\n%s", diff)
	}
	d := p.do(t, http.MethodGet, "/capability/describe?name=transfer_money", hostToken(t, alice, p.url), "")
	if d.status != http.StatusOK || d.m["name"] != "transfer_money" {
		t.Errorf("describe with Alice's host JWT: %d %s", d.status, d.body)
	}
}
