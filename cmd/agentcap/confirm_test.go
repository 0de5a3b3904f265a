package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	wire "github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/captest"
)

type sendIn struct {
	Amount int `json:"amount"`
}

type sendPreview struct {
	WouldSend int `json:"would_send"`
}

// newConfirmingProvider serves echo and send, which needs a confirmation
// and has a preview; sent counts the sends that ran.
func newConfirmingProvider(t *testing.T) (*provider, *atomic.Int32) {
	t.Helper()
	sent := &atomic.Int32{}
	send := core.MustDefine("send", "Send money.",
		func(_ context.Context, _ struct{}, in sendIn) (sendIn, error) {
			sent.Add(1)
			return in, nil
		},
		core.WithRisk(core.RiskHigh),
		core.WithPreview(func(_ context.Context, _ struct{}, in sendIn) (sendPreview, error) {
			return sendPreview{WouldSend: in.Amount}, nil
		}))
	mgr, err := confirm.New(confirm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	exec := captest.NewExecutor(t, captest.Static(struct{}{}), core.Config{Confirmation: core.ConfirmationConfig{Confirmer: mgr}}, echoCap, send)
	return newProviderExec(t, exec), sent
}

func TestPreviewAndConfirmation(t *testing.T) {
	p, sent := newConfirmingProvider(t)
	state := t.TempDir()
	lo := "--insecure-loopback"
	if code, out, errOut := agentcap(t, state, "connect", p.URL, lo, "--capability", "echo", "--capability", "send"); code != 0 {
		t.Fatalf("connect: exit %d\n%s%s", code, out, errOut)
	}
	args := func(n string) []string { return []string{"--args", `{"amount":` + n + `}`, lo} }

	// describe tells, preview shows and gives a token.
	code, out, _ := agentcap(t, state, append([]string{"describe", "send"}, lo)...)
	for _, want := range []string{"risk: high", "preview: yes", "confirmation: every call must be confirmed", "preview schema:", `"would_send"`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("describe lacks %q: exit %d\n%s", want, code, out)
		}
	}
	// preview prints one JSON document, with or without --json; what it
	// means goes to stderr, without --json.
	var pv client.PreviewResult
	for _, flags := range [][]string{nil, {"--json"}} {
		code, out, errOut := agentcap(t, state, append(append([]string{"preview", "send"}, args("5")...), flags...)...)
		pv = previewDocument(t, code, out)
		var shown sendPreview
		if json.Unmarshal(pv.Preview, &shown) != nil || shown.WouldSend != 5 || pv.Confirmation == nil ||
			!strings.HasPrefix(pv.Confirmation.Token, "cfm_") || pv.Confirmation.ExpiresAt.IsZero() || pv.RequiresHumanConfirmation {
			t.Fatalf("preview %q: %s", flags, out)
		}
		if wantNote := flags == nil; strings.Contains(errOut, "This call needs a confirmation. The token (valid until") != wantNote ||
			strings.Contains(errOut, "'agentcap execute send' with the same --args and --confirmation-token TOKEN") != wantNote {
			t.Errorf("preview %q: stderr\n%s", flags, errOut)
		}
	}
	code, out, errOut := agentcap(t, state, append([]string{"execute", "send", "--json", "--confirmation-token", pv.Confirmation.Token}, args("5")...)...)
	if code != 0 || strings.TrimSpace(out) != `{"amount":5}` || sent.Load() != 1 {
		t.Errorf("execute with the preview's token: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = agentcap(t, state, append([]string{"execute", "send", "--json", "--confirmation-token", pv.Confirmation.Token}, args("5")...)...)
	if code != 1 || !strings.Contains(errOut, `"error":"confirmation_used"`) {
		t.Errorf("execute with a used token: exit %d\n%s", code, errOut)
	}
	code, _, errOut = agentcap(t, state, append([]string{"preview", "echo", "--args", `{"message":"hi"}`}, lo)...)
	if code != 1 || !strings.Contains(errOut, "preview_not_supported") {
		t.Errorf("preview of echo: exit %d\n%s", code, errOut)
	}

	// execute asks, on a terminal only.
	tests := []struct {
		name     string
		stdin    string // "" for no terminal
		flags    []string
		code     int
		stdout   string
		stderr   []string
		confirms bool
	}{
		{"no terminal", "", nil, 1, "",
			[]string{"send needs a confirmation.", `"would_send": 6`, "standard input is not a terminal", "--yes"}, false},
		{"no terminal, json", "", []string{"--json"}, 1, "",
			[]string{`"error":"confirmation_required"`, `"preview":{"would_send":6}`, `"confirmation":{"`, `"token":"cfm_`, "--yes"}, false},
		{"declined", "n\n", nil, 1, "",
			[]string{`"would_send": 6`, "Confirm this call of send? [y/N]", "not confirmed: nothing was done"}, false},
		{"no answer", "\n", nil, 1, "", []string{"not confirmed"}, false},
		{"confirmed", "y\n", nil, 0, "{\n  \"amount\": 6\n}\n", []string{`"would_send": 6`, "Confirm this call of send? [y/N]"}, true},
		{"confirmed, json", "yes\n", []string{"--json"}, 0, "{\"amount\":6}\n",
			[]string{`{"confirmation_required":{"capability":"send","expires_at":"`, `"preview":{"would_send":6}`}, true},
		{"--yes", "", []string{"--yes"}, 0, "{\n  \"amount\": 6\n}\n", []string{`"would_send": 6`, "Confirmed (--yes)."}, true},
		{"--yes on a terminal", "n\n", []string{"--yes", "--json"}, 0, "{\"amount\":6}\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := sent.Load()
			var stdin *strings.Reader
			if tt.stdin != "" {
				stdin = strings.NewReader(tt.stdin)
			}
			cmd := append(append([]string{"execute", "send"}, args("6")...), tt.flags...)
			var code int
			var out, errOut string
			if stdin != nil {
				code, out, errOut = agentcapOn(t, state, stdin, cmd...)
			} else {
				code, out, errOut = agentcap(t, state, cmd...)
			}
			if code != tt.code || out != tt.stdout {
				t.Errorf("exit %d, stdout %q\n%s", code, out, errOut)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			if ran := sent.Load() - before; ran != map[bool]int32{true: 1}[tt.confirms] {
				t.Errorf("%d sends ran", ran)
			}
		})
	}
}

// personLocation is a location whose "pay" waits for a person's
// confirmation: one poll pending, then decide.
func personLocation(t *testing.T, p *provider, decide func(w http.ResponseWriter)) *atomic.Int32 {
	t.Helper()
	paid := &atomic.Int32{}
	var mu sync.Mutex
	polls := 0
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/capability/execute":
			var body struct {
				Token string `json:"confirmation_token"`
			}
			_ = json.NewDecoder(r.Body).Decode(&body)
			if body.Token == "cfm_person" {
				paid.Add(1)
				_, _ = w.Write([]byte(`{"data":{"paid":true}}`))
				return
			}
			w.WriteHeader(http.StatusAccepted)
			_ = json.NewEncoder(w).Encode(map[string]any{
				"status": "confirmation_pending",
				"approval": map[string]any{"method": "device_authorization", "verification_uri_complete": p.URL + "/confirm?code=PQRS-7788",
					"user_code": "PQRS-7788", "interval": 1, "expires_in": 120},
				"status_url": srv.URL + "/capability/confirmation/c1",
				"preview":    map[string]int{"would_pay": 5000},
			})
		case "/capability/preview":
			_, _ = w.Write([]byte(`{"preview":{"would_pay":5000},"requires_human_confirmation":true}`))
		case "/capability/confirmation/c1":
			mu.Lock()
			polls++
			first := polls == 1
			mu.Unlock()
			if first {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error":"authorization_pending","message":"not decided yet"}`))
				return
			}
			decide(w)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	p.mu.Lock()
	p.locations = map[string]string{"pay": srv.URL + "/capability/execute"}
	p.mu.Unlock()
	return paid
}

func TestExecuteWaitsForAPerson(t *testing.T) {
	approve := func(w http.ResponseWriter) {
		_, _ = w.Write([]byte(`{"status":"approved","confirmation":{"token":"cfm_person","expires_at":"2030-01-01T00:00:00Z"}}`))
	}
	deny := func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"error":"confirmation_denied","message":"the user refused the call"}`))
	}
	tests := []struct {
		name   string
		decide func(w http.ResponseWriter)
		flags  []string
		code   int
		stdout string
		stderr []string
	}{
		{"approved", approve, nil, 0, "{\n  \"paid\": true\n}\n",
			[]string{"pay must be confirmed by a person. Preview:", `"would_pay": 5000`, "Confirmation needed (device_authorization).", "/confirm?code=PQRS-7788", "enter the code PQRS-7788", "Waiting for confirmation"}},
		{"approved, json", approve, []string{"--json"}, 0, "{\"paid\":true}\n",
			[]string{`{"confirmation":{"method":"device_authorization"`, `"user_code":"PQRS-7788"`}},
		{"denied", deny, nil, 1, "", []string{"approval denied", "confirmation_denied", "the user refused the call"}},
		{"denied, json", deny, []string{"--json"}, 1, "", []string{`"error":"confirmation_denied"`, `"status":403`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t)
			paid := personLocation(t, p, tt.decide)
			state := t.TempDir()
			if code, out, errOut := agentcap(t, state, "connect", p.URL, "--insecure-loopback", "--capability", "pay"); code != 0 {
				t.Fatalf("connect: exit %d\n%s%s", code, out, errOut)
			}
			if tt.name == "approved" {
				code, out, errOut := agentcap(t, state, "preview", "pay", "--args", `{"amount":5000}`, "--insecure-loopback")
				pv := previewDocument(t, code, out)
				if string(pv.Preview) != `{"would_pay":5000}` || !pv.RequiresHumanConfirmation || pv.Confirmation != nil ||
					!strings.Contains(errOut, "A person must confirm this call") {
					t.Errorf("preview: exit %d\n%s%s", code, out, errOut)
				}
			}
			code, out, errOut := agentcap(t, state, append([]string{"execute", "pay", "--args", `{"amount":5000}`, "--insecure-loopback"}, tt.flags...)...)
			if code != tt.code || out != tt.stdout {
				t.Errorf("exit %d, stdout %q\n%s", code, out, errOut)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			if want := int32(1 - tt.code); paid.Load() != want {
				t.Errorf("%d payments", paid.Load())
			}
		})
	}
}

// elicitations answers a host's elicitations with answer and records
// their messages; seen is closed at the first one.
type elicitations struct {
	mu       sync.Mutex
	messages []string
	seen     chan struct{}
	answer   *mcp.ElicitResult
}

func newElicitations(answer *mcp.ElicitResult) *elicitations {
	return &elicitations{seen: make(chan struct{}), answer: answer}
}

func (e *elicitations) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.messages) == 0 {
		close(e.seen)
	}
	e.messages = append(e.messages, req.Params.Message)
	return e.answer, nil
}

func (e *elicitations) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.messages...)
}

func TestMCPAsksForConfirmation(t *testing.T) {
	p, sent := newConfirmingProvider(t)
	state := t.TempDir()
	if code, out, errOut := agentcap(t, state, "connect", p.URL, "--insecure-loopback", "--capability", "echo", "--capability", "send"); code != 0 {
		t.Fatalf("connect: exit %d\n%s%s", code, out, errOut)
	}
	tests := []struct {
		name    string
		answer  *mcp.ElicitResult // nil: a host without elicitation
		isError bool
		out     []string
		runs    int32
	}{
		{"confirmed", &mcp.ElicitResult{Action: "accept"}, false, []string{`{"amount":3}`}, 1},
		{"declined", &mcp.ElicitResult{Action: "decline"}, true, []string{`"error":"confirmation_declined"`, `"action":"decline"`, "declined to confirm"}, 0},
		{"dismissed", &mcp.ElicitResult{Action: "cancel"}, true, []string{`"error":"confirmation_declined"`, `"action":"cancel"`, "did not confirm"}, 0},
		{"host cannot ask", nil, true, []string{`"error":"confirmation_required"`, "cannot ask", `"preview":{"would_send":3}`}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts mcp.ClientOptions
			el := newElicitations(tt.answer)
			if tt.answer != nil {
				opts.ElicitationHandler = el.handle
			}
			cs, _, _ := mcpSessionWith(t, state, opts, "--insecure-loopback", "--refresh", "0")
			listed, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tool := range listed.Tools {
				if marked := tool.Meta[wire.MCPMetaRequiresConfirmation] == true; marked != (tool.Name == "test__send") {
					t.Errorf("tool %s marked %v", tool.Name, marked)
				}
			}
			before := sent.Load()
			out, isErr := call(t, cs, "test__send", map[string]any{"amount": 3})
			if isErr != tt.isError {
				t.Errorf("isError %v: %s", isErr, out)
			}
			for _, want := range tt.out {
				if !strings.Contains(out, want) {
					t.Errorf("result lacks %q: %s", want, out)
				}
			}
			if strings.Contains(out, "cfm_") {
				t.Errorf("the model was given a confirmation token: %s", out)
			}
			if ran := sent.Load() - before; ran != tt.runs {
				t.Errorf("%d sends ran", ran)
			}
			msgs := el.all()
			if tt.answer != nil && (len(msgs) != 1 || !strings.Contains(msgs[0], "test__send needs your confirmation") || !strings.Contains(msgs[0], `"would_send": 3`)) {
				t.Errorf("elicitations %q", msgs)
			}
			// A capability without a confirmation asks nothing.
			if out, isErr := call(t, cs, "test__echo", map[string]any{"message": "hi"}); isErr || out != `{"message":"hi"}` || len(el.all()) != len(msgs) {
				t.Errorf("echo: %v %s", isErr, out)
			}
		})
	}
}

func TestMCPWaitsForAPerson(t *testing.T) {
	tests := []struct {
		name    string
		answer  *mcp.ElicitResult
		decides bool // false: the person never decides
		isError bool
		out     []string
	}{
		{"confirmed", &mcp.ElicitResult{Action: "accept"}, true, false, []string{`{"paid":true}`}},
		{"wait given up", &mcp.ElicitResult{Action: "decline"}, false, true, []string{`"error":"confirmation_declined"`}},
		{"host cannot ask", nil, false, true, []string{`"error":"confirmation_pending"`, "PQRS-7788", "was not run"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t)
			el := newElicitations(tt.answer)
			paid := personLocation(t, p, func(w http.ResponseWriter) {
				if !tt.decides {
					w.WriteHeader(http.StatusBadRequest)
					_, _ = w.Write([]byte(`{"error":"authorization_pending","message":"not decided yet"}`))
					return
				}
				// The person decides after the host showed the notice.
				select {
				case <-el.seen:
				case <-time.After(10 * time.Second):
				}
				_, _ = w.Write([]byte(`{"status":"approved","confirmation":{"token":"cfm_person"}}`))
			})
			state := t.TempDir()
			if code, out, errOut := agentcap(t, state, "connect", p.URL, "--insecure-loopback", "--capability", "pay"); code != 0 {
				t.Fatalf("connect: exit %d\n%s%s", code, out, errOut)
			}
			var opts mcp.ClientOptions
			if tt.answer != nil {
				opts.ElicitationHandler = el.handle
			}
			cs, _, _ := mcpSessionWith(t, state, opts, "--insecure-loopback", "--refresh", "0")
			out, isErr := call(t, cs, "test__pay", map[string]any{"amount": 5000})
			if isErr != tt.isError {
				t.Errorf("isError %v: %s", isErr, out)
			}
			for _, want := range tt.out {
				if !strings.Contains(out, want) {
					t.Errorf("result lacks %q: %s", want, out)
				}
			}
			if want := map[bool]int32{true: 1}[!tt.isError]; paid.Load() != want {
				t.Errorf("%d payments", paid.Load())
			}
			if msgs := el.all(); tt.answer != nil && (len(msgs) != 1 || !strings.Contains(msgs[0], "enter the code PQRS-7788")) {
				t.Errorf("elicitations %q", msgs)
			}
		})
	}
}

// TestMCPConfirmationState retries by hand: the request state is single
// use and bound to the tool's arguments.
func TestMCPConfirmationState(t *testing.T) {
	p, sent := newConfirmingProvider(t)
	state := t.TempDir()
	if code, out, errOut := agentcap(t, state, "connect", p.URL, "--insecure-loopback", "--capability", "send"); code != 0 {
		t.Fatalf("connect: exit %d\n%s%s", code, out, errOut)
	}
	el := newElicitations(&mcp.ElicitResult{Action: "accept"})
	cs, _, _ := mcpSessionWith(t, state, mcp.ClientOptions{ElicitationHandler: el.handle,
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}, "--insecure-loopback", "--refresh", "0")
	ctx := context.Background()
	first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test__send", Arguments: map[string]any{"amount": 8}})
	if err != nil || !first.NeedsInput() || first.RequestState == "" || len(first.InputRequests) != 1 {
		t.Fatalf("first call: %v %+v", err, first)
	}
	ask, _ := first.InputRequests[wire.MCPElicitationID].(*mcp.ElicitParams)
	if ask == nil || !strings.Contains(ask.Message, `"would_send": 8`) || ask.Meta["agentcap/capability"] != "send" {
		t.Fatalf("input request %+v", first.InputRequests)
	}
	yes := mcp.InputResponseMap{wire.MCPElicitationID: &mcp.ElicitResult{Action: "accept"}}
	retry := func(state string, amount int) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test__send", Arguments: map[string]any{"amount": amount},
			InputResponses: yes, RequestState: state})
		if err != nil || len(res.Content) != 1 {
			t.Fatalf("retry: %v %+v", err, res)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	if out, isErr := retry("forged", 8); !isErr || !strings.Contains(out, "unknown, used or expired") {
		t.Errorf("forged state: %v %s", isErr, out)
	}
	if out, isErr := retry(first.RequestState, 9); !isErr || !strings.Contains(out, "unknown, used or expired") {
		t.Errorf("other arguments: %v %s", isErr, out)
	}
	// The state went with the mismatched retry: single use.
	if out, isErr := retry(first.RequestState, 8); !isErr || sent.Load() != 0 {
		t.Errorf("state used twice: %v %s", isErr, out)
	}
	second, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test__send", Arguments: map[string]any{"amount": 8}})
	if err != nil || !second.NeedsInput() {
		t.Fatalf("second call: %v %+v", err, second)
	}
	if out, isErr := retry(second.RequestState, 8); isErr || out != `{"amount":8}` || sent.Load() != 1 {
		t.Errorf("confirmed retry: %v %s", isErr, out)
	}
	if len(el.all()) != 0 {
		t.Errorf("the bridge asked by itself: %q", el.all())
	}
}

// previewDocument reads what preview printed on stdout, which must be
// exactly one JSON document.
func previewDocument(t *testing.T, code int, stdout string) client.PreviewResult {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	var pv client.PreviewResult
	if err := dec.Decode(&pv); code != 0 || err != nil {
		t.Fatalf("preview: exit %d, %v:\n%s", code, err, stdout)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("preview printed more than one JSON document:\n%s", stdout)
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, pv.Preview)
	pv.Preview = compact.Bytes()
	return pv
}
