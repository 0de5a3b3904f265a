package agentauthtest_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

type payee struct {
	Name string `json:"name"`
}

type payeesIn struct {
	None bool `json:"none,omitempty"`
}

// listPayees answers a top-level JSON array, nil when asked for none.
var listPayees = core.MustDefine("list_payees", "List the user's payees.",
	func(_ context.Context, user string, in payeesIn) ([]payee, error) {
		if in.None {
			return nil, nil
		}
		return []payee{{Name: user + "'s landlord"}, {Name: "bob"}}, nil
	})

func TestArrayOutput(t *testing.T) {
	exec := srvExecutor(t, listPayees)

	r := agentauthtest.Execute(t, exec, srvConfig(), agentauthtest.Call{Capability: "list_payees"})
	if got, want := outcomeOf(r), (outcome{200, "", `[{"name":"user_test's landlord"},{"name":"bob"}]`}); got != want {
		t.Fatalf("execute: %+v, want %+v", got, want)
	}
	var payees []payee
	r.Decode(t, &payees)
	if diff := cmp.Diff([]payee{{"user_test's landlord"}, {"bob"}}, payees); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}

	r = agentauthtest.Execute(t, exec, srvConfig(), agentauthtest.Call{Capability: "list_payees", Arguments: map[string]bool{"none": true}})
	if got, want := outcomeOf(r), (outcome{200, "", `[]`}); got != want {
		t.Fatalf("execute with nothing to list: %+v, want %+v", got, want)
	}
	payees = nil
	r.Decode(t, &payees)
	if payees == nil || len(payees) != 0 {
		t.Errorf("decoded %#v, want an empty slice", payees)
	}

	s := agentauthtest.NewServer(t, exec, srvConfig())
	a := agentauthtest.NewHost(agentauthtest.Host{ID: "host_a", UserID: "user_a"}).NewAgent(agentauthtest.Agent{ID: "agent_a"})
	a.Grant("list_payees", nil)
	s.Add(t, a)
	r = s.BatchExecute(t, s.Token(a), []agentauthtest.BatchRequest{
		{ID: "all", Capability: "list_payees"},
		{ID: "none", Capability: "list_payees", Arguments: map[string]bool{"none": true}},
	})
	type item struct{ ID, Status, Data string }
	var items []item
	for _, it := range r.Items {
		items = append(items, item{it.ID, it.Status, string(it.Data)})
	}
	want := []item{
		{"all", "completed", `[{"name":"user_a's landlord"},{"name":"bob"}]`},
		{"none", "completed", `[]`},
	}
	if r.Status != 200 || !cmp.Equal(want, items) {
		t.Errorf("batch: %d %s\nitems %v", r.Status, r.Body, items)
	}
}
