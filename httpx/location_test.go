package httpx_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

// TestListEntriesCarryLocation checks that a capability with a location
// names it in its list entry as well as in describe: protocol §5.2 entries
// carry the §2.12 fields, and clients route execution by location.
func TestListEntriesCarryLocation(t *testing.T) {
	remote := core.MustDefine("remote_op", "Runs elsewhere",
		func(_ context.Context, _ appCtx, _ core.NoInput) (outN, error) { return outN{}, nil },
		core.WithLocation("https://api.example.com/agent/execute"))
	local := core.MustDefine("local_op", "Runs here",
		func(_ context.Context, _ appCtx, _ core.NoInput) (outN, error) { return outN{}, nil })
	exec := core.MustExecutor(core.MustRegistry(remote, local), newAppCtx, core.Config{})
	h, err := httpx.New(exec, httpx.Config{Verifier: tokens{}})
	if err != nil {
		t.Fatal(err)
	}
	r := call(t, h, http.MethodGet, "/capability/list", "Bearer alice", "", "")
	if r.Status != http.StatusOK {
		t.Fatalf("list: %d %s", r.Status, r.Body)
	}
	var page struct {
		Capabilities []map[string]any `json:"capabilities"`
	}
	if err := json.Unmarshal([]byte(r.Body), &page); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, c := range page.Capabilities {
		got[c["name"].(string)] = c["location"]
	}
	want := map[string]any{"local_op": nil, "remote_op": "https://api.example.com/agent/execute"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("locations in the listing (-want +got):\n%s", diff)
	}
	d := call(t, h, http.MethodGet, "/capability/describe?name=remote_op", "Bearer alice", "", "")
	var desc map[string]any
	if err := json.Unmarshal([]byte(d.Body), &desc); err != nil {
		t.Fatal(err)
	}
	if desc["location"] != want["remote_op"] {
		t.Errorf("describe location %v", desc["location"])
	}
}
