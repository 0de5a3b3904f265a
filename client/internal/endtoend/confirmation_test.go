package endtoend_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/agentauthtest"
	"github.com/agentcap/agentcap/testing/captest"
)

type payIn struct {
	Amount int `json:"amount"`
}

type payPreview struct {
	WouldSend int `json:"would_send"`
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
		writeError(w, agentcap.NewError(agentcap.CodeConfirmationNotFound, "no such request"))
	case !decided:
		writeError(w, agentcap.NewError(agentcap.CodeAuthorizationPending, "not decided yet"))
	case !confirmed:
		writeError(w, agentcap.NewError(agentcap.CodeConfirmationDenied, "the person refused"))
	case c.handed[id]:
		writeError(w, agentcap.NewError(agentcap.CodeConfirmationUsed, "handed out already"))
	default:
		cf, err := c.mgr.Issue(r.Context(), req.Binding)
		if err != nil {
			writeError(w, agentcap.Internal(err))
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
		func(_ context.Context, _ struct{}, in payIn) (payIn, error) { return in, nil },
		core.WithPreview(func(_ context.Context, _ struct{}, in payIn) (payPreview, error) {
			return payPreview{WouldSend: in.Amount}, nil
		}),
		core.WithHumanConfirmation(func(_ context.Context, _ struct{}, in payIn) (bool, error) { return in.Amount > 1000, nil }))
	person := &personConfirmer{mgr: mgr, requests: map[string]core.HumanConfirmationRequest{}, agents: map[string]string{},
		decided: map[string]bool{}, handed: map[string]bool{}}
	exec := captest.NewExecutor(t, captest.Static(struct{}{}), core.Config{Confirmation: core.ConfirmationConfig{Confirmer: mgr, Human: person}}, payCap)
	p := newProvider(t, agentauthtest.NewServer(t, exec, agentauth.Config{}))
	person.url = p.URL
	p.confirmation = person.serve
	a, sl := connect(t, p, "pay")
	ctx := context.Background()

	// A small payment is confirmed by the agent; a large one hands out no
	// token on preview.
	pv, err := a.Preview(ctx, "pay", payIn{Amount: 10})
	if err != nil || pv.Confirmation == nil || pv.RequiresHumanConfirmation {
		t.Fatalf("small preview: %+v %v", pv, err)
	}
	pv, err = a.Preview(ctx, "pay", payIn{Amount: 5000})
	if err != nil || pv.Confirmation != nil || !pv.RequiresHumanConfirmation || string(pv.Preview) != `{"would_send":5000}` {
		t.Fatalf("large preview: %+v %v", pv, err)
	}

	// Without waiting: a *ConfirmationPending, polled until the person
	// decides.
	_, err = a.Execute(ctx, "pay", payIn{Amount: 5000})
	var pending *client.ConfirmationPending
	if !errors.As(err, &pending) || string(pending.Preview) != `{"would_send":5000}` || pending.Approval.UserCode != "HMNC-cnf_1" {
		t.Fatalf("pending: %v", err)
	}
	var polls atomic.Int32
	p.mu.Lock()
	serve := p.confirmation
	p.confirmation = func(w http.ResponseWriter, r *http.Request, agentID string) {
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
	if _, err := a.Execute(ctx, "pay", payIn{Amount: 5001}, client.WithConfirmationToken(conf.Token)); !client.IsCode(err, agentcap.CodeConfirmationMismatch) {
		t.Errorf("other arguments: %v", err)
	}
	res, err := a.Execute(ctx, "pay", payIn{Amount: 5000}, client.WithConfirmationToken(conf.Token))
	if err != nil || string(res.Data) != `{"amount":5000}` {
		t.Fatalf("confirmed: %v %v", res, err)
	}
	if _, err := a.AwaitConfirmation(ctx, pending, nil); !client.IsCode(err, agentcap.CodeConfirmationUsed) {
		t.Errorf("token handed out twice: %v", err)
	}

	// Waiting in Execute, and a refusal.
	p.mu.Lock()
	p.confirmation = func(w http.ResponseWriter, r *http.Request, agentID string) {
		person.decide(true)
		serve(w, r, agentID)
	}
	p.mu.Unlock()
	var shown []client.Approval
	res, err = a.Execute(ctx, "pay", payIn{Amount: 2000}, client.WithConfirmationWait(func(ap client.Approval) { shown = append(shown, ap) }))
	if err != nil || string(res.Data) != `{"amount":2000}` || len(shown) != 1 || shown[0].VerificationURIComplete != p.URL+"/approve?code=HMNC-cnf_2" {
		t.Fatalf("waited: %v %v %+v", res, err, shown)
	}
	p.mu.Lock()
	p.confirmation = func(w http.ResponseWriter, r *http.Request, agentID string) {
		person.decide(false)
		serve(w, r, agentID)
	}
	p.mu.Unlock()
	_, err = a.Execute(ctx, "pay", payIn{Amount: 3000}, client.WithConfirmationWait(nil))
	if !errors.Is(err, client.ErrApprovalDenied) || !client.IsCode(err, agentcap.CodeConfirmationDenied) {
		t.Errorf("refused: %v", err)
	}
	// An agent's own token does not confirm what a person must.
	small, err := a.Preview(ctx, "pay", payIn{Amount: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Execute(ctx, "pay", payIn{Amount: 4000}, client.WithConfirmationToken(small.Confirmation.Token)); !client.IsCode(err, agentcap.CodeConfirmationMismatch) {
		t.Errorf("the agent's token for a person's call: %v", err)
	}
}
