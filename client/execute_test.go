package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
)

// customLocation is a capability location with a scripted handler,
// registered with p as the location of capability name.
type customLocation struct {
	*httptest.Server
	mu      sync.Mutex
	tokens  []string
	headers []http.Header
	paths   []string
}

func (l *customLocation) record(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tokens = append(l.tokens, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	l.headers = append(l.headers, r.Header.Clone())
	l.paths = append(l.paths, r.URL.Path)
}

func newCustomLocation(t *testing.T, p *fakeProvider, names []string, h func(l *customLocation, w http.ResponseWriter, r *http.Request)) *customLocation {
	t.Helper()
	l := &customLocation{}
	l.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.record(r)
		h(l, w, r)
	}))
	t.Cleanup(l.Close)
	for _, n := range names {
		p.Caps = append(p.Caps, client.Capability{Name: n, Description: n, Location: l.URL + "/capability/execute"})
	}
	return l
}

func TestExecuteTokens(t *testing.T) {
	p := newFakeProvider(t)
	loc := newCustomLocation(t, p, []string{"remote"}, func(_ *customLocation, w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]int{"n": 1}})
	})
	c, _, _ := newClient(t)
	a := connect(t, c, p, client.Capabilities("echo", "remote")...)
	for range 2 {
		res, err := a.Execute(context.Background(), "remote", nil, client.WithIdempotencyKey("key-1"))
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Data) != `{"n":1}` {
			t.Errorf("data %s", res.Data)
		}
	}
	if len(loc.tokens) != 2 {
		t.Fatalf("%d requests", len(loc.tokens))
	}
	c1, c2 := tokenClaims(t, loc.tokens[0]), tokenClaims(t, loc.tokens[1])
	if c1["jti"] == c2["jti"] {
		t.Error("two requests shared a token id")
	}
	conn := a.Connection()
	want := map[string]any{
		"sub": conn.AgentID, "iss": conn.HostID, "aud": loc.URL + "/capability/execute",
		"capabilities": []any{"remote"},
	}
	got := map[string]any{"sub": c1["sub"], "iss": c1["iss"], "aud": c1["aud"], "capabilities": c1["capabilities"]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	if exp, iat := c1["exp"].(float64), c1["iat"].(float64); exp-iat != 60 {
		t.Errorf("lifetime %v s", exp-iat)
	}
	h := tokenHeader(t, loc.tokens[0])
	if h["typ"] != "agent+jwt" || h["alg"] != "EdDSA" || h["kid"] == "" {
		t.Errorf("header %v", h)
	}
	if got := loc.headers[0].Get("Idempotency-Key"); got != "key-1" {
		t.Errorf("Idempotency-Key %q", got)
	}
	if got := loc.paths[0]; got != "/capability/execute" {
		t.Errorf("path %q", got)
	}
}

func TestExecuteConcurrently(t *testing.T) {
	p := newFakeProvider(t)
	c, _, _ := newClient(t)
	a := connect(t, c, p, client.Capabilities("echo")...)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := fmt.Sprintf("m%d", i)
			res, err := a.Execute(context.Background(), "echo", map[string]string{"message": msg})
			if err == nil && string(res.Data) != `{"message":"`+msg+`"}` {
				err = fmt.Errorf("data %s", res.Data)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestExecuteErrors(t *testing.T) {
	p := newFakeProvider(t)
	p.Constraints = map[string]map[string]json.RawMessage{"transfer": {"amount": json.RawMessage(`{"max":100}`)}}
	c, _, _ := newClient(t)
	a := connect(t, c, p, client.Capabilities("echo", "transfer")...)
	tests := []struct {
		name       string
		capability string
		args       any
		want       *client.Error
	}{
		{"constraint violated", "transfer", map[string]any{"amount": 500, "currency": "USD"}, &client.Error{
			Status: 403, Code: agentcap.CodeConstraintViolated,
			Violations: []agentcap.ConstraintViolation{{Field: "amount", Constraint: json.RawMessage(`{"max":100}`), Actual: json.RawMessage(`500`)}},
		}},
		{"bad input", "echo", map[string]any{"nope": 1}, &client.Error{Status: 400, Code: agentcap.CodeInvalidRequest,
			Details: []agentcap.Violation{{Path: "/nope", Message: "unknown field"}}}},
		{"unknown capability", "nothing", nil, &client.Error{Status: 404, Code: agentcap.CodeCapabilityNotFound}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.Execute(context.Background(), tt.capability, tt.args)
			var e *client.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v", err)
			}
			got := &client.Error{Status: e.Status, Code: e.Code, Details: e.Details, Violations: e.Violations}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if !client.IsCode(err, tt.want.Code) {
				t.Errorf("IsCode(%q) false", tt.want.Code)
			}
		})
	}
	if _, err := a.Execute(context.Background(), "echo", []int{1}); err == nil {
		t.Error("non-object arguments were sent")
	}
}

func TestExecuteRetries429(t *testing.T) {
	tests := []struct {
		name      string
		failures  int
		header    string
		wantCalls int
		wantWaits []time.Duration
		wantErr   bool
	}{
		{"retried after Retry-After", 2, "3", 3, []time.Duration{3 * time.Second, 3 * time.Second}, false},
		{"backoff without Retry-After", 1, "", 2, []time.Duration{time.Second}, false},
		{"gives up after the limit", 5, "1", 3, []time.Duration{time.Second, time.Second}, true},
		{"too long a wait is returned", 1, "3600", 1, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newFakeProvider(t)
			calls := 0
			loc := newCustomLocation(t, p, []string{"busy"}, func(_ *customLocation, w http.ResponseWriter, _ *http.Request) {
				calls++
				if calls <= tt.failures {
					if tt.header != "" {
						w.Header().Set("Retry-After", tt.header)
					}
					writeError(w, http.StatusTooManyRequests, agentcap.CodeRateLimited, "slow down")
					return
				}
				writeJSON(w, http.StatusOK, map[string]any{"data": "ok"})
			})
			c, _, sl := newClient(t)
			a := connect(t, c, p)
			_, err := a.Execute(context.Background(), "busy", nil)
			if tt.wantErr {
				var e *client.Error
				if !errors.As(err, &e) || e.Status != 429 || e.Code != agentcap.CodeRateLimited {
					t.Fatalf("err = %v", err)
				}
				if tt.header != "" && e.RetryAfter == 0 {
					t.Error("RetryAfter not reported")
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if calls != tt.wantCalls {
				t.Errorf("calls %d, want %d", calls, tt.wantCalls)
			}
			if diff := cmp.Diff(tt.wantWaits, sl.waits()); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			seen := map[string]bool{}
			for _, tok := range loc.tokens {
				jti := fmt.Sprint(tokenClaims(t, tok)["jti"])
				if seen[jti] {
					t.Error("a retry reused a token")
				}
				seen[jti] = true
			}
		})
	}
}

func TestExecuteCancel(t *testing.T) {
	p := newFakeProvider(t)
	release := make(chan struct{})
	defer close(release)
	newCustomLocation(t, p, []string{"stuck"}, func(_ *customLocation, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	c, _, _ := newClient(t)
	a := connect(t, c, p)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := a.Describe(ctx, "stuck"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Execute(ctx, "stuck", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v", err)
	}

	c2, _, _ := newClient(t, func(cfg *client.Config) { cfg.RequestTimeout = 50 * time.Millisecond })
	a2 := connect(t, c2, p)
	if _, err := a2.Execute(context.Background(), "stuck", nil); !errors.Is(err, client.ErrTimeout) {
		t.Errorf("request timeout: err = %v", err)
	}
}

func TestExecuteAsync(t *testing.T) {
	tests := []struct {
		name       string
		postStatus int
		statusURL  func(loc, provider string) string
		steps      []any
		wantData   string
		wantErr    string
		wantWaits  []time.Duration
	}{
		{"completes", http.StatusAccepted, func(loc, _ string) string { return loc + "/jobs/1" },
			[]any{map[string]any{"status": "pending"}, map[string]any{"status": "pending"}, map[string]any{"status": "completed", "result": map[string]int{"n": 7}}},
			`{"n":7}`, "", []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second}},
		{"pending with 200", http.StatusOK, func(loc, _ string) string { return loc + "/jobs/1" },
			[]any{map[string]any{"status": "completed", "result": "done"}},
			`"done"`, "", []time.Duration{2 * time.Second}},
		{"fails", http.StatusAccepted, func(loc, _ string) string { return loc + "/jobs/1" },
			[]any{map[string]any{"status": "failed", "error": map[string]string{"error": "upstream_down", "message": "no"}}},
			"", "upstream_down", []time.Duration{2 * time.Second}},
		{"status_url on the issuer", http.StatusAccepted, func(_, provider string) string { return provider + "/jobs/1" },
			nil, "", "404", []time.Duration{2 * time.Second}},
		{"status_url elsewhere", http.StatusAccepted, func(string, string) string { return "http://127.0.0.2:1/jobs/1" },
			nil, "", "not on the issuer's origin", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newFakeProvider(t)
			step := 0
			loc := newCustomLocation(t, p, []string{"slow"}, func(l *customLocation, w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tt.postStatus)
					_ = json.NewEncoder(w).Encode(map[string]any{"status": "pending", "status_url": tt.statusURL(l.URL, p.URL), "retry_after": 2})
					return
				}
				writeJSON(w, http.StatusOK, tt.steps[step])
				step++
			})
			c, _, sl := newClient(t)
			a := connect(t, c, p)
			res, err := a.Execute(context.Background(), "slow", nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if string(res.Data) != tt.wantData {
				t.Errorf("data %s", res.Data)
			}
			if diff := cmp.Diff(tt.wantWaits, sl.waits()); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			for i, tok := range loc.tokens {
				if aud := tokenClaims(t, tok)["aud"]; aud != loc.URL+"/capability/execute" {
					t.Errorf("request %d: aud %v", i, aud)
				}
			}
		})
	}
}

func TestExecuteStream(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    []client.Event
		wantErr string
	}{
		{"data then done", "event: data\ndata: {\"n\":1}\n\n: a comment\ndata: {\"n\":2}\nid: 7\n\nevent: done\ndata: {\"total\":3}\n\n",
			[]client.Event{{Type: "data", Data: `{"n":1}`}, {Type: "data", Data: `{"n":2}`, ID: "7"}, {Type: "done", Data: `{"total":3}`}}, ""},
		{"multi-line data and CRLF", "data: line1\r\ndata: line2\r\n\r\nevent: done\r\n\r\n",
			[]client.Event{{Type: "data", Data: "line1\nline2"}, {Type: "done"}}, ""},
		{"error event", "data: {}\n\nevent: error\ndata: {\"error\":\"quota\",\"message\":\"out\"}\n\n",
			[]client.Event{{Type: "data", Data: "{}"}, {Type: "error", Data: `{"error":"quota","message":"out"}`}}, "quota"},
		{"truncated", "data: {}\n\ndata: {\"half\"",
			[]client.Event{{Type: "data", Data: "{}"}, {}}, "without done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newFakeProvider(t)
			newCustomLocation(t, p, []string{"feed"}, func(_ *customLocation, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, tt.body)
			})
			c, _, _ := newClient(t)
			a := connect(t, c, p)
			res, err := a.Execute(context.Background(), "feed", nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stream == nil {
				t.Fatal("no stream")
			}
			var got []client.Event
			var lastErr error
			for ev, err := range res.Stream.Events() {
				got = append(got, ev)
				lastErr = err
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if tt.wantErr == "" && lastErr != nil {
				t.Errorf("err = %v", lastErr)
			}
			if tt.wantErr != "" && (lastErr == nil || !strings.Contains(lastErr.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want %q", lastErr, tt.wantErr)
			}
			if tt.name == "truncated" && !errors.Is(lastErr, client.ErrStreamTruncated) {
				t.Errorf("err = %v", lastErr)
			}
		})
	}
}

func TestBatchExecute(t *testing.T) {
	p := newFakeProvider(t)
	p.Constraints = map[string]map[string]json.RawMessage{"transfer": {"amount": json.RawMessage(`{"max":100}`)}}
	noBatch := newCustomLocation(t, p, []string{"remote"}, func(_ *customLocation, w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/batch-execute") {
			writeError(w, http.StatusNotFound, "not_found", "no batches here")
			return
		}
		var body struct {
			Arguments map[string]int `json:"arguments"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		writeJSON(w, http.StatusOK, map[string]any{"data": body.Arguments["n"] * 2})
	})
	c, _, _ := newClient(t)
	a := connect(t, c, p, client.Capabilities("echo", "transfer")...)
	res, err := a.BatchExecute(context.Background(), []client.BatchCall{
		{Capability: "echo", Arguments: map[string]string{"message": "a"}},
		{ID: "r1", Capability: "remote", Arguments: map[string]int{"n": 2}},
		{Capability: "transfer", Arguments: map[string]any{"amount": 500, "currency": "USD"}},
		{Capability: "echo", Arguments: map[string]string{"message": "b"}},
		{ID: "r2", Capability: "remote", Arguments: map[string]int{"n": 5}},
	})
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ ID, Capability, Data, Code string }
	var got []row
	for _, r := range res {
		code := ""
		var e *client.Error
		if errors.As(r.Err, &e) {
			code = string(e.Code)
		} else if r.Err != nil {
			code = r.Err.Error()
		}
		got = append(got, row{r.ID, r.Capability, string(r.Data), code})
	}
	want := []row{
		{"0", "echo", `{"message":"a"}`, ""},
		{"r1", "remote", "4", ""},
		{"2", "transfer", "", string(agentcap.CodeConstraintViolated)},
		{"3", "echo", `{"message":"b"}`, ""},
		{"r2", "remote", "10", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	// The location without a batch endpoint got one batch attempt and
	// then single calls.
	if diff := cmp.Diff([]string{"/capability/batch-execute", "/capability/execute", "/capability/execute"}, noBatch.paths); diff != "" {
		t.Errorf("paths at the location without batches (-want +got):\n%s", diff)
	}
	caps := tokenClaims(t, noBatch.tokens[0])["capabilities"]
	if diff := cmp.Diff([]any{"remote"}, caps); diff != "" {
		t.Errorf("batch token capabilities (-want +got):\n%s", diff)
	}
	if _, err := a.BatchExecute(context.Background(), []client.BatchCall{{ID: "x", Capability: "echo"}, {ID: "x", Capability: "echo"}}); err == nil {
		t.Error("duplicate ids accepted")
	}
}

func TestCapabilitiesStatusRequestRevoke(t *testing.T) {
	p := newFakeProvider(t)
	p.Caps = append(p.Caps, client.Capability{Name: "audit", Description: "Read the audit log."})
	c, keys, _ := newClient(t)
	a := connect(t, c, p, client.Capabilities("echo")...)
	ctx := context.Background()

	page, err := a.ListCapabilities(ctx, client.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Capabilities) != 2 || !page.HasMore || page.NextCursor != "2" {
		t.Errorf("first page %+v", page)
	}
	all, err := a.AllCapabilities(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var names, granted []string
	for _, c := range all {
		names = append(names, c.Name)
		if c.GrantStatus == agentcap.GrantStatusGranted {
			granted = append(granted, c.Name)
		}
	}
	if diff := cmp.Diff([]string{"echo", "transfer", "audit"}, names); diff != "" {
		t.Errorf("all capabilities (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"echo"}, granted); diff != "" {
		t.Errorf("granted (-want +got):\n%s", diff)
	}
	d, err := a.Describe(ctx, "echo")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(d.Input), `"message"`) {
		t.Errorf("describe input %s", d.Input)
	}
	if _, err := a.Describe(ctx, "missing"); !client.IsCode(err, agentcap.CodeCapabilityNotFound) {
		t.Errorf("describe missing: %v", err)
	}

	p.mu.Lock()
	p.Pending, p.ApproveAfter = true, 2
	p.mu.Unlock()
	var approval client.Approval
	st, err := a.RequestCapabilities(ctx, client.RequestOptions{
		Capabilities: []client.CapabilityRequest{{Name: "transfer", Constraints: map[string]json.RawMessage{"amount": json.RawMessage(`{"max":10}`)}}},
		OnApproval:   func(ap client.Approval) { approval = ap },
	})
	if err != nil {
		t.Fatal(err)
	}
	if approval.UserCode != "ABCD-1234" {
		t.Errorf("approval %+v", approval)
	}
	g, ok := st.Grant("transfer")
	if !ok || g.Status != agentcap.StatusActive || string(g.Constraints["amount"]) != `{"max":10}` {
		t.Errorf("transfer grant %+v", g)
	}
	if _, err := a.Execute(ctx, "transfer", map[string]any{"amount": 11, "currency": "EUR"}); !client.IsCode(err, agentcap.CodeConstraintViolated) {
		t.Errorf("execute beyond the requested constraint: %v", err)
	}
	if _, err := a.Execute(ctx, "transfer", map[string]any{"amount": 9, "currency": "EUR"}); err != nil {
		t.Errorf("execute within the constraint: %v", err)
	}

	status, err := a.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if status.AgentID != a.ID() || status.Status != agentcap.StatusActive {
		t.Errorf("status %+v", status)
	}
	if err := a.Revoke(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Load(ctx, a.Connection().AgentKey); !errors.Is(err, client.ErrKeyNotFound) {
		t.Errorf("agent key still stored: %v", err)
	}
	if _, err := a.Execute(ctx, "echo", map[string]string{"message": "x"}); !client.IsCode(err, agentcap.CodeAgentRevoked) {
		t.Errorf("execute after revoke: %v", err)
	}
}
