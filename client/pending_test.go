package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/agentauthtest"
	"github.com/agentcap/agentcap/testing/captest"
)

// humanLocation is a location whose "pay" capability waits for a
// person's confirmation: execute without the token of a decision answers
// 202 confirmation_pending; its status URL answers the scripted polls in
// order, then the decision.
type humanLocation struct {
	*customLocation
	mu       sync.Mutex
	polls    [][2]string // [status, code] answered to the first polls
	decision func(w http.ResponseWriter)
	executed []string // the confirmation tokens of the executions that ran
	polled   int
	// envelope answers in the error envelope's shape, "error" naming
	// the code, instead of with "status".
	envelope bool
}

const humanToken = "cfm_decided"

func newHumanLocation(t *testing.T, p *fakeProvider, statusOrigin string) *humanLocation {
	t.Helper()
	h := &humanLocation{}
	h.customLocation = newCustomLocation(t, p, []string{"pay"}, func(l *customLocation, w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/capability/execute":
			var body struct {
				Token string `json:"confirmation_token"`
			}
			_ = json.NewDecoder(r.Body).Decode(&body)
			if body.Token == humanToken {
				h.executed = append(h.executed, body.Token)
				writeJSON(w, http.StatusOK, map[string]any{"data": map[string]bool{"paid": true}})
				return
			}
			origin := statusOrigin
			if origin == "" {
				origin = l.URL
			}
			ans := map[string]any{
				"approval": map[string]any{
					"method": "device_authorization", "verification_uri": p.URL + "/device",
					"verification_uri_complete": p.URL + "/device?code=WDJB-MJHT", "user_code": "WDJB-MJHT",
					"interval": 2, "expires_in": 300,
				},
				"status_url": origin + "/capability/confirmation/cnf_1",
				"preview":    map[string]int{"would_pay": 5000},
			}
			if h.envelope {
				// The error envelope's shape, as core renders the code.
				ans["error"], ans["message"] = "confirmation_pending", "a person must confirm this call"
			} else {
				ans["status"] = "confirmation_pending"
			}
			writeJSON(w, http.StatusAccepted, ans)
		case r.Method == http.MethodGet && r.URL.Path == "/capability/confirmation/cnf_1":
			h.polled++
			if len(h.polls) > 0 {
				next := h.polls[0]
				h.polls = h.polls[1:]
				if next[1] == "" {
					writeJSON(w, http.StatusOK, map[string]string{"status": next[0]})
				} else {
					status := map[string]int{"400": 400, "429": 429, "503": 503}[next[0]]
					writeError(w, status, next[1], "not yet")
				}
				return
			}
			h.decision(w)
		default:
			writeError(w, http.StatusNotFound, "not_found", r.URL.Path)
		}
	})
	return h
}

func approved(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "approved",
		"confirmation": map[string]string{"token": humanToken, "expires_at": "2030-01-01T00:00:00Z"}})
}

func TestExecuteWaitsForAPersonsConfirmation(t *testing.T) {
	tests := []struct {
		name     string
		polls    [][2]string
		decision func(w http.ResponseWriter)
		want     func(error) bool
		waits    []time.Duration
	}{
		{"approved", [][2]string{{"400", "authorization_pending"}, {"400", "slow_down"}, {"confirmation_pending", ""}, {"503", "temporarily_unavailable"}},
			approved, func(err error) bool { return err == nil },
			// The 503 temporarily_unavailable is retried at once by the
			// request itself, after 1 s, and answers the decision.
			[]time.Duration{2 * time.Second, 2 * time.Second, 7 * time.Second, 7 * time.Second, 1 * time.Second}},
		{"denied", nil, func(w http.ResponseWriter) { writeError(w, 403, "confirmation_denied", "the user refused") },
			func(err error) bool {
				return errors.Is(err, client.ErrApprovalDenied) && client.IsCode(err, client.CodeConfirmationDenied)
			}, []time.Duration{2 * time.Second}},
		{"denied as a status", nil, func(w http.ResponseWriter) { writeJSON(w, 200, map[string]string{"status": "denied"}) },
			func(err error) bool { return errors.Is(err, client.ErrApprovalDenied) }, []time.Duration{2 * time.Second}},
		{"expired", [][2]string{{"400", "authorization_pending"}}, func(w http.ResponseWriter) { writeError(w, 400, "expired_token", "too late") },
			func(err error) bool { return errors.Is(err, client.ErrApprovalExpired) }, []time.Duration{2 * time.Second, 2 * time.Second}},
		{"other error", nil, func(w http.ResponseWriter) { writeError(w, 401, "invalid_jwt", "bad token") },
			func(err error) bool {
				return client.IsCode(err, "invalid_jwt") && !errors.Is(err, client.ErrApprovalDenied)
			},
			[]time.Duration{2 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newFakeProvider(t)
			h := newHumanLocation(t, p, "")
			h.polls, h.decision = tt.polls, tt.decision
			c, _, sl := newClient(t)
			a := connect(t, c, p, client.Capabilities("pay")...)
			var shown []client.Approval
			res, err := a.Execute(context.Background(), "pay", map[string]int{"amount": 5000},
				client.WithConfirmationWait(func(ap client.Approval) { shown = append(shown, ap) }))
			if !tt.want(err) {
				t.Fatalf("err %v", err)
			}
			if err == nil && string(res.Data) != `{"paid":true}` {
				t.Errorf("data %s", res.Data)
			}
			want := client.Approval{Method: "device_authorization", VerificationURI: p.URL + "/device",
				VerificationURIComplete: p.URL + "/device?code=WDJB-MJHT", UserCode: "WDJB-MJHT",
				Interval: 2, ExpiresIn: 300, AgentID: a.ID()}
			if diff := cmp.Diff([]client.Approval{want}, shown); diff != "" {
				t.Errorf("approvals shown (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.waits, sl.waits()); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if ran := len(h.executed); (err == nil) != (ran == 1) || ran > 1 {
				t.Errorf("%d confirmed executions", ran)
			}
			// Polls carry fresh agent JWTs for the location.
			h.customLocation.mu.Lock()
			defer h.customLocation.mu.Unlock()
			seen := map[any]bool{}
			for i, path := range h.paths {
				claims := tokenClaims(t, h.tokens[i])
				if seen[claims["jti"]] {
					t.Errorf("token id reused on %s", path)
				}
				seen[claims["jti"]] = true
				if claims["aud"] != h.URL+"/capability/execute" {
					t.Errorf("aud %v on %s", claims["aud"], path)
				}
			}
		})
	}
}

func TestConfirmationPendingWithoutWaiting(t *testing.T) {
	for _, envelope := range []bool{false, true} {
		t.Run(fmt.Sprintf("envelope=%v", envelope), func(t *testing.T) { testConfirmationPendingWithoutWaiting(t, envelope) })
	}
}

func testConfirmationPendingWithoutWaiting(t *testing.T, envelope bool) {
	p := newFakeProvider(t)
	h := newHumanLocation(t, p, "")
	h.decision = approved
	h.envelope = envelope
	c, _, _ := newClient(t)
	a := connect(t, c, p, client.Capabilities("pay")...)
	ctx := context.Background()
	_, err := a.Execute(ctx, "pay", nil)
	var pending *client.ConfirmationPending
	if !errors.As(err, &pending) {
		t.Fatalf("err %v", err)
	}
	if pending.Capability != "pay" || pending.Approval.UserCode != "WDJB-MJHT" || pending.Approval.AgentID != a.ID() ||
		pending.StatusURL != h.URL+"/capability/confirmation/cnf_1" || string(pending.Preview) != `{"would_pay":5000}` {
		t.Errorf("pending %+v", pending)
	}
	conf, err := a.AwaitConfirmation(ctx, pending, nil)
	if err != nil || conf.Token != humanToken || !conf.ExpiresAt.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("await: %+v %v", conf, err)
	}
	res, err := a.Execute(ctx, "pay", nil, client.WithConfirmationToken(conf.Token))
	if err != nil || string(res.Data) != `{"paid":true}` {
		t.Errorf("confirmed: %v %v", res, err)
	}
}

func TestConfirmationPendingStatusURL(t *testing.T) {
	p := newFakeProvider(t)
	// A status URL on another origin than the issuer's or the location's
	// would receive the agent's JWTs: it is refused.
	h := newHumanLocation(t, p, "http://127.0.0.2:1")
	h.decision = approved
	c, _, _ := newClient(t)
	a := connect(t, c, p, client.Capabilities("pay")...)
	_, err := a.Execute(context.Background(), "pay", nil, client.WithConfirmationWait(nil))
	if err == nil || !strings.Contains(err.Error(), "status_url") {
		t.Errorf("foreign status URL: %v", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.polled != 0 {
		t.Errorf("%d polls", h.polled)
	}
}

func TestAwaitConfirmationEndsWithContext(t *testing.T) {
	p := newFakeProvider(t)
	h := newHumanLocation(t, p, "")
	h.decision = approved
	h.polls = [][2]string{{"400", "authorization_pending"}}
	c, _, _ := newClient(t, func(cfg *client.Config) {
		cfg.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	})
	a := connect(t, c, p, client.Capabilities("pay")...)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := a.Execute(ctx, "pay", nil, client.WithConfirmationWait(func(client.Approval) { cancel() }))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
}

func TestBatchItemConfirmationPending(t *testing.T) {
	p := newFakeProvider(t)
	loc := newCustomLocation(t, p, []string{"pay"}, func(l *customLocation, w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"responses": []map[string]any{{
			"id": "0", "status": "failed", "error": map[string]any{
				"code": "confirmation_pending", "message": "a person must confirm this call",
				"approval":   map[string]any{"method": "device_authorization", "user_code": "QQQQ-1111", "interval": 3},
				"status_url": l.URL + "/capability/confirmation/cnf_9",
			},
		}}})
	})
	c, _, _ := newClient(t)
	a := connect(t, c, p, client.Capabilities("pay")...)
	results, err := a.BatchExecute(context.Background(), []client.BatchCall{{Capability: "pay"}})
	if err != nil {
		t.Fatal(err)
	}
	var pending *client.ConfirmationPending
	if !errors.As(results[0].Err, &pending) || pending.Approval.UserCode != "QQQQ-1111" || pending.StatusURL != loc.URL+"/capability/confirmation/cnf_9" {
		t.Errorf("item: %v", results[0].Err)
	}
}

// personConfirmer is a core.HumanConfirmer for tests: it keeps the
// requests, and the fake provider's status URL hands out the token of a
// decided one.
type personConfirmer struct {
	mgr *confirm.Manager
	url string

	mu       sync.Mutex
	requests map[string]core.HumanConfirmationRequest
	agents   map[string]string
	decided  map[string]bool // id -> confirmed
	handed   map[string]bool
}

func (c *personConfirmer) RequestHumanConfirmation(_ context.Context, r core.HumanConfirmationRequest) (*core.HumanConfirmationPending, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := fmt.Sprintf("cnf_%d", len(c.requests)+1)
	r.Binding.Arguments = append([]byte(nil), r.Binding.Arguments...)
	c.requests[id] = r
	c.agents[id] = r.Binding.Subject
	return &core.HumanConfirmationPending{
		Approval: core.ConfirmationApproval{Method: "device_authorization", VerificationURI: c.url + "/approve",
			VerificationURIComplete: c.url + "/approve?code=HMNC-" + id, UserCode: "HMNC-" + id, ExpiresIn: 600, Interval: 5},
		StatusURL: c.url + "/agent/confirmation?id=" + id,
	}, nil
}

// serve answers the status URL as docs/confirmation.md has it.
func (c *personConfirmer) serve(w http.ResponseWriter, r *http.Request, agentID string) {
	id := r.URL.Query().Get("id")
	c.mu.Lock()
	defer c.mu.Unlock()
	req, ok := c.requests[id]
	switch confirmed, decided := c.decided[id]; {
	case !ok || c.agents[id] != agentID:
		writeError(w, http.StatusNotFound, "confirmation_not_found", "no such request")
	case !decided:
		writeError(w, http.StatusBadRequest, "authorization_pending", "not decided yet")
	case !confirmed:
		writeError(w, http.StatusForbidden, "confirmation_denied", "the person refused")
	case c.handed[id]:
		writeError(w, http.StatusConflict, "confirmation_used", "handed out already")
	default:
		cf, err := c.mgr.Issue(r.Context(), req.Binding)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "internal_error", err.Error())
			return
		}
		c.handed[id] = true
		writeJSON(w, http.StatusOK, map[string]any{"status": "approved", "confirmation": core.ConfirmationJSON(cf)})
	}
}

func (c *personConfirmer) decide(confirmed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.requests {
		c.decided[id] = confirmed
	}
}

func TestPersonsConfirmationEndToEnd(t *testing.T) {
	mgr, err := confirm.New(confirm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	payCap := core.MustDefine("pay", "Pay someone.",
		func(_ context.Context, _ struct{}, in sendIn) (sendIn, error) { return in, nil },
		core.WithPreview(func(_ context.Context, _ struct{}, in sendIn) (sendPreview, error) {
			return sendPreview{WouldSend: in.Amount}, nil
		}),
		core.WithHumanConfirmation(func(_ context.Context, _ struct{}, in sendIn) (bool, error) { return in.Amount > 1000, nil }))
	person := &personConfirmer{mgr: mgr, requests: map[string]core.HumanConfirmationRequest{}, agents: map[string]string{},
		decided: map[string]bool{}, handed: map[string]bool{}}
	exec := captest.NewExecutor(t, captest.Static[struct{}, agentauth.Caller[struct{}]](struct{}{}), []core.Definer{payCap},
		func(cfg *core.ExecutorConfig[struct{}, agentauth.Caller[struct{}]]) {
			cfg.Confirmation = core.ConfirmationConfig[agentauth.Caller[struct{}]]{
				Confirmer: mgr, Human: person,
				Subject: func(c agentauth.Caller[struct{}]) string { return c.Session.Agent.ID },
			}
		})
	p := newFakeProviderAt(t, agentauthtest.NewServer(t, exec, agentauth.HTTPOptions[struct{}]{}))
	p.Caps = append(p.Caps, client.Capability{Name: "pay", Description: "Pay someone.", RequiresConfirmation: true, SupportsPreview: true})
	person.url = p.URL
	p.Confirmation = person.serve
	c, _, sl := newClient(t)
	a := connect(t, c, p, client.Capabilities("pay")...)
	ctx := context.Background()

	// A small payment is confirmed by the agent; a large one hands out no
	// token on preview.
	pv, err := a.Preview(ctx, "pay", sendIn{Amount: 10})
	if err != nil || pv.Confirmation == nil || pv.RequiresHumanConfirmation {
		t.Fatalf("small preview: %+v %v", pv, err)
	}
	pv, err = a.Preview(ctx, "pay", sendIn{Amount: 5000})
	if err != nil || pv.Confirmation != nil || !pv.RequiresHumanConfirmation || string(pv.Preview) != `{"would_send":5000}` {
		t.Fatalf("large preview: %+v %v", pv, err)
	}

	// Without waiting: a *ConfirmationPending, polled until the person
	// decides.
	_, err = a.Execute(ctx, "pay", sendIn{Amount: 5000})
	var pending *client.ConfirmationPending
	if !errors.As(err, &pending) || string(pending.Preview) != `{"would_send":5000}` || pending.Approval.UserCode != "HMNC-cnf_1" {
		t.Fatalf("pending: %v", err)
	}
	var polls atomic.Int32
	p.mu.Lock()
	serve := p.Confirmation
	p.Confirmation = func(w http.ResponseWriter, r *http.Request, agentID string) {
		if polls.Add(1) == 2 {
			person.decide(true)
		}
		serve(w, r, agentID)
	}
	p.mu.Unlock()
	conf, err := a.AwaitConfirmation(ctx, pending, nil)
	if err != nil || polls.Load() != 2 {
		t.Fatalf("await: %v after %d polls", err, polls.Load())
	}
	if diff := cmp.Diff([]time.Duration{5 * time.Second, 5 * time.Second}, sl.waits()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	// The person's token confirms that call only, once.
	if _, err := a.Execute(ctx, "pay", sendIn{Amount: 5001}, client.WithConfirmationToken(conf.Token)); !client.IsCode(err, client.CodeConfirmationMismatch) {
		t.Errorf("other arguments: %v", err)
	}
	res, err := a.Execute(ctx, "pay", sendIn{Amount: 5000}, client.WithConfirmationToken(conf.Token))
	if err != nil || string(res.Data) != `{"amount":5000}` {
		t.Fatalf("confirmed: %v %v", res, err)
	}
	if _, err := a.AwaitConfirmation(ctx, pending, nil); !client.IsCode(err, client.CodeConfirmationUsed) {
		t.Errorf("token handed out twice: %v", err)
	}

	// Waiting in Execute, and a refusal.
	p.mu.Lock()
	p.Confirmation = func(w http.ResponseWriter, r *http.Request, agentID string) {
		person.decide(true)
		serve(w, r, agentID)
	}
	p.mu.Unlock()
	var shown []client.Approval
	res, err = a.Execute(ctx, "pay", sendIn{Amount: 2000}, client.WithConfirmationWait(func(ap client.Approval) { shown = append(shown, ap) }))
	if err != nil || string(res.Data) != `{"amount":2000}` || len(shown) != 1 || shown[0].VerificationURIComplete != p.URL+"/approve?code=HMNC-cnf_2" {
		t.Fatalf("waited: %v %v %+v", res, err, shown)
	}
	p.mu.Lock()
	p.Confirmation = func(w http.ResponseWriter, r *http.Request, agentID string) {
		person.decide(false)
		serve(w, r, agentID)
	}
	p.mu.Unlock()
	_, err = a.Execute(ctx, "pay", sendIn{Amount: 3000}, client.WithConfirmationWait(nil))
	if !errors.Is(err, client.ErrApprovalDenied) || !client.IsCode(err, client.CodeConfirmationDenied) {
		t.Errorf("refused: %v", err)
	}
	// An agent's own token does not confirm what a person must.
	small, err := a.Preview(ctx, "pay", sendIn{Amount: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Execute(ctx, "pay", sendIn{Amount: 4000}, client.WithConfirmationToken(small.Confirmation.Token)); !client.IsCode(err, client.CodeConfirmationMismatch) {
		t.Errorf("the agent's token for a person's call: %v", err)
	}
}
