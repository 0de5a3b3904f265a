package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

// Previews and confirmation tokens through all four routers. Tokens are
// random, so the exchanges run in order on each router, later requests
// carrying tokens from earlier answers, and answers are compared with
// every token written as cfm_<token>; the token manager's clock is set
// back before each router's run, so expiry times are the same on all.

const confirmationGoldenFile = "testdata/confirmation.json"

type previewOut struct {
	Paid    int `json:"paid"`
	Balance int `json:"balance"`
}

// confirmClock is the token manager's clock.
type confirmClock struct {
	mu  sync.Mutex
	now time.Time
}

var confirmEpoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func (c *confirmClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *confirmClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func confirmationCapabilities() []core.Definer {
	preview := func(_ context.Context, _ app, in payIn) (previewOut, error) {
		return previewOut{Paid: in.Amount, Balance: 100 - in.Amount}, nil
	}
	return []core.Definer{
		core.MustDefine("transfer", "Move money; every call is confirmed",
			func(_ context.Context, _ app, in payIn) (payOut, error) { return payOut{Paid: in.Amount}, nil },
			core.WithConfirmation(), core.WithPreview(preview)),
		core.MustDefine("quote", "Quote a payment; a preview, no confirmation",
			func(_ context.Context, _ app, in payIn) (payOut, error) { return payOut{Paid: in.Amount}, nil },
			core.WithPreview(preview)),
		core.MustDefine("echo", "Echo text", func(_ context.Context, a app, in echoIn) (echoOut, error) {
			return echoOut{Text: in.Text, User: a.User, Tenant: a.Tenant}, nil
		}),
	}
}

func newConfirmationHandler(t *testing.T, clock *confirmClock) *httpx.Handler {
	t.Helper()
	mgr, err := confirm.New(confirm.Config{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	exec, err := core.NewExecutor(core.MustRegistry(confirmationCapabilities()...), newContext, core.Config{
		Confirmation: core.ConfirmationConfig{
			Confirmer: mgr,
			Audience:  "http://agentcap.test" + prefix + "/",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpx.New(exec, httpx.Config{Verifier: tokens{}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// tokenPattern matches a confirmation token in an answer.
var tokenPattern = regexp.MustCompile(`cfm_[A-Za-z0-9_-]{43}`)

// confirmationRun is one router's run of the exchanges, in order.
type confirmationRun struct {
	t       *testing.T
	base    string
	names   []string
	answers map[string]answer
	// tokens are the raw answers' tokens, by the name of the exchange
	// that issued them (the first token of a batch answer).
	tokens map[string]string
}

// send runs one exchange, checks its status and wire code, and records
// the answer with its tokens masked.
func (r *confirmationRun) send(name, path, body string, status int, code string) {
	r.t.Helper()
	x := exchange{name: name, method: "POST", path: path, auth: alice, ctype: ctJSON, body: body}
	a := do(r.t, r.base, x)
	if a.Status != status {
		r.t.Errorf("%s: status %d, want %d: %s", name, a.Status, status, a.Body)
	}
	if code != "" {
		var env struct{ Error string }
		if err := json.Unmarshal([]byte(a.Body), &env); err != nil || env.Error != code {
			r.t.Errorf("%s: want the code %s: %s", name, code, a.Body)
		}
	}
	if tok := tokenPattern.FindString(a.Body); tok != "" {
		r.tokens[name] = tok
	}
	a.Body = tokenPattern.ReplaceAllString(a.Body, "cfm_<token>")
	r.names = append(r.names, name)
	r.answers[name] = a
}

func (r *confirmationRun) token(name string) string {
	r.t.Helper()
	tok := r.tokens[name]
	if tok == "" {
		r.t.Fatalf("%s issued no token", name)
	}
	return tok
}

func transferBody(capability string, amount int, token string) string {
	b := `{"capability":"` + capability + `","arguments":{"amount":` + strconv.Itoa(amount) + `,"currency":"EUR"}`
	if token != "" {
		b += `,"confirmation_token":"` + token + `"`
	}
	return b + "}"
}

const (
	routePreview = "/capability/preview"
	routeExecute = "/capability/execute"
	routeBatch   = "/capability/batch-execute"
)

// runConfirmation runs the exchanges against one router.
func runConfirmation(t *testing.T, base string, clock *confirmClock) *confirmationRun {
	clock.set(confirmEpoch)
	r := &confirmationRun{t: t, base: base, answers: map[string]answer{}, tokens: map[string]string{}}
	r.send("preview/with a confirmation", routePreview, transferBody("transfer", 5, ""), 200, "")
	r.send("preview/needs no confirmation", routePreview, transferBody("quote", 5, ""), 200, "")
	r.send("preview/not supported", routePreview, `{"capability":"echo","arguments":{"text":"hi"}}`, 400, "preview_not_supported")
	r.send("preview/invalid arguments", routePreview, `{"capability":"transfer","arguments":{"amount":"5"}}`, 400, "invalid_request")
	r.send("execute/confirmation required", routeExecute, transferBody("transfer", 7, ""), 428, "confirmation_required")
	required := r.token("execute/confirmation required")
	r.send("execute/with the token of a 428", routeExecute, transferBody("transfer", 7, required), 200, "")
	r.send("execute/token used again", routeExecute, transferBody("transfer", 7, required), 409, "confirmation_used")
	previewed := r.token("preview/with a confirmation")
	r.send("execute/token for other arguments", routeExecute, transferBody("transfer", 6, previewed), 409, "confirmation_mismatch")
	r.send("execute/forged token", routeExecute, transferBody("transfer", 5, "cfm_"+strings.Repeat("Q", 43)), 403, "invalid_confirmation")
	r.send("execute/malformed token", routeExecute, transferBody("transfer", 5, "not-a-token"), 403, "invalid_confirmation")
	r.send("execute/with the token of a preview", routeExecute, transferBody("transfer", 5, previewed), 200, "")
	r.send("execute/token ignored where none is needed", routeExecute, transferBody("quote", 5, "cfm_unused"), 200, "")

	r.send("preview/for the batch", routePreview, transferBody("transfer", 3, ""), 200, "")
	batch := `{"requests":[` +
		`{"id":"confirmed","capability":"transfer","arguments":{"amount":3,"currency":"EUR"},"confirmation_token":"` + r.token("preview/for the batch") + `"},` +
		`{"id":"unconfirmed","capability":"transfer","arguments":{"amount":4,"currency":"EUR"}},` +
		`{"id":"plain","capability":"echo","arguments":{"text":"hi"}}]}`
	r.send("batch/one item confirmed, one failing alone", routeBatch, batch, 200, "")
	r.send("execute/with the token of a failed batch item", routeExecute,
		transferBody("transfer", 4, r.token("batch/one item confirmed, one failing alone")), 200, "")

	r.send("preview/to expire", routePreview, transferBody("transfer", 9, ""), 200, "")
	clock.set(confirmEpoch.Add(confirm.DefaultTTL))
	r.send("execute/expired token", routeExecute, transferBody("transfer", 9, r.token("preview/to expire")), 409, "confirmation_expired")
	return r
}

// TestConfirmationConformance runs previews, confirmation tokens and
// their refusals through net/http, Gin, Echo and Fiber: every answer,
// tokens masked, is the golden one.
func TestConfirmationConformance(t *testing.T) {
	clock := &confirmClock{}
	servers := startServers(t, newConfirmationHandler(t, clock))
	golden := map[string]answer{}
	if !*update {
		data, err := os.ReadFile(confirmationGoldenFile)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if err := json.Unmarshal(data, &golden); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range servers {
		r := runConfirmation(t, s.url, clock)
		if *update && i == 0 {
			golden = r.answers
			continue
		}
		if len(r.answers) != len(golden) {
			t.Errorf("%s: %d exchanges, the golden file has %d", s.name, len(r.answers), len(golden))
		}
		for _, name := range r.names {
			want, ok := golden[name]
			if !ok {
				t.Errorf("%s: no golden answer (run go test -update)", name)
				continue
			}
			if diff := cmp.Diff(want, r.answers[name]); diff != "" {
				t.Errorf("%s: %s differs from the golden answer (-want +got):\n%s", name, s.name, diff)
			}
		}
	}
	if *update {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(golden); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(confirmationGoldenFile, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
