package provider_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

// statementCapability acts for a user: agents with one, and hosts linked
// to one, see it.
var statementCapability = core.MustDefine("statement", "Read the user's statement.",
	func(_ context.Context, _ struct{}, in echoIO) (echoIO, error) { return in, nil },
	core.WithApproval(core.ApprovalSession),
	core.WithVisibility(func(_ context.Context, id *auth.Identity, executing bool) bool {
		if s := agentauth.SessionOf(id); s != nil {
			return s.Agent.UserID != "" || executing
		}
		if h := agentauth.HostOf(id); h != nil {
			return h.UserID != ""
		}
		return false
	}))

func listNames(t *testing.T, r response) []string {
	t.Helper()
	var page struct {
		Capabilities []map[string]any `json:"capabilities"`
	}
	if err := json.Unmarshal(r.raw, &page); err != nil {
		t.Fatalf("list: %v: %s", err, r.raw)
	}
	var names []string
	for _, c := range page.Capabilities {
		if _, ok := c["grant_status"]; ok {
			t.Errorf("%v: grant_status for a host caller", c["name"])
		}
		names = append(names, c["name"].(string))
	}
	return names
}

// TestHostJWTListAndDescribe checks the host JWT mode of protocol §5.2 and
// §5.2.1 at the provider's own location: the host JWT is verified as
// registration verifies it, a host linked to a user sees the
// capabilities available to that user, without grant_status, and a host
// JWT never executes.
func TestHostJWTListAndDescribe(t *testing.T) {
	e := newEnv(t)
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "a", "capabilities": []any{"echo"}})
	pendingList := e.do(http.MethodGet, "/capability/list", e.hostToken(h, nil), nil)
	if pendingList.status != http.StatusOK {
		t.Fatalf("list by a pending host: %d %s", pendingList.status, pendingList.raw)
	}
	if diff := cmp.Diff([]string{"check_balance", "echo", "transfer"}, listNames(t, pendingList)); diff != "" {
		t.Errorf("a pending host sees (-want +got):\n%s", diff)
	}
	e.approve(r, "alice", nil)

	linked := e.do(http.MethodGet, "/capability/list", e.hostToken(h, nil), nil)
	if linked.status != http.StatusOK || linked.header.Get("Cache-Control") != "private, max-age=300" {
		t.Fatalf("list by alice's host: %d %s %q", linked.status, linked.raw, linked.header.Get("Cache-Control"))
	}
	if diff := cmp.Diff([]string{"check_balance", "echo", "statement", "transfer"}, listNames(t, linked)); diff != "" {
		t.Errorf("alice's host sees (-want +got):\n%s", diff)
	}
	d := e.do(http.MethodGet, "/capability/describe?name=statement", e.hostToken(h, nil), nil)
	if d.status != http.StatusOK || d.str("name") != "statement" || d.body["input"] == nil || d.body["grant_status"] != nil {
		t.Errorf("describe by alice's host: %d %s", d.status, d.raw)
	}

	tests := []struct {
		name   string
		token  string
		status int
		code   agentcap.Code
	}{
		{"unknown host", e.hostToken(newKey(t), nil), 401, agentcap.CodeInvalidJWT},
		{"audience of the location", e.hostToken(h, nil, func(_, c map[string]any) { c["aud"] = e.url + "/capability/execute" }), 401, agentcap.CodeInvalidJWT},
		{"agent typ signed by the host", e.hostToken(h, nil, func(hd, _ map[string]any) { hd["typ"] = "agent+jwt" }), 401, agentcap.CodeInvalidJWT},
		{"a known host's host_public_key claim is not trusted", e.hostToken(h, nil, func(_, c map[string]any) { c["host_public_key"] = newKey(t).jwk() }), 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(http.MethodGet, "/capability/list", tt.token, nil)
			if r.status != tt.status || (tt.code != "" && r.code() != tt.code) {
				t.Errorf("%d %s, want %d %s", r.status, r.raw, tt.status, tt.code)
			}
		})
	}
	replayed := e.hostToken(h, nil)
	if r := e.do(http.MethodGet, "/capability/list", replayed, nil); r.status != 200 {
		t.Fatalf("first use: %d", r.status)
	}
	if r := e.do(http.MethodGet, "/capability/list", replayed, nil); r.status != 401 {
		t.Errorf("replayed host JWT: %d %s", r.status, r.raw)
	}
	if r := e.do(http.MethodPost, "/capability/execute", e.hostToken(h, nil), map[string]any{"capability": "echo", "arguments": map[string]any{"message": "x"}}); r.status != 401 || r.code() != agentcap.CodeInvalidJWT {
		t.Errorf("execute with a host JWT: %d %s", r.status, r.raw)
	}

	// A revoked host is told so.
	if _, err := e.st.UpdateHostStatus(context.Background(), r.str("host_id"), []string{agentcap.StatusActive}, agentcap.StatusRevoked); err != nil {
		t.Fatal(err)
	}
	if r := e.do(http.MethodGet, "/capability/list", e.hostToken(h, nil), nil); r.status != 403 || r.code() != agentcap.CodeHostRevoked {
		t.Errorf("revoked host: %d %s", r.status, r.raw)
	}
}
