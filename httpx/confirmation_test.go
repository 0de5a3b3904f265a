package httpx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/idempotency"
)

type sendIn struct {
	Amount int `json:"amount"`
}

type sendOut struct {
	Sent int `json:"sent"`
}

// confirmFixture serves "send", which needs a confirmation, with
// idempotency keys, over a token manager whose clock the test moves.
type confirmFixture struct {
	t   *testing.T
	url string
	// now is the token manager's clock.
	now time.Time
	mu  sync.Mutex
	// down takes the token store down.
	down atomic.Bool
}

// switchedConfirmer fails while its fixture's store is down.
type switchedConfirmer struct {
	core.Confirmer
	down *atomic.Bool
}

var errTokensDown = errors.New("dial tcp 127.0.0.1:6379: connection refused")

func (c switchedConfirmer) Issue(ctx context.Context, b core.ConfirmationBinding) (core.Confirmation, error) {
	if c.down.Load() {
		return core.Confirmation{}, errTokensDown
	}
	return c.Confirmer.Issue(ctx, b)
}

func (c switchedConfirmer) Consume(ctx context.Context, token string, b core.ConfirmationBinding) error {
	if c.down.Load() {
		return errTokensDown
	}
	return c.Confirmer.Consume(ctx, token, b)
}

// noContext builds the empty application context of capabilities that
// need none.
func noContext(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) {
	return struct{}{}, nil
}

func newConfirmFixture(t *testing.T) *confirmFixture {
	f := &confirmFixture{t: t, now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	send := core.MustDefine("send", "Send money",
		func(_ context.Context, _ struct{}, in sendIn) (sendOut, error) { return sendOut{Sent: in.Amount}, nil },
		core.WithConfirmation(),
		core.WithPreview(func(_ context.Context, _ struct{}, in sendIn) (sendOut, error) { return sendOut{Sent: in.Amount}, nil }))
	mgr, err := confirm.New(confirm.Config{Now: func() time.Time {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.now
	}})
	if err != nil {
		t.Fatal(err)
	}
	exec := core.MustExecutor(core.MustRegistry(send), noContext,
		core.Config{Confirmation: core.ConfirmationConfig{Confirmer: switchedConfirmer{mgr, &f.down}}})
	guard, err := idempotency.New(idempotency.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpx.New(exec, httpx.Config{Verifier: bearerName, LongRunning: httpx.LongRunning{Idempotency: guard}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// advance moves the token manager's clock.
func (f *confirmFixture) advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// post sends body to route as who, with an Idempotency-Key unless key is
// empty, and returns the status, the decoded body and whether the answer
// was replayed.
func (f *confirmFixture) post(route, who, key, body string) (int, map[string]any, bool) {
	f.t.Helper()
	req, _ := http.NewRequest("POST", f.url+route, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+who)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		f.t.Fatalf("%s: %v", data, err)
	}
	return resp.StatusCode, m, resp.Header.Get("Idempotent-Replayed") == "true"
}

// token previews send with amount as who and returns the token issued.
func (f *confirmFixture) token(who string, amount int) string {
	f.t.Helper()
	status, body, _ := f.post("/capability/preview", who, "", sendBody(amount, ""))
	token, _ := body["confirmation"].(map[string]any)["token"].(string)
	if status != 200 || token == "" {
		f.t.Fatalf("preview: %d %v", status, body)
	}
	return token
}

func sendBody(amount int, token string) string {
	b := `{"capability":"send","arguments":{"amount":` + strconv.Itoa(amount) + `}`
	if token != "" {
		b += `,"confirmation_token":"` + token + `"`
	}
	return b + "}"
}

func TestExecuteWithConfirmation(t *testing.T) {
	f := newConfirmFixture(t)
	const execute = "/capability/execute"
	status, body, _ := f.post(execute, "alice", "k1", sendBody(5, ""))
	if status != 428 || body["error"] != "confirmation_required" {
		t.Fatalf("without a token: %d %v", status, body)
	}
	if p, _ := body["preview"].(map[string]any); p["sent"] != 5.0 {
		t.Errorf("preview %v", body["preview"])
	}
	token, _ := body["confirmation"].(map[string]any)["token"].(string)
	for _, x := range []struct {
		who, key string
		amount   int
		status   int
		code     string
	}{
		{"mallory", "", 5, 403, "invalid_confirmation"},
		{"alice", "", 6, 409, "confirmation_mismatch"},
		// The same key, now with the token: the 428 was not stored.
		{"alice", "k1", 5, 200, ""},
		// A replay returns the stored answer without spending a token.
		{"alice", "k1", 5, 200, ""},
		{"alice", "", 5, 409, "confirmation_used"},
	} {
		status, body, _ := f.post(execute, x.who, x.key, sendBody(x.amount, token))
		if status != x.status || (x.code != "" && body["error"] != x.code) {
			t.Errorf("%s %d: %d %v, want %d %s", x.who, x.amount, status, body, x.status, x.code)
		}
	}

	// A preview answers the preview and a token, which then confirms.
	status, body, _ = f.post("/capability/preview", "alice", "", sendBody(7, ""))
	conf, _ := body["confirmation"].(map[string]any)
	if p, _ := body["preview"].(map[string]any); status != 200 || p["sent"] != 7.0 || conf["token"] == nil || conf["expires_at"] == nil {
		t.Fatalf("preview: %d %v", status, body)
	}
	if status, body, _ := f.post(execute, "alice", "", sendBody(7, conf["token"].(string))); status != 200 {
		t.Errorf("execute after preview: %d %v", status, body)
	}
}

// TestIdempotencyKeepsNoConfirmationRefusal retries one Idempotency-Key
// through every refusal of the confirmation stage: none is kept, so the
// key finally runs the call with a good token, and only that answer is
// replayed.
func TestIdempotencyKeepsNoConfirmationRefusal(t *testing.T) {
	f := newConfirmFixture(t)
	const execute, key = "/capability/execute", "retry-me"
	used := f.token("alice", 5)
	if status, body, _ := f.post(execute, "alice", "", sendBody(5, used)); status != 200 {
		t.Fatalf("spending a token: %d %v", status, body)
	}
	expired := f.token("alice", 5)
	f.advance(confirm.DefaultTTL)
	steps := []struct {
		name   string
		who    string
		token  string
		status int
		code   string
	}{
		{"no token", "alice", "", 428, "confirmation_required"},
		{"forged", "alice", "cfm_" + strings.Repeat("A", 43), 403, "invalid_confirmation"},
		{"another caller's", "alice", f.token("mallory", 5), 403, "invalid_confirmation"},
		{"other arguments", "alice", f.token("alice", 6), 409, "confirmation_mismatch"},
		{"used", "alice", used, 409, "confirmation_used"},
		{"expired", "alice", expired, 409, "confirmation_expired"},
		{"good", "alice", f.token("alice", 5), 200, ""},
	}
	for _, s := range steps {
		status, body, replayed := f.post(execute, s.who, key, sendBody(5, s.token))
		if status != s.status || (s.code != "" && body["error"] != s.code) || replayed {
			t.Errorf("%s: %d %v (replayed %v), want %d %s", s.name, status, body, replayed, s.status, s.code)
		}
	}
	// The success is kept: a replay needs no token and spends none.
	status, body, replayed := f.post(execute, "alice", key, sendBody(5, ""))
	if status != 200 || !replayed || body["data"].(map[string]any)["sent"] != 5.0 {
		t.Errorf("replay: %d %v (replayed %v)", status, body, replayed)
	}
}

// TestConfirmationStoreDown: while the token store does not answer, an
// execute with a token, one without and a preview are answered 503
// temporarily_unavailable with Retry-After, nothing runs, and nothing is
// kept under the Idempotency-Key; once it is back, the same key and the
// same token run the call.
func TestConfirmationStoreDown(t *testing.T) {
	f := newConfirmFixture(t)
	const execute, key = "/capability/execute", "during-outage"
	token := f.token("alice", 5)
	f.down.Store(true)
	for _, c := range []struct{ name, route, key, body string }{
		{"execute with a token", execute, key, sendBody(5, token)},
		{"execute without one", execute, "", sendBody(5, "")},
		{"preview", "/capability/preview", "", sendBody(5, "")},
	} {
		req, _ := http.NewRequest("POST", f.url+c.route, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer alice")
		if c.key != "" {
			req.Header.Set("Idempotency-Key", c.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" ||
			!strings.Contains(string(data), `"error":"temporarily_unavailable"`) || strings.Contains(string(data), "refused") {
			t.Errorf("%s: %d %s, Retry-After %q", c.name, resp.StatusCode, data, resp.Header.Get("Retry-After"))
		}
	}
	f.down.Store(false)
	status, body, replayed := f.post(execute, "alice", key, sendBody(5, token))
	if status != 200 || replayed || body["data"].(map[string]any)["sent"] != 5.0 {
		t.Errorf("after the outage: %d %v (replayed %v)", status, body, replayed)
	}
}

// TestDiscoveryConfirmation checks the members list and describe entries
// carry about previews and confirmations: requires_confirmation follows
// the executor's rule, and only with a Confirmer; a lazy executor reports
// the declaration until it is built, then its rule.
func TestDiscoveryConfirmation(t *testing.T) {
	preview := func(_ context.Context, _ struct{}, in sendIn) (sendOut, error) { return sendOut{Sent: in.Amount}, nil }
	run := func(_ context.Context, _ struct{}, in sendIn) (sendOut, error) { return sendOut{Sent: in.Amount}, nil }
	defs := func() *core.Registry {
		return core.MustRegistry(
			core.MustDefine("declared", "Needs a confirmation by declaration", run, core.WithConfirmation(), core.WithPreview(preview)),
			core.MustDefine("risky", "Needs one by risk", run, core.WithRisk(core.RiskCritical)),
			core.MustDefine("plain", "Needs none", run, core.WithRisk(core.RiskMedium), core.WithPreview(preview)),
		)
	}
	mgr, err := confirm.New(confirm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	config := func(confirmer core.Confirmer) core.Config {
		return core.Config{Confirmation: core.ConfirmationConfig{Confirmer: confirmer}}
	}
	cfg := httpx.Config{Verifier: auth.VerifierFunc(func(context.Context, *auth.Request) (*auth.Identity, error) {
		return &auth.Identity{Subject: "alice"}, nil
	})}
	handler := func(src core.Source) *httpx.Handler {
		h, err := httpx.New(src, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	withConfirmer := handler(core.MustExecutor(defs(), noContext, config(mgr)))
	reg := defs()
	without := handler(core.MustExecutor(core.MustRegistry(
		core.MustDefine("risky", "Needs one by risk", run, core.WithRisk(core.RiskCritical)),
		core.MustDefine("plain", "Needs none", run, core.WithRisk(core.RiskMedium), core.WithPreview(preview)),
	), noContext, config(nil)))
	lazy := core.Lazy(reg, func(context.Context) (*core.Executor, error) {
		return core.NewExecutor(reg, noContext, config(mgr))
	})
	lazyHandler := handler(lazy)

	type entry struct {
		Risk                 string          `json:"risk"`
		SupportsPreview      *bool           `json:"supports_preview"`
		RequiresConfirmation *bool           `json:"requires_confirmation"`
		PreviewSchema        json.RawMessage `json:"preview_schema"`
	}
	type view struct {
		risk             string
		preview, confirm bool
	}
	get := func(h http.Handler, path string, v any) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatal(err)
		}
	}
	// check compares list and describe entries, which must agree, with
	// want.
	check := func(label string, h http.Handler, want map[string]view) {
		t.Helper()
		var list struct{ Capabilities []map[string]json.RawMessage }
		get(h, "/capability/list", &list)
		if len(list.Capabilities) != len(want) {
			t.Fatalf("%s: %d entries, want %d", label, len(list.Capabilities), len(want))
		}
		for _, raw := range list.Capabilities {
			var name string
			_ = json.Unmarshal(raw["name"], &name)
			if _, ok := raw["preview_schema"]; ok {
				t.Errorf("%s: list entry %s carries the preview schema", label, name)
			}
			var fromList, fromDescribe entry
			b, _ := json.Marshal(raw)
			_ = json.Unmarshal(b, &fromList)
			get(h, "/capability/describe?name="+name, &fromDescribe)
			for _, e := range []entry{fromList, fromDescribe} {
				if e.SupportsPreview == nil || e.RequiresConfirmation == nil {
					t.Fatalf("%s: %s lacks supports_preview or requires_confirmation", label, name)
				}
				got := view{e.Risk, *e.SupportsPreview, *e.RequiresConfirmation}
				if got != want[name] {
					t.Errorf("%s: %s = %+v, want %+v", label, name, got, want[name])
				}
			}
			d, _ := reg.Lookup(name)
			if d.SupportsPreview() {
				var compact bytes.Buffer
				_ = json.Compact(&compact, d.PreviewSchema())
				if string(fromDescribe.PreviewSchema) != compact.String() {
					t.Errorf("%s: %s preview_schema = %s, want %s", label, name, fromDescribe.PreviewSchema, compact.String())
				}
			} else if fromDescribe.PreviewSchema != nil {
				t.Errorf("%s: %s has a preview_schema without a preview", label, name)
			}
		}
	}
	all := map[string]view{
		"declared": {"low", true, true},
		"risky":    {"critical", false, true},
		"plain":    {"medium", true, false},
	}
	check("with a confirmer", withConfirmer, all)
	check("without a confirmer", without, map[string]view{
		"risky": {"critical", false, false},
		"plain": {"medium", true, false},
	})
	check("lazy, before the build", lazyHandler, map[string]view{
		"declared": {"low", true, true},
		"risky":    {"critical", false, false},
		"plain":    {"medium", true, false},
	})
	if _, err := lazy.Executor(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("lazy, built", lazyHandler, all)
}
