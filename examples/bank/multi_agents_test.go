//go:build multiinstance

package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
)

// person is a demo user of the bank with a host (a client.Client)
// linked to them, and their agents.
type person struct {
	id      string // user_alice
	own     string // their USD account, which transfers debit
	payee   string // the other person's USD account, which they credit
	client  *client.Client
	hostID  string
	payers  []*client.Agent // agents granted transfer_money to payee
	readers []*client.Agent // agents with the read capabilities only
}

// readCapabilities are what reader agents get without asking, as their
// host's default capabilities.
var readCapabilities = []string{"check_balance", "list_accounts", "exchange_rate"}

// register connects, for alice and bob, payers agents allowed to
// transfer to the other one (each approved on the approval page with
// the proof of presence transfer_money needs; the first approval links
// the host to the user), then makes the read capabilities the host's
// defaults and connects readers agents, which are active at once.
func (c *cluster) register(ctx context.Context, payers, readers int) (alice, bob *person, err error) {
	alice = &person{id: "user_alice", own: "acc_123", payee: "acc_456"}
	bob = &person{id: "user_bob", own: "acc_456", payee: "acc_123"}
	for _, p := range []*person{alice, bob} {
		if p.client, err = client.New(client.Config{AllowInsecureLoopback: true, Keys: client.NewMemoryKeyStore(), HostName: "harness " + p.id}); err != nil {
			return nil, nil, err
		}
		// The first agent links the host; the others of the same host
		// may then register together.
		first, err := c.connectPayer(ctx, p, p.id+" payer 0")
		if err != nil {
			return nil, nil, err
		}
		p.payers = append(p.payers, first)
		p.hostID = first.Connection().HostID
		more, err := parallel(payers-1, func(i int) (*client.Agent, error) {
			return c.connectPayer(ctx, p, fmt.Sprintf("%s payer %d", p.id, i+1))
		})
		if err != nil {
			return nil, nil, err
		}
		p.payers = append(p.payers, more...)
		s, err := c.signIn(p.id)
		if err != nil {
			return nil, nil, err
		}
		if st, body, err := s.call(http.MethodPatch, "/user/hosts/"+p.hostID, map[string]any{"default_capabilities": readCapabilities}); err != nil || st != http.StatusOK {
			return nil, nil, fmt.Errorf("setting the default capabilities of %s: %d %s %v", p.hostID, st, body, err)
		}
		if p.readers, err = parallel(readers, func(i int) (*client.Agent, error) {
			return c.connectReader(ctx, p, fmt.Sprintf("%s reader %d", p.id, i))
		}); err != nil {
			return nil, nil, err
		}
	}
	return alice, bob, nil
}

// parallel runs f n times at once and returns the agents in order.
func parallel(n int, f func(i int) (*client.Agent, error)) ([]*client.Agent, error) {
	out := make([]*client.Agent, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i], errs[i] = f(i) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// connectPayer registers an agent of p asking for the read capabilities
// and transfer_money to p.payee, and has p allow them all.
func (c *cluster) connectPayer(ctx context.Context, p *person, name string) (*client.Agent, error) {
	dest, _ := json.Marshal(p.payee)
	var (
		mu         sync.Mutex
		approveErr error
		approving  sync.WaitGroup
	)
	caps := []client.CapabilityRequest{{Name: "transfer_money", Constraints: map[string]json.RawMessage{"destination_account": dest}}}
	for _, n := range readCapabilities {
		caps = append(caps, client.CapabilityRequest{Name: n})
	}
	a, st, err := p.client.Connect(ctx, c.issuer, client.ConnectOptions{
		Name:         name,
		Mode:         agentcap.ModeDelegated,
		Capabilities: caps,
		OnApproval: func(ap client.Approval) {
			// OnApproval must return at once: the person approves while
			// the client polls.
			approving.Go(func() {
				err := c.approveWithPresence(p.id, ap.UserCode, append([]string{"transfer_money"}, readCapabilities...))
				mu.Lock()
				approveErr = err
				mu.Unlock()
			})
		},
	})
	approving.Wait()
	if approveErr != nil {
		return nil, fmt.Errorf("approving %s: %w", name, approveErr)
	}
	if err != nil {
		return nil, fmt.Errorf("connecting %s: %w", name, err)
	}
	if st.Status != agentcap.StatusActive {
		return nil, fmt.Errorf("%s is %s after its approval", name, st.Status)
	}
	return a, nil
}

// connectReader registers an agent of p asking for the read
// capabilities, which its host's defaults grant without a person.
func (c *cluster) connectReader(ctx context.Context, p *person, name string) (*client.Agent, error) {
	var caps []client.CapabilityRequest
	for _, n := range readCapabilities {
		caps = append(caps, client.CapabilityRequest{Name: n})
	}
	var asked atomic.Bool
	a, st, err := p.client.Connect(ctx, c.issuer, client.ConnectOptions{
		Name: name, Mode: agentcap.ModeDelegated, Capabilities: caps,
		OnApproval: func(client.Approval) { asked.Store(true) },
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("connecting %s: %w", name, err)
	case asked.Load():
		return nil, fmt.Errorf("%s needed an approval although its host's defaults cover it", name)
	case st.Status != agentcap.StatusActive:
		return nil, fmt.Errorf("%s is %s", name, st.Status)
	}
	return a, nil
}

// userSession is a person signed in through the development login, for
// the approval page and the user API.
type userSession struct {
	base   string // where requests go: the balancer or one instance
	origin string // the issuer's origin, which the page and API expect
	hc     *http.Client
	csrf   string
}

// signIn signs userID in through the balancer.
func (c *cluster) signIn(userID string) (*userSession, error) {
	return c.signInAt(c.issuer, userID)
}

// signInAt signs userID in at base and reads the user API's CSRF token.
func (c *cluster) signInAt(base, userID string) (*userSession, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	s := &userSession{base: base, origin: c.issuer, hc: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	if _, err := devSignIn(s.hc, base, c.issuer, userID, "/user/session"); err != nil {
		return nil, err
	}
	st, body, err := s.call(http.MethodGet, "/user/session", nil)
	if err != nil || st != http.StatusOK {
		return nil, fmt.Errorf("GET /user/session: %d %s %v", st, body, err)
	}
	var sess struct {
		CSRF string `json:"csrf_token"`
	}
	if err := json.Unmarshal(body, &sess); err != nil || sess.CSRF == "" {
		return nil, fmt.Errorf("GET /user/session: no csrf_token in %s", body)
	}
	s.csrf = sess.CSRF
	return s, nil
}

// form posts a form as the page's own form would, and answers the body
// of a 200.
func (s *userSession) form(path string, form url.Values) (string, error) {
	req, err := http.NewRequest(http.MethodPost, s.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.origin)
	resp, err := s.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("POST %s: %d\n%s", path, resp.StatusCode, body)
	}
	return string(body), nil
}

// call sends a user API request with the CSRF header and a JSON body
// (none when body is nil).
func (s *userSession) call(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Origin", s.origin)
	if s.csrf != "" {
		req.Header.Set("X-CSRF-Token", s.csrf)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// approveWithPresence signs userID in and allows caps on the approval
// page for userCode: the review step, then the step that asks the person
// to type the code again, which capabilities of approval strength
// webauthn need.
func (c *cluster) approveWithPresence(userID, userCode string, caps []string) error {
	s, err := c.signIn(userID)
	if err != nil {
		return err
	}
	review, err := devSignIn(s.hc, s.base, s.origin, userID, "/approve?code="+url.QueryEscape(userCode))
	if err != nil {
		return err
	}
	m := csrfField.FindStringSubmatch(review)
	if m == nil {
		return fmt.Errorf("no approval form for %s:\n%s", userCode, review)
	}
	confirm, err := s.form("/approve", url.Values{
		"csrf": {html.UnescapeString(m[1])}, "code": {userCode}, "step": {"review"}, "action": {"allow"}, "capability": caps,
	})
	if err != nil {
		return err
	}
	m = csrfField.FindStringSubmatch(confirm)
	if m == nil {
		return fmt.Errorf("no confirmation step for %s:\n%s", userCode, confirm)
	}
	done, err := s.form("/approve", url.Values{
		"csrf": {html.UnescapeString(m[1])}, "code": {userCode}, "step": {"confirm"}, "action": {"allow"},
		"capability": caps, "presence_code": {userCode},
	})
	if err != nil {
		return err
	}
	if !strings.Contains(done, "You allowed") {
		return fmt.Errorf("approval of %s not confirmed:\n%s", userCode, done)
	}
	return nil
}
