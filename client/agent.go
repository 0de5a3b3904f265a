package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentcap/agentcap"
)

// Errors of the approval flow.
var (
	// ErrApprovalDenied is wrapped when the user refused the agent or the
	// requested capabilities.
	ErrApprovalDenied = errors.New("client: approval denied")
	// ErrApprovalExpired is wrapped when the approval's lifetime ran out
	// before the user decided.
	ErrApprovalExpired = errors.New("client: approval expired")
)

// defaultPollInterval is the approval polling interval used when the
// provider names none (RFC 8628's default).
const defaultPollInterval = 5 * time.Second

// slowDownStep is what each slow_down adds to the polling interval (RFC
// 8628 §3.5).
const slowDownStep = 5 * time.Second

// Connection is what must be kept to act as a connected agent again: the
// provider, the agent's and host's ids and the names of their keys in the
// KeyStore. It holds no secret, so it may be stored anywhere.
type Connection struct {
	// Provider is the URL given to Connect, from which the discovery
	// document is read again.
	Provider string `json:"provider"`
	// Issuer is the provider's issuer at connection time; a later
	// discovery document with another issuer is refused.
	Issuer  string `json:"issuer"`
	AgentID string `json:"agent_id"`
	HostID  string `json:"host_id,omitempty"`
	Name    string `json:"name"`
	Mode    string `json:"mode"`
	// HostKey and AgentKey name the keys in the KeyStore.
	HostKey  string `json:"host_key"`
	AgentKey string `json:"agent_key"`
}

// ConnectOptions describe the agent to register.
type ConnectOptions struct {
	// Name is the agent's display name; empty means "agentcap agent".
	Name string
	// Mode is agentcap.ModeDelegated (the default) or
	// agentcap.ModeAutonomous.
	Mode string
	// Capabilities are requested at registration, with proposed
	// constraints.
	Capabilities []CapabilityRequest
	// Reason, PreferredMethod, LoginHint and BindingMessage are passed to
	// the provider as hints for the approval.
	Reason          string
	PreferredMethod string
	LoginHint       string
	BindingMessage  string

	// OnApproval receives the approval details when the provider asks
	// for the user's approval, before polling starts. It must return
	// promptly; show the verification URI and user code to the user.
	OnApproval func(Approval)
	// OnPoll receives every status read while waiting, to show progress.
	OnPoll func(AgentStatus)
}

// hostKeyName is the key store name of the host key for an issuer. Each
// provider gets its own host key, so that providers cannot correlate one
// client across them (protocol §9.1).
func hostKeyName(issuer string) string {
	sum := sha256.Sum256([]byte(strings.TrimRight(issuer, "/")))
	return "host-" + hex.EncodeToString(sum[:16])
}

func agentKeyName(thumbprint string) string { return "agent-" + thumbprint }

// HostIdentity returns the host identity the client uses towards the
// provider with the given issuer, creating it on first use.
func (c *Client) HostIdentity(ctx context.Context, issuer string) (*Identity, error) {
	return loadOrCreate(ctx, c.cfg.Keys, hostKeyName(issuer), c.cfg.Rand)
}

// registerBody is the body of POST /agent/register.
type registerBody struct {
	Name            string              `json:"name"`
	HostName        string              `json:"host_name,omitempty"`
	Capabilities    []CapabilityRequest `json:"capabilities,omitempty"`
	Mode            string              `json:"mode"`
	Reason          string              `json:"reason,omitempty"`
	PreferredMethod string              `json:"preferred_method,omitempty"`
	LoginHint       string              `json:"login_hint,omitempty"`
	BindingMessage  string              `json:"binding_message,omitempty"`
}

// Connect registers a new agent, with a fresh key, at the provider at
// providerURL (see Discover), and waits for its approval when the
// provider asks for one. It returns the agent once it is active, with
// the status that says so. An agent the user rejected gives an error
// wrapping ErrApprovalDenied; one whose approval ran out,
// ErrApprovalExpired. When ctx ends while waiting, the agent is returned
// with the context's error, so that the caller may keep its Connection
// and poll again later.
func (c *Client) Connect(ctx context.Context, providerURL string, o ConnectOptions) (*Agent, *AgentStatus, error) {
	disc, err := c.Discover(ctx, providerURL)
	if err != nil {
		return nil, nil, err
	}
	if o.Mode == "" {
		o.Mode = agentcap.ModeDelegated
	}
	if o.Mode != agentcap.ModeDelegated && o.Mode != agentcap.ModeAutonomous {
		return nil, nil, fmt.Errorf("client: unknown mode %q", o.Mode)
	}
	if len(disc.Modes) > 0 && !slices.Contains(disc.Modes, o.Mode) {
		return nil, nil, fmt.Errorf("client: provider %s does not support %s agents (modes %q)", disc.Issuer, o.Mode, disc.Modes)
	}
	if o.Name == "" {
		o.Name = "agentcap agent"
	}
	host, err := c.HostIdentity(ctx, disc.Issuer)
	if err != nil {
		return nil, nil, err
	}
	agentID, err := GenerateIdentity(c.cfg.Rand)
	if err != nil {
		return nil, nil, err
	}
	// The key is saved before registering, so that a registered agent
	// never exists without its key.
	conn := Connection{
		Provider: providerURL,
		Issuer:   disc.Issuer,
		Name:     o.Name,
		Mode:     o.Mode,
		HostKey:  hostKeyName(disc.Issuer),
		AgentKey: agentKeyName(agentID.Thumbprint),
	}
	if err := c.cfg.Keys.Save(ctx, conn.AgentKey, agentID.Key); err != nil {
		return nil, nil, err
	}
	a, err := c.newAgent(conn, host, agentID)
	if err != nil {
		return nil, nil, err
	}
	register, _ := disc.EndpointURL(endpointRegister)
	var st AgentStatus
	_, _, err = c.do(ctx, call{
		method: http.MethodPost,
		url:    register,
		token: func() (string, error) {
			return a.hostSigner.hostToken(host, disc.Issuer, agentID, c.cfg.HostName)
		},
		body: registerBody{
			Name:            o.Name,
			HostName:        c.cfg.HostName,
			Capabilities:    o.Capabilities,
			Mode:            o.Mode,
			Reason:          o.Reason,
			PreferredMethod: o.PreferredMethod,
			LoginHint:       o.LoginHint,
			BindingMessage:  o.BindingMessage,
		},
	}, &st)
	if err != nil {
		_ = c.cfg.Keys.Delete(context.WithoutCancel(ctx), conn.AgentKey)
		return nil, nil, err
	}
	if st.AgentID == "" {
		_ = c.cfg.Keys.Delete(context.WithoutCancel(ctx), conn.AgentKey)
		return nil, nil, errors.New("client: registration answer without agent_id")
	}
	a.conn.AgentID = st.AgentID
	a.conn.HostID = st.HostID
	a.rememberGrants(st.Grants)
	if st.Status != agentcap.StatusPending {
		return a, &st, statusError(&st)
	}
	final, err := a.waitForApproval(ctx, st.Approval, o.OnApproval, o.OnPoll, func(s *AgentStatus) bool {
		return s.Status != agentcap.StatusPending
	})
	if err != nil {
		if errors.Is(err, ErrApprovalDenied) || errors.Is(err, ErrApprovalExpired) {
			// The agent can never act: its key has no further use.
			_ = c.cfg.Keys.Delete(context.WithoutCancel(ctx), conn.AgentKey)
		}
		return a, &st, err
	}
	return a, final, statusError(final)
}

// statusError reports an agent that is not active after registration or
// approval.
func statusError(st *AgentStatus) error {
	switch st.Status {
	case agentcap.StatusActive:
		return nil
	case agentcap.StatusRejected:
		return fmt.Errorf("%w: agent %s was rejected", ErrApprovalDenied, st.AgentID)
	default:
		return fmt.Errorf("client: agent %s is %s", st.AgentID, st.Status)
	}
}

// Resume returns the Agent of a stored Connection. Its keys must be in the
// client's KeyStore.
func (c *Client) Resume(ctx context.Context, conn Connection) (*Agent, error) {
	if conn.AgentID == "" || conn.Provider == "" || conn.Issuer == "" {
		return nil, errors.New("client: incomplete connection")
	}
	hostKey, err := c.cfg.Keys.Load(ctx, conn.HostKey)
	if err != nil {
		return nil, err
	}
	agentKey, err := c.cfg.Keys.Load(ctx, conn.AgentKey)
	if err != nil {
		return nil, err
	}
	host, err := NewIdentity(hostKey)
	if err != nil {
		return nil, err
	}
	agent, err := NewIdentity(agentKey)
	if err != nil {
		return nil, err
	}
	return c.newAgent(conn, host, agent)
}

func (c *Client) newAgent(conn Connection, host, agent *Identity) (*Agent, error) {
	hs, err := newTokenSigner(host, typeHost, c.cfg.Rand, c.cfg.Now)
	if err != nil {
		return nil, err
	}
	as, err := newTokenSigner(agent, typeAgent, c.cfg.Rand, c.cfg.Now)
	if err != nil {
		return nil, err
	}
	return &Agent{
		c:           c,
		conn:        conn,
		host:        host,
		agent:       agent,
		hostSigner:  hs,
		agentSigner: as,
		locations:   map[string]string{},
	}, nil
}

// Agent is a connected agent. It is safe for concurrent use.
type Agent struct {
	c           *Client
	conn        Connection
	host, agent *Identity
	hostSigner  *tokenSigner
	agentSigner *tokenSigner

	mu sync.Mutex
	// locations caches where each capability executes; "" is the
	// provider's default location.
	locations map[string]string
}

// Connection returns what must be stored to resume the agent later.
func (a *Agent) Connection() Connection { return a.conn }

// ID returns the agent's id.
func (a *Agent) ID() string { return a.conn.AgentID }

// Provider returns the provider's discovery document, from the client's
// cache while it is fresh. A document whose issuer changed since the
// agent connected is refused.
func (a *Agent) Provider(ctx context.Context) (*Discovery, error) {
	d, err := a.c.Discover(ctx, a.conn.Provider)
	if err != nil {
		return nil, err
	}
	if strings.TrimRight(d.Issuer, "/") != strings.TrimRight(a.conn.Issuer, "/") {
		return nil, fmt.Errorf("client: provider issuer changed from %s to %s", a.conn.Issuer, d.Issuer)
	}
	return d, nil
}

// issuerToken is an agent JWT for the provider's own endpoints.
func (a *Agent) issuerToken() (string, error) {
	return a.agentSigner.agentToken(a.conn.HostID, a.conn.AgentID, a.conn.Issuer, nil)
}

// hostToken is a host JWT for the provider.
func (a *Agent) hostToken() (string, error) {
	return a.hostSigner.hostToken(a.host, a.conn.Issuer, nil, "")
}

// SignJWT returns an agent JWT for aud (the issuer when empty), limited
// to capabilities when that is non-nil, for callers that send requests of
// their own. The token lives TokenLifetime and is good for one request.
func (a *Agent) SignJWT(aud string, capabilities []string) (string, error) {
	if aud == "" {
		aud = a.conn.Issuer
	}
	return a.agentSigner.agentToken(a.conn.HostID, a.conn.AgentID, aud, capabilities)
}

// Status reads the agent's status and grants (host-authenticated, as the
// protocol has it, so that it also works while the agent is pending).
func (a *Agent) Status(ctx context.Context) (*AgentStatus, error) {
	d, err := a.Provider(ctx)
	if err != nil {
		return nil, err
	}
	ep, _ := d.EndpointURL(endpointStatus)
	var st AgentStatus
	_, _, err = a.c.do(ctx, call{
		method: http.MethodGet,
		url:    ep + "?agent_id=" + url.QueryEscape(a.conn.AgentID),
		token:  a.hostToken,
	}, &st)
	if err != nil {
		return nil, err
	}
	a.rememberGrants(st.Grants)
	return &st, nil
}

// ListOptions select a page of capabilities.
type ListOptions struct {
	Query  string
	Cursor string
	Limit  int
}

// ListCapabilities returns one page of the provider's capabilities, with
// grant statuses for this agent.
func (a *Agent) ListCapabilities(ctx context.Context, o ListOptions) (*CapabilityPage, error) {
	d, err := a.Provider(ctx)
	if err != nil {
		return nil, err
	}
	ep, _ := d.EndpointURL(endpointCapabilities)
	q := url.Values{}
	if o.Query != "" {
		q.Set("query", o.Query)
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if len(q) > 0 {
		ep += "?" + q.Encode()
	}
	var page CapabilityPage
	if _, _, err := a.c.do(ctx, call{method: http.MethodGet, url: ep, token: a.issuerToken}, &page); err != nil {
		return nil, err
	}
	for _, c := range page.Capabilities {
		// A listing may leave locations out; only a named one is known.
		if c.Location != "" {
			a.rememberLocation(c.Name, c.Location)
		}
	}
	return &page, nil
}

// maxListPages bounds AllCapabilities, so that a provider whose cursors
// never end cannot keep the client busy forever.
const maxListPages = 100

// AllCapabilities returns every capability matching query (all when
// empty), following next_cursor across pages.
func (a *Agent) AllCapabilities(ctx context.Context, query string) ([]Capability, error) {
	var all []Capability
	seen := map[string]bool{}
	o := ListOptions{Query: query}
	for range maxListPages {
		page, err := a.ListCapabilities(ctx, o)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Capabilities...)
		if !page.HasMore || page.NextCursor == "" {
			return all, nil
		}
		if seen[page.NextCursor] {
			return nil, fmt.Errorf("client: capability listing repeats cursor %q", page.NextCursor)
		}
		seen[page.NextCursor] = true
		o.Cursor = page.NextCursor
	}
	return nil, fmt.Errorf("client: capability listing longer than %d pages", maxListPages)
}

// Describe returns one capability with its input and output schemas.
func (a *Agent) Describe(ctx context.Context, name string) (*Capability, error) {
	d, err := a.Provider(ctx)
	if err != nil {
		return nil, err
	}
	ep, _ := d.EndpointURL(endpointDescribeCapability)
	var c Capability
	err = a.c.doGet(ctx, ep+"?name="+url.QueryEscape(name), a.issuerToken, &c)
	if err != nil {
		return nil, err
	}
	if c.Name != name {
		return nil, fmt.Errorf("client: asked to describe %q, got %q", name, c.Name)
	}
	a.rememberLocation(c.Name, c.Location)
	return &c, nil
}

func (c *Client) doGet(ctx context.Context, u string, token func() (string, error), out any) error {
	_, _, err := c.do(ctx, call{method: http.MethodGet, url: u, token: token}, out)
	return err
}

// RequestOptions describe a request for more capabilities.
type RequestOptions struct {
	Capabilities    []CapabilityRequest
	Reason          string
	PreferredMethod string
	LoginHint       string
	BindingMessage  string
	// OnApproval and OnPoll are as in ConnectOptions.
	OnApproval func(Approval)
	OnPoll     func(AgentStatus)
}

type requestBody struct {
	Capabilities    []CapabilityRequest `json:"capabilities"`
	Reason          string              `json:"reason,omitempty"`
	PreferredMethod string              `json:"preferred_method,omitempty"`
	LoginHint       string              `json:"login_hint,omitempty"`
	BindingMessage  string              `json:"binding_message,omitempty"`
}

// RequestCapabilities asks for more capabilities and, when the provider
// needs the user's approval, waits for it. It returns the agent's status
// once no requested capability is pending. Capabilities the user denied
// are reported in the status's grants, not as an error.
func (a *Agent) RequestCapabilities(ctx context.Context, o RequestOptions) (*AgentStatus, error) {
	if len(o.Capabilities) == 0 {
		return nil, errors.New("client: no capabilities requested")
	}
	d, err := a.Provider(ctx)
	if err != nil {
		return nil, err
	}
	ep, _ := d.EndpointURL(endpointRequestCapability)
	var st AgentStatus
	_, _, err = a.c.do(ctx, call{
		method: http.MethodPost,
		url:    ep,
		token:  a.issuerToken,
		body: requestBody{
			Capabilities:    o.Capabilities,
			Reason:          o.Reason,
			PreferredMethod: o.PreferredMethod,
			LoginHint:       o.LoginHint,
			BindingMessage:  o.BindingMessage,
		},
	}, &st)
	if err != nil {
		return nil, err
	}
	a.rememberGrants(st.Grants)
	names := make([]string, len(o.Capabilities))
	for i, r := range o.Capabilities {
		names[i] = r.Name
	}
	settled := func(s *AgentStatus) bool {
		for _, g := range s.Grants {
			if g.Status == agentcap.StatusPending && slices.Contains(names, g.Capability) {
				return false
			}
		}
		return s.Status != agentcap.StatusPending
	}
	if st.Approval == nil && settled(&st) {
		return &st, nil
	}
	return a.waitForApproval(ctx, st.Approval, o.OnApproval, o.OnPoll, settled)
}

// waitForApproval hands the approval to onApproval and polls the
// agent's status until done says so, the approval expires or ctx ends.
// It waits the approval's interval between polls, adds slowDownStep on
// every slow_down, doubles the wait after a 429 or a server error, and
// never waits longer than the larger of MaxPollInterval and the
// provider's interval.
func (a *Agent) waitForApproval(ctx context.Context, ap *Approval, onApproval func(Approval), onPoll func(AgentStatus), done func(*AgentStatus) bool) (*AgentStatus, error) {
	interval := defaultPollInterval
	var deadline time.Time
	if ap != nil {
		if onApproval != nil {
			shown := *ap
			shown.AgentID = a.conn.AgentID
			onApproval(shown)
		}
		if ap.Interval > 0 {
			interval = time.Duration(ap.Interval) * time.Second
		}
		if ap.ExpiresIn > 0 {
			deadline = a.c.cfg.Now().Add(time.Duration(ap.ExpiresIn) * time.Second)
		}
	}
	ceiling := max(a.c.cfg.MaxPollInterval, interval)
	wait := interval
	for {
		if err := a.c.cfg.Sleep(ctx, wait); err != nil {
			return nil, err
		}
		st, err := a.Status(ctx)
		if err != nil {
			if err := pollFailed(ctx, err, &interval, &wait, ceiling); err != nil {
				return nil, err
			}
		} else {
			if onPoll != nil {
				onPoll(*st)
			}
			if st.Status == agentcap.StatusRejected {
				return st, fmt.Errorf("%w: agent %s was rejected", ErrApprovalDenied, st.AgentID)
			}
			if done(st) {
				return st, nil
			}
			wait = interval
		}
		if !deadline.IsZero() && !a.c.cfg.Now().Before(deadline) {
			return nil, fmt.Errorf("%w: no decision for agent %s", ErrApprovalExpired, a.conn.AgentID)
		}
	}
}

// pollFailed decides what the failure of one poll of an approval means:
// it returns the error that ends the wait, or nil after setting the next
// wait (and, on slow_down, a longer interval, up to ceiling). A refusal
// wraps ErrApprovalDenied, an expiry ErrApprovalExpired; a 429, a server
// error or a network failure (the provider may be restarting) doubles
// the wait.
func pollFailed(ctx context.Context, err error, interval, wait *time.Duration, ceiling time.Duration) error {
	var e *Error
	switch {
	case errors.As(err, &e) && e.Code == agentcap.CodeSlowDown:
		*interval = min(*interval+slowDownStep, ceiling)
		*wait = *interval
	case errors.As(err, &e) && e.Code == agentcap.CodeAuthorizationPending:
		*wait = *interval
	case errors.As(err, &e) && (e.Code == agentcap.CodeAccessDenied || e.Code == agentcap.CodeConfirmationDenied):
		return fmt.Errorf("%w: %w", ErrApprovalDenied, err)
	case errors.As(err, &e) && (e.Code == agentcap.CodeExpiredToken || e.Code == agentcap.CodeConfirmationExpired):
		return fmt.Errorf("%w: %w", ErrApprovalExpired, err)
	case errors.As(err, &e) && (e.Status == http.StatusTooManyRequests || e.Status >= 500):
		*wait = min(max(*wait*2, e.RetryAfter), ceiling)
	case errors.As(err, &e):
		return err
	default:
		if ctx.Err() != nil {
			return ctx.Err()
		}
		*wait = min(*wait*2, ceiling)
	}
	return nil
}

// Revoke revokes the agent at the provider (host-authenticated) and
// deletes its key. The agent cannot be used afterwards.
func (a *Agent) Revoke(ctx context.Context) error {
	d, err := a.Provider(ctx)
	if err != nil {
		return err
	}
	ep, _ := d.EndpointURL(endpointRevoke)
	_, _, err = a.c.do(ctx, call{
		method: http.MethodPost,
		url:    ep,
		token:  a.hostToken,
		body:   map[string]string{"agent_id": a.conn.AgentID},
	}, nil)
	if err != nil {
		return err
	}
	return a.c.cfg.Keys.Delete(ctx, a.conn.AgentKey)
}

func (a *Agent) rememberGrants(gs []Grant) {
	for _, g := range gs {
		if g.Location != "" {
			a.rememberLocation(g.Capability, g.Location)
		}
	}
}

func (a *Agent) rememberLocation(name, location string) {
	a.mu.Lock()
	a.locations[name] = location
	a.mu.Unlock()
}

func (a *Agent) forgetLocation(name string) {
	a.mu.Lock()
	delete(a.locations, name)
	a.mu.Unlock()
}

// location returns the absolute URL where a capability executes,
// describing it when its location is not known yet.
func (a *Agent) location(ctx context.Context, name string) (string, error) {
	d, err := a.Provider(ctx)
	if err != nil {
		return "", err
	}
	a.mu.Lock()
	loc, ok := a.locations[name]
	a.mu.Unlock()
	if !ok {
		c, err := a.Describe(ctx, name)
		if err != nil {
			return "", err
		}
		loc = c.Location
	}
	if loc == "" {
		return d.DefaultLocationURL(), nil
	}
	if _, err := a.c.checkURL(loc); err != nil {
		return "", fmt.Errorf("client: location of %s: %w", name, err)
	}
	return loc, nil
}
