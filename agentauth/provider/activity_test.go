package provider_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/audit"
)

// seedActivity writes n call records for user, a second apart, oldest
// first, ending at end.
func seedActivity(t *testing.T, store audit.Store, user string, n int, end time.Time) {
	t.Helper()
	for i := range n {
		r := audit.Record{Time: end.Add(time.Duration(i-n+1) * time.Second), Event: "echo", Outcome: audit.OutcomeOK,
			UserID: user, AgentID: "agt_seed", Capability: "echo", Detail: fmt.Sprintf("call %d", i)}
		if err := store.Write(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
}

var olderLink = regexp.MustCompile(`id="older" href="([^"]+)"`)

// TestActivityPage covers the Activity page: sign-in, only the user's
// records, newest first, pages through the store's cursor, the shared
// layout and headers, and refusals.
func TestActivityPage(t *testing.T) {
	mem := audit.NewMemory(nil)
	e := newPageEnv(t, func(c *provider.Config) { c.Audit = mem })
	seedActivity(t, mem, "alice", 30, e.clock.Now())
	seedActivity(t, mem, "bob", 3, e.clock.Now())

	anon := newBrowser(t, e)
	if status, _, hdr := anon.get("/activity"); status != http.StatusSeeOther || hdr.Get("Location") != "/login?next=%2Factivity" {
		t.Errorf("anonymous: %d %q", status, hdr.Get("Location"))
	}

	alice := newSignedIn(t, e, "alice")
	status, page, hdr := alice.get("/activity")
	if status != http.StatusOK {
		t.Fatalf("activity page: %d %s", status, page)
	}
	for k, v := range map[string]string{"X-Frame-Options": "DENY", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"} {
		if hdr.Get(k) != v {
			t.Errorf("%s = %q", k, hdr.Get(k))
		}
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", csp)
	}
	for _, want := range []string{`aria-current="page">Activity<`, ">Your agents<", ">Approve an agent<", "call 29", "call 5"} {
		if !strings.Contains(page, want) {
			t.Errorf("the first page lacks %q", want)
		}
	}
	if n := strings.Count(page, `class="record"`); n != provider.ActivityPageSize {
		t.Errorf("first page: %d records", n)
	}
	if strings.Index(page, "call 29") > strings.Index(page, "call 28") || strings.Contains(page, "call 4<") {
		t.Error("the first page is not the newest records, newest first")
	}
	m := olderLink.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no link to older activity")
	}
	older := strings.ReplaceAll(m[1], "&amp;", "&")
	status, page, _ = alice.get(older)
	if status != http.StatusOK || strings.Count(page, `class="record"`) != 5 || !strings.Contains(page, "call 4<") ||
		!strings.Contains(page, `id="newest"`) || strings.Contains(page, `id="older"`) {
		t.Errorf("second page: %d %s", status, page)
	}
	if strings.Contains(page, "call 5<") {
		t.Error("the second page repeats the first")
	}

	bob := newSignedIn(t, e, "bob")
	if _, page, _ := bob.get("/activity"); strings.Count(page, `class="record"`) != 3 {
		t.Errorf("bob sees %d records", strings.Count(page, `class="record"`))
	}
	empty := newPageEnv(t, func(c *provider.Config) { c.Audit = audit.NewMemory(nil) })
	if _, page, _ := newSignedIn(t, empty, "alice").get("/activity"); !strings.Contains(page, `id="no-activity"`) {
		t.Error("a user without records is not told so")
	}

	if status, page, _ := alice.get("/activity?cursor=" + url.QueryEscape("not-a-cursor")); status != http.StatusBadRequest || !strings.Contains(page, "Start again") {
		t.Errorf("bad cursor: %d", status)
	}
	if status, _ := alice.post("/activity", url.Values{}, sameSite); status != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", status)
	}
}

// TestUserAPIActivity covers GET /user/activity.
func TestUserAPIActivity(t *testing.T) {
	mem := audit.NewMemory(nil)
	e := newUserAPIEnv(t, func(c *provider.Config) { c.Audit = mem })
	seedActivity(t, mem, "alice", 7, e.clock.Now())
	seedActivity(t, mem, "bob", 2, e.clock.Now())
	if err := mem.Write(context.Background(), audit.Record{Event: audit.EventAgentRevoked, Outcome: audit.OutcomeOK, UserID: "alice", AgentID: "agt_other"}); err != nil {
		t.Fatal(err)
	}
	alice := e.apiUser(t, "alice")
	var seen []string
	path := provider.PathUserActivity + "?limit=3&capability=echo"
	for range 4 {
		r := alice.do(http.MethodGet, path, nil)
		if r.status != http.StatusOK || r.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("activity: %d %s", r.status, r.raw)
		}
		for _, rec := range r.body["records"].([]any) {
			m := rec.(map[string]any)
			if m["user_id"] != "alice" || m["capability"] != "echo" {
				t.Errorf("record %v", m)
			}
			seen = append(seen, m["detail"].(string))
		}
		next, _ := r.body["next_cursor"].(string)
		if next == "" {
			break
		}
		path = provider.PathUserActivity + "?limit=3&capability=echo&cursor=" + url.QueryEscape(next)
	}
	if got := strings.Join(seen, ","); got != "call 6,call 5,call 4,call 3,call 2,call 1,call 0" {
		t.Errorf("pages: %s", got)
	}
	if r := alice.do(http.MethodGet, provider.PathUserActivity+"?event="+audit.EventAgentRevoked, nil); len(r.body["records"].([]any)) != 1 {
		t.Errorf("event filter: %s", r.raw)
	}
	for _, q := range []string{"?limit=0", "?limit=x", "?cursor=zzz"} {
		if r := alice.do(http.MethodGet, provider.PathUserActivity+q, nil); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", q, r.status, r.raw)
		}
	}
	if r := e.apiUser(t, "carol").do(http.MethodGet, provider.PathUserActivity, nil); r.status != http.StatusOK || strings.TrimSpace(string(r.raw)) != `{"records":[]}` {
		t.Errorf("no records: %d %s", r.status, r.raw)
	}

	// Without an activity store there is neither the endpoint nor the
	// page, nor a link to it.
	plain := newPageEnv(t)
	if r := plain.do(http.MethodGet, provider.PathUserActivity, "", nil); r.status != http.StatusNotFound {
		t.Errorf("endpoint without a store: %d", r.status)
	}
	b := newSignedIn(t, plain, "alice")
	if status, _, _ := b.get("/activity"); status != http.StatusNotFound {
		t.Errorf("page without a store: %d", status)
	}
	if _, page, _ := b.get("/agents"); strings.Contains(page, "Activity") {
		t.Error("the navigation links to a page that is not served")
	}
}
