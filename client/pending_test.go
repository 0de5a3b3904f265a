package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
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
					writeError(w, status, agentcap.Code(next[1]), "not yet")
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
				return errors.Is(err, client.ErrApprovalDenied) && client.IsCode(err, agentcap.CodeConfirmationDenied)
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
