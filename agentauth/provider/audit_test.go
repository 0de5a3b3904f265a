package provider_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
)

// trail returns the records written since the last call, oldest first.
type trail struct {
	t     *testing.T
	store audit.Store
	seen  int
}

func (tr *trail) next() []audit.Record {
	tr.t.Helper()
	var all []audit.Record
	q := audit.Query{Limit: audit.MaxLimit}
	for {
		page, err := tr.store.Query(context.Background(), q)
		if err != nil {
			tr.t.Fatal(err)
		}
		all = append(all, page.Records...)
		if page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	// Oldest first; records of one instant keep their order by id.
	for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
		all[i], all[j] = all[j], all[i]
	}
	out := all[tr.seen:]
	tr.seen = len(all)
	return out
}

// expect checks the events of the next records and returns them.
func (tr *trail) expect(what string, events ...string) []audit.Record {
	tr.t.Helper()
	recs := tr.next()
	got := make([]string, len(recs))
	for i, r := range recs {
		got[i] = r.Event
		if r.Outcome != audit.OutcomeOK || r.Time.IsZero() {
			tr.t.Errorf("%s: record %+v", what, r)
		}
	}
	if strings.Join(got, " ") != strings.Join(events, " ") {
		tr.t.Fatalf("%s: events %v, want %v", what, got, events)
	}
	return recs
}

func TestProviderAuditTrail(t *testing.T) {
	// Records of one test clock instant must sort in writing order.
	var (
		e    *env
		tick time.Duration
	)
	mem := audit.NewMemory(func() time.Time { tick += time.Microsecond; return e.clock.Now().Add(tick) })
	e = newUserAPIEnv(t, func(c *provider.Config) {
		c.Audit = mem
		c.Policy.AllowAutonomous = func(context.Context, *store.Host) bool { return true }
	})
	tr := &trail{t: t, store: mem}

	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "assistant", "host_name": "laptop", "capabilities": []any{"echo", "check_balance"}})
	if r.header.Get("X-Request-Id") == "" {
		t.Errorf("no X-Request-Id in the answer")
	}
	id, hostID := r.str("agent_id"), r.str("host_id")
	recs := tr.expect("registration", audit.EventHostRegistered, audit.EventAgentRegistered)
	if recs[0].HostID != hostID || recs[0].Detail != "pending host" {
		t.Errorf("host record %+v", recs[0])
	}
	if ag := recs[1]; ag.AgentID != id || ag.HostID != hostID || ag.UserID != "" || ag.ClientIP != "127.0.0.1" ||
		ag.RequestID != r.header.Get("X-Request-Id") || ag.Detail != "delegated agent, pending; echo (pending), check_balance (pending)" {
		t.Errorf("agent record %+v", ag)
	}

	e.approve(r, "alice", []string{"echo"})
	recs = tr.expect("approval", audit.EventApprovalApproved)
	if ap := recs[0]; ap.UserID != "alice" || ap.AgentID != id || ap.HostID != hostID ||
		ap.Detail != "registration approved: echo (of echo, check_balance)" {
		t.Errorf("approval record %+v", ap)
	}

	// The agent asks for more; Alice denies it on the user API.
	rc := e.do(http.MethodPost, provider.PathRequestCapability, e.agentToken(a, id, e.url, nil),
		map[string]any{"capabilities": []any{"check_balance"}})
	if rc.status != http.StatusOK {
		t.Fatalf("request: %d %s", rc.status, rc.raw)
	}
	recs = tr.expect("capability request", audit.EventGrantsChanged)
	if g := recs[0]; g.UserID != "alice" || g.AgentID != id || g.Detail != "requested by the agent: check_balance (pending)" {
		t.Errorf("request record %+v", g)
	}
	alice := e.apiUser(t, "alice")
	alice.header["X-Request-Id"] = "req-deny-1"
	aps := alice.do(http.MethodGet, provider.PathUserApprovals, nil).body["approvals"].([]any)
	apID := aps[0].(map[string]any)["approval_id"].(string)
	if d := alice.do(http.MethodPost, provider.PathUserApprovals+"/"+apID, map[string]any{"decision": "deny"}); d.status != http.StatusOK ||
		d.header.Get("X-Request-Id") != "req-deny-1" {
		t.Fatalf("deny: %d %s %v", d.status, d.raw, d.header)
	}
	recs = tr.expect("denial", audit.EventApprovalDenied)
	if d := recs[0]; d.UserID != "alice" || d.RequestID != "req-deny-1" || d.ClientIP != "127.0.0.1" ||
		d.Detail != "capabilities denied: check_balance" {
		t.Errorf("denial record %+v", d)
	}
	delete(alice.header, "X-Request-Id")

	// Alice grants and revokes on the user API.
	if g := alice.do(http.MethodPost, provider.PathUserAgents+"/"+id+"/grants", map[string]any{"capabilities": []any{"check_balance"}}); g.status != http.StatusOK {
		t.Fatalf("grant: %d %s", g.status, g.raw)
	}
	recs = tr.expect("grant", audit.EventGrantsChanged)
	if g := recs[0]; g.UserID != "alice" || g.Capability != "check_balance" || g.Detail != "granted by the user: check_balance (active)" {
		t.Errorf("grant record %+v", g)
	}
	if g := alice.do(http.MethodDelete, provider.PathUserAgents+"/"+id+"/grants/echo", nil); g.status != http.StatusOK {
		t.Fatalf("revoke grant: %d %s", g.status, g.raw)
	}
	recs = tr.expect("grant revocation", audit.EventGrantsChanged)
	if g := recs[0]; g.Capability != "echo" || g.Detail != "revoked by the user" || g.AgentID != id {
		t.Errorf("grant revocation record %+v", g)
	}
	if u := alice.do(http.MethodPatch, provider.PathUserHosts+"/"+hostID, map[string]any{"default_capabilities": []any{"echo", "check_balance"}}); u.status != http.StatusOK {
		t.Fatalf("host defaults: %d %s", u.status, u.raw)
	}
	recs = tr.expect("host defaults", audit.EventGrantsChanged)
	if g := recs[0]; g.HostID != hostID || g.AgentID != "" || g.Detail != "host default capabilities: check_balance, echo" {
		t.Errorf("host defaults record %+v", g)
	}

	// Key rotations, then the host revokes the agent.
	a2, h2 := newKey(t), newKey(t)
	if x := e.do(http.MethodPost, provider.PathRotateKey, e.hostToken(h, nil), map[string]any{"agent_id": id, "public_key": a2.jwk()}); x.status != http.StatusOK {
		t.Fatalf("rotate agent key: %d %s", x.status, x.raw)
	}
	if x := e.do(http.MethodPost, provider.PathRotateHostKey, e.hostToken(h, nil), map[string]any{"public_key": h2.jwk()}); x.status != http.StatusOK {
		t.Fatalf("rotate host key: %d %s", x.status, x.raw)
	}
	recs = tr.expect("rotations", audit.EventAgentKeyRotated, audit.EventHostKeyRotated)
	if recs[0].AgentID != id || recs[0].Detail != "key "+a2.thumbprint() || recs[1].HostID != hostID || recs[1].AgentID != "" ||
		recs[1].UserID != "alice" || recs[1].Detail != "key "+h2.thumbprint() {
		t.Errorf("rotation records %+v", recs)
	}
	for range 2 { // the second revocation changes nothing and records nothing
		if x := e.do(http.MethodPost, provider.PathRevoke, e.hostToken(h2, nil), map[string]any{"agent_id": id}); x.status != http.StatusOK {
			t.Fatalf("revoke: %d %s", x.status, x.raw)
		}
	}
	recs = tr.expect("host revokes agent", audit.EventAgentRevoked)
	if v := recs[0]; v.AgentID != id || v.UserID != "alice" || v.Detail != "revoked by its host" {
		t.Errorf("revocation record %+v", v)
	}

	// A second agent, active at once; Alice revokes it, then the host.
	b := e.register(h2, newKey(t), map[string]any{"name": "second", "capabilities": []any{"echo"}})
	if b.str("status") != "active" {
		t.Fatalf("second agent: %s", b.raw)
	}
	recs = tr.expect("second registration", audit.EventAgentRegistered)
	if recs[0].UserID != "alice" || recs[0].Detail != "delegated agent, active; echo (active)" {
		t.Errorf("second registration %+v", recs[0])
	}
	if x := alice.do(http.MethodPost, provider.PathUserAgents+"/"+b.str("agent_id")+"/revoke", nil); x.status != http.StatusOK {
		t.Fatalf("user revokes agent: %d %s", x.status, x.raw)
	}
	if x := alice.do(http.MethodPost, provider.PathUserHosts+"/"+hostID+"/revoke", nil); x.status != http.StatusOK {
		t.Fatalf("user revokes host: %d %s", x.status, x.raw)
	}
	recs = tr.expect("user revocations", audit.EventAgentRevoked, audit.EventHostRevoked)
	if recs[0].Detail != "revoked by the user" || recs[0].AgentID != b.str("agent_id") ||
		recs[1].Detail != "revoked by the user; 0 agents revoked" || recs[1].UserID != "alice" {
		t.Errorf("user revocation records %+v", recs)
	}

	// A host with an autonomous agent is linked to Bob: the agent is
	// claimed. Then the host revokes itself.
	h3 := newKey(t)
	robot := e.register(h3, newKey(t), map[string]any{"name": "worker", "mode": "autonomous", "capabilities": []any{"echo"}})
	tr.expect("autonomous registration", audit.EventHostRegistered, audit.EventAgentRegistered)
	e.approve(e.register(h3, newKey(t), map[string]any{"name": "assistant"}), "bob", nil)
	recs = tr.expect("claim", audit.EventAgentRegistered, audit.EventApprovalApproved, audit.EventHostClaimed)
	if c := recs[2]; c.AgentID != robot.str("agent_id") || c.UserID != "bob" || c.HostID != robot.str("host_id") {
		t.Errorf("claim record %+v", c)
	}
	if x := e.do(http.MethodPost, provider.PathRevokeHost, e.hostToken(h3, nil), nil); x.status != http.StatusOK {
		t.Fatalf("host revokes itself: %d %s", x.status, x.raw)
	}
	recs = tr.expect("host revocation", audit.EventHostRevoked)
	if v := recs[0]; v.UserID != "bob" || v.Detail != "revoked by itself; 1 agents revoked" {
		t.Errorf("host revocation record %+v", v)
	}
}

func TestProviderAuditReactivation(t *testing.T) {
	mem := audit.NewMemory(nil)
	e := newEnv(t, func(c *provider.Config) {
		c.Audit = mem
		c.Lifetimes = store.Policy{SessionTTL: time.Hour, AbsoluteLifetime: 24 * time.Hour}
	})
	h := newKey(t)
	r := e.register(h, newKey(t), map[string]any{"name": "a", "capabilities": []any{"echo"}})
	e.approve(r, "alice", nil)
	e.clock.Advance(2 * time.Hour)
	if x := e.do(http.MethodPost, provider.PathReactivate, e.hostToken(h, nil), map[string]any{"agent_id": r.str("agent_id")}); x.status != http.StatusOK {
		t.Fatalf("reactivate: %d %s", x.status, x.raw)
	}
	page, err := mem.Query(context.Background(), audit.Query{Event: audit.EventAgentReactivated})
	if err != nil || len(page.Records) != 1 {
		t.Fatalf("%v %+v", err, page)
	}
	if rec := page.Records[0]; rec.AgentID != r.str("agent_id") || rec.UserID != "alice" || rec.Detail != "active; echo (active)" {
		t.Errorf("reactivation record %+v", rec)
	}
}

// downSink refuses every record.
type downSink struct{}

func (downSink) Write(context.Context, audit.Record) error { return errors.New("audit store down") }

func TestProviderAuditFailureKeepsTheChange(t *testing.T) {
	var logged bytes.Buffer
	e := newEnv(t, func(c *provider.Config) {
		c.Audit = downSink{}
		c.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	})
	r := e.register(newKey(t), newKey(t), map[string]any{"name": "a", "capabilities": []any{"echo"}})
	if r.status != http.StatusOK {
		t.Fatalf("register with the audit store down: %d %s", r.status, r.raw)
	}
	e.approve(r, "alice", nil)
	if n := strings.Count(logged.String(), "audit record not written"); n != 3 || !strings.Contains(logged.String(), "audit store down") {
		t.Errorf("logged %d failures:\n%s", n, logged.String())
	}
}
