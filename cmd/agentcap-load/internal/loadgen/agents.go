// Package loadgen drives a running capability location with Agent Auth
// traffic, for the agentcap-load command: it registers agents through
// the location's provider (approving them on its approval page, as the
// example bank's development sign-in allows) or takes them from a
// directory file, mints a fresh agent JWT for every request ahead of
// sending it, and sends a mix of requests with
// github.com/tsenart/vegeta/v12's attacker, open-loop (a fixed rate) or
// closed-loop (a fixed concurrency).
package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
)

// Agent is an agent the load acts as: its id, the user it acts for and
// the accounts it reads and transfers between.
type Agent struct {
	ID string
	// User is the user the agent acts for ("user_alice").
	User string
	// Source is the account it reads and debits; Destination the one its
	// transfer grant names.
	Source, Destination string
	// MaxAmount is the largest transfer its grant allows, in USD, the
	// currency of the load's transfers, as the grant writes it ("5").
	MaxAmount string

	agent *client.Agent
}

// SignJWT returns a fresh agent JWT of a for aud.
func (a *Agent) SignJWT(aud string) (string, error) { return a.agent.SignJWT(aud, nil) }

// Account is one side of the transfers: a user and the account the
// user's agents read and debit, and the account they may credit.
type Account struct {
	User, Source, Destination string
}

// DemoAccounts are the example bank's: Alice's USD checking account
// acc_123 sends to Bob's USD account acc_456 and back, so that the
// total of the two never changes.
var DemoAccounts = []Account{
	{User: "user_alice", Source: "acc_123", Destination: "acc_456"},
	{User: "user_bob", Source: "acc_456", Destination: "acc_123"},
}

// RegisterConfig says which agents Register makes.
type RegisterConfig struct {
	// Target is the provider's URL (the example bank's issuer).
	Target string
	// Agents is how many agents to register, shared out over Accounts
	// in turn.
	Agents int
	// Accounts are the users and accounts; nil means DemoAccounts.
	Accounts []Account
	// MaxAmount is the largest transfer each grant allows (default "5").
	MaxAmount string
	// Parallel is how many registrations run at once (default 8).
	Parallel int
	// HTTPClient sends the requests; nil means a client with a 30 s
	// time-out.
	HTTPClient *http.Client
	// Log, when set, receives a line per registered agent.
	Log io.Writer
}

// Register registers cfg.Agents delegated agents at cfg.Target, each
// asking for list_accounts, check_balance and transfer_money limited to
// its destination account and MaxAmount, and approves each as its user
// on the provider's approval page through the development sign-in
// ({origin}/login), as a browser would. Each user's agents share one
// host.
func Register(ctx context.Context, cfg RegisterConfig) ([]*Agent, error) {
	if cfg.Agents <= 0 {
		return nil, errors.New("loadgen: no agents to register")
	}
	if cfg.Accounts == nil {
		cfg.Accounts = DemoAccounts
	}
	if cfg.MaxAmount == "" {
		cfg.MaxAmount = "5"
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 8
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	clients := make([]*client.Client, len(cfg.Accounts))
	for i, acc := range cfg.Accounts {
		c, err := client.New(client.Config{
			HTTPClient:            hc,
			AllowInsecureLoopback: true,
			Keys:                  client.NewMemoryKeyStore(),
			HostName:              "load host of " + acc.User,
		})
		if err != nil {
			return nil, err
		}
		clients[i] = c
	}
	// The first agent of each user approves its new host alone, so that
	// the others find the host linked.
	agents := make([]*Agent, cfg.Agents)
	errs := make([]error, cfg.Agents)
	one := func(i int) {
		k := i % len(cfg.Accounts)
		agents[i], errs[i] = register(ctx, clients[k], cfg.Target, cfg.Accounts[k], cfg.MaxAmount, hc)
		if errs[i] == nil && cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "registered %s for %s\n", agents[i].ID, cfg.Accounts[k].User)
		}
	}
	first := min(len(cfg.Accounts), cfg.Agents)
	var wg sync.WaitGroup
	for i := range first {
		wg.Go(func() { one(i) })
	}
	wg.Wait()
	sem := make(chan struct{}, cfg.Parallel)
	for i := first; i < cfg.Agents; i++ {
		if errors.Join(errs[:first]...) != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			one(i)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return agents, nil
}

// register connects one agent for acc and approves it.
func register(ctx context.Context, c *client.Client, target string, acc Account, maxAmount string, hc *http.Client) (*Agent, error) {
	// The load's transfers are in USD, which the grant pins with the
	// bound: a bound on an amount needs its currency.
	constraints := map[string]json.RawMessage{
		"destination_account": mustJSON(acc.Destination),
		"amount":              json.RawMessage(`{"max":` + maxAmount + `}`),
		"currency":            json.RawMessage(`"USD"`),
	}
	caps := []client.CapabilityRequest{
		{Name: "list_accounts"}, {Name: "check_balance"},
		{Name: "transfer_money", Constraints: constraints},
	}
	var approveErr error
	// A refused approval stays pending until it expires: stop polling.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a, st, err := c.Connect(ctx, target, client.ConnectOptions{
		Name:         "load agent",
		Mode:         agentcap.ModeDelegated,
		Capabilities: caps,
		OnApproval: func(ap client.Approval) {
			if approveErr = ApprovePage(ctx, hc, target, acc.User, ap.UserCode); approveErr != nil {
				cancel()
			}
		},
	})
	if approveErr != nil {
		return nil, fmt.Errorf("loadgen: approving an agent of %s: %w", acc.User, approveErr)
	}
	if err != nil {
		return nil, fmt.Errorf("loadgen: registering an agent of %s: %w", acc.User, err)
	}
	active := 0
	for _, g := range st.Grants {
		if g.Status == "active" {
			active++
		}
	}
	if active != len(caps) {
		return nil, fmt.Errorf("loadgen: agent %s has %d active grants of %d", a.ID(), active, len(caps))
	}
	return &Agent{ID: a.ID(), User: acc.User, Source: acc.Source, Destination: acc.Destination, MaxAmount: maxAmount, agent: a}, nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// ApprovePage signs in as user through the development sign-in at the
// origin of target ({origin}/login) and allows every capability of the
// request with userCode on the approval page, confirming with the code
// when a capability asks for the user's presence: the development
// stand-in of a bank started with -dev-presence-code, since a passkey
// needs a person.
func ApprovePage(ctx context.Context, hc *http.Client, target, user, userCode string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	origin := u.Scheme + "://" + u.Host
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Transport: hc.Transport, Timeout: hc.Timeout, Jar: jar}
	post := func(path string, form url.Values) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, origin+path, strings.NewReader(form.Encode()))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return "", err
		}
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("POST %s: %s", path, resp.Status)
		}
		return string(body), nil
	}
	page := "/approve?code=" + url.QueryEscape(userCode)
	// The sign-in form carries a CSRF token bound to a cookie it sets.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, origin+"/login?next="+url.QueryEscape(page), nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	signIn, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	m := csrfField.FindSubmatch(signIn)
	if resp.StatusCode != http.StatusOK || m == nil {
		return fmt.Errorf("GET /login: %s", resp.Status)
	}
	// The sign-in redirects to the review page, which the client follows.
	review, err := post("/login", url.Values{"user": {user}, "next": {page}, "csrf": {html.UnescapeString(string(m[1]))}})
	if err != nil {
		return err
	}
	m = csrfField.FindSubmatch([]byte(review))
	if m == nil {
		return fmt.Errorf("no approval form for %s", userCode)
	}
	form := url.Values{"csrf": {string(m[1])}, "code": {userCode}, "step": {"review"}, "action": {"allow"}}
	for _, name := range regexp.MustCompile(`name="capability" value="([^"]+)"`).FindAllStringSubmatch(review, -1) {
		form.Add("capability", name[1])
	}
	done, err := post("/approve", form)
	if err != nil {
		return err
	}
	if m := csrfField.FindStringSubmatch(done); m != nil && strings.Contains(done, `name="presence_code"`) {
		form.Set("csrf", m[1])
		form.Set("step", "confirm")
		form.Set("presence_code", userCode)
		if done, err = post("/approve", form); err != nil {
			return err
		}
	}
	if strings.Contains(done, `id="passkey"`) || strings.Contains(done, `id="passkey-unavailable"`) {
		return fmt.Errorf("the approval of %s needs a passkey: start the bank with -dev-presence-code to approve it automatically", userCode)
	}
	if !strings.Contains(done, "You allowed") {
		return fmt.Errorf("the approval of %s was not confirmed", userCode)
	}
	return nil
}

// DirectoryAgent names an agent of a directory file and its private key.
type DirectoryAgent struct {
	ID      string
	KeyFile string
}

// FromDirectory returns the agents of the directory file at path (the
// format of agentauth.LoadDirectoryFile) whose private keys are given,
// acting for their host's user with acc's accounts. target is the
// location's issuer, the tokens' issuer.
func FromDirectory(path string, keys []DirectoryAgent, target string, acc Account, maxAmount string) ([]*Agent, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Hosts []struct {
			ID     string `json:"id"`
			UserID string `json:"user_id"`
		} `json:"hosts"`
		Agents []struct {
			ID     string `json:"id"`
			HostID string `json:"host_id"`
		} `json:"agents"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("loadgen: %s: %w", path, err)
	}
	users := map[string]string{}
	for _, h := range doc.Hosts {
		users[h.ID] = h.UserID
	}
	ks := client.NewMemoryKeyStore()
	c, err := client.New(client.Config{AllowInsecureLoopback: true, Keys: ks})
	if err != nil {
		return nil, err
	}
	var out []*Agent
	for _, k := range keys {
		hostID := ""
		for _, a := range doc.Agents {
			if a.ID == k.ID {
				hostID = a.HostID
			}
		}
		if hostID == "" {
			return nil, fmt.Errorf("loadgen: no agent %s in %s", k.ID, path)
		}
		data, err := os.ReadFile(k.KeyFile)
		if err != nil {
			return nil, err
		}
		// The example bank's demo key files wrap the JWK: {"jwk": {...}}.
		var wrapped struct {
			JWK json.RawMessage `json:"jwk"`
		}
		if json.Unmarshal(data, &wrapped) == nil && len(wrapped.JWK) > 0 {
			data = wrapped.JWK
		}
		key, err := client.ParsePrivateJWK(data)
		if err != nil {
			return nil, fmt.Errorf("loadgen: %s: %w", k.KeyFile, err)
		}
		name := "agent-load-" + fmt.Sprint(len(out))
		if err := ks.Save(context.Background(), name, key); err != nil {
			return nil, err
		}
		// A directory agent signs only agent JWTs: the host key is never
		// used, so the agent's own stands in for it.
		a, err := c.Resume(context.Background(), client.Connection{
			Provider: target, Issuer: target, AgentID: k.ID, HostID: hostID,
			Mode: agentcap.ModeDelegated, HostKey: name, AgentKey: name,
		})
		if err != nil {
			return nil, err
		}
		user := users[hostID]
		if acc.User != "" {
			user = acc.User
		}
		out = append(out, &Agent{ID: k.ID, User: user, Source: acc.Source, Destination: acc.Destination, MaxAmount: maxAmount, agent: a})
	}
	if len(out) == 0 {
		return nil, errors.New("loadgen: no directory agent has a key")
	}
	return out, nil
}
