package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/agentauth/store"
)

// inbox is a test Notifier.
type inbox struct {
	mu   sync.Mutex
	sent []provider.Notification
}

func (b *inbox) Notify(_ context.Context, n provider.Notification) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sent = append(b.sent, n)
	return nil
}

func (b *inbox) all(p *provider.Provider) []provider.Notification {
	p.WaitNotifications()
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.sent)
}

// users resolves the login hints of two test users.
func users(_ context.Context, hint string) (string, error) {
	return map[string]string{"alice@example.com": "alice", "bob@example.com": "bob"}[hint], nil
}

func newCIBAEnv(t *testing.T, mods ...func(*provider.Config)) (*env, *inbox) {
	b := &inbox{}
	e := newEnv(t, append([]func(*provider.Config){func(c *provider.Config) {
		c.Notifier = b
		c.ResolveLoginHint = users
	}}, mods...)...)
	return e, b
}

var bindingCode = regexp.MustCompile(`\[([A-Z]{4}-[A-Z]{4})\]$`)

// TestCIBADiscovery: "ciba" is offered exactly when a Notifier is set
// (protocol §5.1 approval_methods, §7).
func TestCIBADiscovery(t *testing.T) {
	for _, tt := range []struct {
		name string
		mod  func(*provider.Config)
		want []any
	}{
		{"without a notifier", func(*provider.Config) {}, []any{"device_authorization"}},
		{"with a notifier", func(c *provider.Config) { c.Notifier = &inbox{} }, []any{"device_authorization", "ciba"}},
	} {
		e := newEnv(t, tt.mod)
		r := e.do(http.MethodGet, "/.well-known/agent-configuration", "", nil)
		if diff := cmp.Diff(tt.want, r.body["approval_methods"]); diff != "" {
			t.Errorf("%s: approval_methods (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestCIBAForALinkedHost follows protocol §7.2 for a capability request of
// an agent whose host is linked to Alice: the client prefers CIBA, so the
// approval object is {method: ciba, binding_message, expires_in,
// interval}; Alice is notified with a link to review the request; only
// she can decide it, by its id (the code in the binding message finds
// nothing on the device page); the client polls status as usual.
func TestCIBAForALinkedHost(t *testing.T) {
	e, box := newCIBAEnv(t)
	h, a := newKey(t), newKey(t)
	r := e.register(h, a, map[string]any{"name": "assistant", "capabilities": []any{"echo"}})
	e.approve(r, "alice", nil)
	id := r.str("agent_id")
	rc := e.do(http.MethodPost, provider.PathRequestCapability, e.agentToken(a, id, e.url, nil), map[string]any{
		"capabilities": []any{"check_balance"}, "preferred_method": "ciba", "login_hint": "bob@example.com",
		"binding_message": "Balance for the rent",
	})
	if rc.status != http.StatusOK {
		t.Fatalf("request: %d %s", rc.status, rc.raw)
	}
	ap := rc.body["approval"].(map[string]any)
	binding, _ := ap["binding_message"].(string)
	m := bindingCode.FindStringSubmatch(binding)
	if ap["method"] != "ciba" || m == nil || !strings.HasPrefix(binding, "Balance for the rent ") ||
		ap["expires_in"] != float64(600) || ap["interval"] != float64(2) || ap["user_code"] != nil || ap["verification_uri"] != nil {
		t.Fatalf("approval object %v", ap)
	}
	sent := box.all(e.p)
	if len(sent) != 1 {
		t.Fatalf("notifications %+v", sent)
	}
	n := sent[0]
	// The host is Alice's: the hint naming Bob does not redirect it.
	if n.UserID != "alice" || n.BindingMessage != binding || n.Kind != provider.KindCapabilities ||
		!cmp.Equal([]string{"check_balance"}, n.Capabilities) || n.ReviewURL != e.url+"/approve?request="+n.ApprovalID {
		t.Errorf("notification %+v", n)
	}
	if _, err := e.p.PendingApproval(context.Background(), m[1]); !errors.Is(err, provider.ErrApprovalNotFound) {
		t.Errorf("the binding code found the request on the device page: %v", err)
	}
	if err := e.p.Decide(context.Background(), provider.Decision{ApprovalID: n.ApprovalID, UserID: "bob"}); !errors.Is(err, provider.ErrWrongUser) {
		t.Errorf("bob deciding: %v", err)
	}
	pending, err := e.p.UserApprovals(context.Background(), "alice")
	if err != nil || len(pending) != 1 || pending[0].ID != n.ApprovalID || pending[0].Method != "ciba" || pending[0].BindingMessage != binding {
		t.Fatalf("alice's pending approvals: %+v %v", pending, err)
	}
	if err := e.p.Decide(context.Background(), provider.Decision{ApprovalID: n.ApprovalID, UserID: "alice"}); err != nil {
		t.Fatal(err)
	}
	st := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+id, e.hostToken(h, nil), nil)
	if grants(st)["check_balance"] != "active" {
		t.Errorf("after alice's approval: %s", st.raw)
	}
}

// TestCIBALoginHint: a host no user has approved yet registers with a
// login hint. A hint naming a user addresses the request to that user,
// who approves it and so links the host; a hint naming nobody is
// answered exactly alike (CIBA Core §14, user enumeration) and reaches
// no one.
func TestCIBALoginHint(t *testing.T) {
	e, box := newCIBAEnv(t)
	register := func(hint string) (response, *key) {
		h := newKey(t)
		return e.register(h, newKey(t), map[string]any{"name": "assistant", "capabilities": []any{"echo"},
			"preferred_method": "ciba", "login_hint": hint}), h
	}
	known, h := register("alice@example.com")
	unknown, _ := register("mallory@example.com")
	shape := func(r response) map[string]any {
		ap := r.body["approval"].(map[string]any)
		out := map[string]any{}
		for k, v := range ap {
			out[k] = v
		}
		out["binding_message"] = bindingCode.ReplaceAllString(out["binding_message"].(string), "[CODE]")
		return out
	}
	if diff := cmp.Diff(shape(known), shape(unknown)); diff != "" {
		t.Errorf("a hint naming nobody is answered differently (-known +unknown):\n%s", diff)
	}
	if known.str("status") != "pending" || shape(known)["method"] != "ciba" {
		t.Fatalf("registration: %s", known.raw)
	}
	sent := box.all(e.p)
	if len(sent) != 1 || sent[0].UserID != "alice" || sent[0].Kind != provider.KindRegistration || !sent[0].NewHost {
		t.Fatalf("notifications %+v", sent)
	}
	if err := e.p.Decide(context.Background(), provider.Decision{ApprovalID: sent[0].ApprovalID, UserID: "alice"}); err != nil {
		t.Fatal(err)
	}
	st := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+known.str("agent_id"), e.hostToken(h, nil), nil)
	if st.str("status") != "active" || st.str("user_id") != "alice" {
		t.Errorf("after alice's approval: %s", st.raw)
	}
	// Nobody can decide the request addressed to nobody.
	aps, err := e.st.ListApprovals(context.Background(), unknown.str("agent_id"))
	if err != nil || len(aps) != 1 {
		t.Fatal(aps, err)
	}
	for _, u := range []string{"alice", "bob"} {
		if err := e.p.Decide(context.Background(), provider.Decision{ApprovalID: aps[0].ID, UserID: u}); !errors.Is(err, provider.ErrWrongUser) {
			t.Errorf("%s deciding the unaddressed request: %v", u, err)
		}
	}
}

// TestApprovalMethodChoice pins §7.5: the client's preference is a hint;
// the server decides, falling back to device authorization when CIBA is
// not offered, not preferred, or has nobody to reach.
func TestApprovalMethodChoice(t *testing.T) {
	tests := []struct {
		name      string
		notifier  bool
		policy    func(context.Context, provider.MethodContext) string
		preferred string
		hint      string
		want      string
	}{
		{"no preference", true, nil, "", "alice@example.com", "device_authorization"},
		{"ciba preferred", true, nil, "ciba", "alice@example.com", "ciba"},
		{"ciba preferred without a hint for an unknown host", true, nil, "ciba", "", "device_authorization"},
		{"ciba preferred, not offered", false, nil, "ciba", "alice@example.com", "device_authorization"},
		{"unknown method preferred", true, nil, "carrier_pigeon", "alice@example.com", "device_authorization"},
		{"server policy: always ciba", true, func(context.Context, provider.MethodContext) string { return "ciba" }, "", "alice@example.com", "ciba"},
		{"server policy: never ciba", true, func(context.Context, provider.MethodContext) string { return "device_authorization" }, "ciba", "alice@example.com", "device_authorization"},
		{"server policy naming a method not offered", true, func(context.Context, provider.MethodContext) string { return "telepathy" }, "ciba", "alice@example.com", "device_authorization"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *provider.Config) {
				if tt.notifier {
					c.Notifier = &inbox{}
				}
				c.ResolveLoginHint = users
				c.Policy.ApprovalMethod = tt.policy
			})
			r := e.register(newKey(t), newKey(t), map[string]any{"name": "a", "preferred_method": tt.preferred, "login_hint": tt.hint})
			ap, _ := r.body["approval"].(map[string]any)
			if ap["method"] != tt.want {
				t.Errorf("method %v, want %s (%s)", ap["method"], tt.want, r.raw)
			}
			e.p.WaitNotifications()
		})
	}
}

// TestCIBARateLimits: a host's CIBA requests are limited (429 past the
// budget), and so are the notifications one user receives: past that
// budget requests are still listed for the user, unannounced (CIBA Core
// §14: rate limiting, notification fatigue).
func TestCIBARateLimits(t *testing.T) {
	e, box := newCIBAEnv(t, func(c *provider.Config) {
		c.RateLimits = provider.RateLimits{Limiter: ratelimit.NewMemory(0).WithClock(c.Now),
			CIBAPerHost: ratelimit.PerHour(3), NotifyPerUser: ratelimit.PerHour(2)}
	})
	h := newKey(t)
	for i := range 4 {
		r := e.register(h, newKey(t), map[string]any{"name": "a", "preferred_method": "ciba", "login_hint": "alice@example.com"})
		if i < 3 && r.status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, r.status, r.raw)
		}
		if i == 3 && (r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "") {
			t.Errorf("past the host's CIBA budget: %d %s", r.status, r.raw)
		}
	}
	if sent := box.all(e.p); len(sent) != 2 {
		t.Errorf("%d notifications, want the user's budget of 2", len(sent))
	}
	aps, err := e.st.ListUserApprovals(context.Background(), "alice")
	if err != nil || len(aps) != 3 {
		t.Errorf("alice has %d requests waiting, want 3: %v", len(aps), err)
	}
	for _, ap := range aps {
		if ap.Method != store.MethodCIBA {
			t.Errorf("request %s is %s", ap.ID, ap.Method)
		}
	}
}

// slowInbox is a Notifier whose calls wait until released.
type slowInbox struct {
	started chan struct{}
	release chan struct{}
	mu      sync.Mutex
	calls   int
}

func (b *slowInbox) Notify(ctx context.Context, _ provider.Notification) error {
	b.mu.Lock()
	b.calls++
	b.mu.Unlock()
	b.started <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return nil
}

// TestCIBANotificationsBounded: hosts are free to make and each may ask
// for CIBA approvals, so the Notify calls under way are bounded (64): a
// notification due while that many wait on a slow Notifier is skipped,
// its request still listed for the user, instead of holding another
// goroutine for up to NotifyTimeout. Before, each request started a
// goroutine, without bound.
func TestCIBANotificationsBounded(t *testing.T) {
	const requests = 70
	box := &slowInbox{started: make(chan struct{}, requests+1), release: make(chan struct{})}
	e := newEnv(t, func(c *provider.Config) {
		c.Notifier = box
		c.ResolveLoginHint = func(_ context.Context, hint string) (string, error) { return hint, nil }
		c.RateLimits.Off = true
	})
	register := func(i int) {
		r := e.register(newKey(t), newKey(t), map[string]any{"name": "assistant", "capabilities": []any{"echo"},
			"preferred_method": "ciba", "login_hint": fmt.Sprintf("user_%d", i)})
		if ap, _ := r.body["approval"].(map[string]any); r.status != http.StatusOK || ap["method"] != "ciba" {
			t.Fatalf("registration %d: %d %s", i, r.status, r.raw)
		}
	}
	for i := range requests {
		register(i)
	}
	for range 64 {
		<-box.started
	}
	close(box.release)
	e.p.WaitNotifications()
	box.mu.Lock()
	calls := box.calls
	box.mu.Unlock()
	if calls != 64 {
		t.Errorf("%d requests on a Notifier that does not return started %d calls, want 64", requests, calls)
	}
	pending, err := e.p.UserApprovals(context.Background(), fmt.Sprintf("user_%d", requests-1))
	if err != nil || len(pending) != 1 {
		t.Errorf("the last request, not announced: %+v, %v", pending, err)
	}
	// Once the calls return, notifications go out again.
	register(requests)
	<-box.started
	e.p.WaitNotifications()
}
