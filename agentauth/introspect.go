package agentauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentcap/agentcap"
)

// Limits of remote introspection.
const (
	// defaultIntrospectionTimeout bounds an introspection request made
	// with the default HTTP client.
	defaultIntrospectionTimeout = 5 * time.Second
	// maxIntrospectionResponseBytes bounds an introspection response.
	maxIntrospectionResponseBytes = 1 << 20
	// defaultIntrospectionConcurrency is IntrospectionConfig.MaxConcurrent
	// when it is zero.
	defaultIntrospectionConcurrency = 64
	// introspectionExpLeeway is how far past its exp a token may be, by
	// this server's clock, and still be sent for introspection: the
	// provider's clock decides, within the protocol's largest skew.
	introspectionExpLeeway = MaxSkew
)

// msgIntrospectionBusy is the public message of a token refused because
// IntrospectionConfig.MaxConcurrent requests are under way.
const msgIntrospectionBusy = "too many tokens are being checked now; retry later"

// IntrospectionConfig configures an IntrospectionSource.
type IntrospectionConfig struct {
	// Endpoint is the provider's POST /agent/introspect URL. It must use
	// https, except for a loopback host (development and tests).
	Endpoint string
	// Header is an optional credential header name, e.g. "Authorization".
	Header string
	// Credential is the value of Header.
	Credential string
	// HTTPClient sends the requests. Nil means a client with a 5 s
	// timeout that follows no redirects (a redirect could carry the token
	// and the credential elsewhere).
	HTTPClient *http.Client
	// Audiences lists the URLs this location answers to. Required: the
	// token's "aud" must match one before it is sent to the provider,
	// which cannot tell this location's URL from another's, so a token
	// minted for another location is never accepted here.
	Audiences []string
	// MaxConcurrent bounds the introspection requests under way at once.
	// A token is sent to the provider before anything proves who made
	// it, so without a bound anyone could hold as many requests, and
	// connections to the provider, as they send tokens, and spend this
	// location's request budget at the provider. A token arriving while
	// MaxConcurrent requests are under way is refused with 503
	// temporarily_unavailable and Retry-After, without a request. Zero
	// means 64.
	MaxConcurrent int
	// Replay, when set, records the id of every token the provider
	// reports active, under the key and for the time a Verifier uses
	// (ReplayKey(ReplayKeyPrefix, agent id, jti), DefaultMaxAge + 2*MaxSkew,
	// the Verifier's longest window), so that a token is good for one
	// request here whether or not the provider consumes its jti. Sharing
	// it with a Verifier spends a token at both. Nil leaves replay
	// protection to the provider.
	Replay ReplayCache
}

// introspectionReplayTTL is how long an IntrospectionSource with a
// ReplayCache records a token id: the longest window in which any
// Verifier accepts a token.
const introspectionReplayTTL = DefaultMaxAge + 2*MaxSkew

// IntrospectionSource is a SessionSource that asks the Agent Auth provider
// to verify each agent JWT (protocol §5.12). It is safe for concurrent use.
//
// Locally it checks the token's syntax and header exactly as the Verifier
// does (typ agent+jwt, alg EdDSA, no other header members), reads the
// unverified claims into Session.Claims (the provider verified the
// signature), and refuses a token whose aud matches none of Audiences or
// whose exp passed more than 30 s ago. Those checks run before the
// request, because the provider consumes a token's jti when it
// introspects it.
//
// With a ReplayCache, a token must also carry a jti, and an exp at most
// DefaultMaxAge + MaxSkew ahead (the latest a token the protocol allows
// can expire): the record, kept for DefaultMaxAge + 2*MaxSkew, then
// outlives every moment at which the token passes the exp check above.
// The jti is recorded after the provider has reported the token active,
// so that a token refused for another reason is not spent. A token seen
// before is 401 invalid_jwt; a cache that fails is 503
// temporarily_unavailable with Retry-After (fail closed; see Unavailable).
//
// Grants: the protocol's introspection response carries compact grants
// ({capability, status}) that cannot express constraints, so the session
// is Compact and constraint checks must fail closed. When the provider
// does send a "constraints" member on any grant, it evidently sends full
// grants: the session is then not Compact, grants that carry a constraints
// object keep it (an empty object means unconstrained), and grants without
// one are unconstrained.
type IntrospectionSource struct {
	endpoint   string
	header     string
	credential string
	client     *http.Client
	audiences  []string
	replay     ReplayCache
	now        func() time.Time
	slots      chan struct{} // one per request under way
}

var _ SessionSource = (*IntrospectionSource)(nil)

// NewIntrospectionSource checks cfg and returns an IntrospectionSource.
func NewIntrospectionSource(cfg IntrospectionConfig) (*IntrospectionSource, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("agentauth: IntrospectionConfig.Endpoint: %w", err)
	}
	if u.Host == "" || u.User != nil || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopbackHost(u.Hostname()))) {
		return nil, fmt.Errorf("agentauth: IntrospectionConfig.Endpoint %q must be an absolute https URL without credentials (http only to loopback)", cfg.Endpoint)
	}
	switch {
	case cfg.Header != "" && cfg.Credential == "":
		return nil, errors.New("agentauth: IntrospectionConfig.Header is set without a Credential")
	case cfg.Header == "" && cfg.Credential != "":
		return nil, errors.New("agentauth: IntrospectionConfig.Credential is set without a Header")
	case cfg.Header != "" && !validHeaderName(cfg.Header):
		return nil, fmt.Errorf("agentauth: IntrospectionConfig.Header %q is not a valid header name", cfg.Header)
	case strings.ContainsAny(cfg.Credential, "\r\n\x00"):
		return nil, errors.New("agentauth: IntrospectionConfig.Credential contains a control character")
	}
	if len(cfg.Audiences) == 0 {
		return nil, errors.New("agentauth: IntrospectionConfig.Audiences is required")
	}
	switch {
	case cfg.MaxConcurrent == 0:
		cfg.MaxConcurrent = defaultIntrospectionConcurrency
	case cfg.MaxConcurrent < 0:
		return nil, fmt.Errorf("agentauth: IntrospectionConfig.MaxConcurrent %d is negative", cfg.MaxConcurrent)
	}
	for i, a := range cfg.Audiences {
		if strings.TrimSpace(a) == "" {
			return nil, fmt.Errorf("agentauth: IntrospectionConfig.Audiences[%d] is empty", i)
		}
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{
			Timeout:       defaultIntrospectionTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return &IntrospectionSource{
		endpoint:   u.String(),
		header:     http.CanonicalHeaderKey(cfg.Header),
		credential: cfg.Credential,
		client:     client,
		audiences:  slices.Clone(cfg.Audiences),
		replay:     cfg.Replay,
		now:        time.Now,
		slots:      make(chan struct{}, cfg.MaxConcurrent),
	}, nil
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func validHeaderName(name string) bool {
	for _, r := range name {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return name != ""
}

// Session implements SessionSource. A token the provider reports inactive,
// or one already recorded in the ReplayCache, is 401 invalid_jwt; a
// provider that cannot be reached, answers non-2xx, times out or answers
// malformed JSON gives 500 internal_error, with the reason in the hidden
// cause; a token arriving while IntrospectionConfig.MaxConcurrent
// requests are under way is 503 temporarily_unavailable (see
// Unavailable).
func (s *IntrospectionSource) Session(ctx context.Context, token string) (*Session, error) {
	tok, err := parseAgentToken(token)
	if err != nil {
		return nil, err
	}
	c := tok.claims
	if !audienceMatches(c.Audience, s.audiences) {
		return nil, agentcap.NewError(agentcap.CodeInvalidJWT, msgAudience).
			WithCause(fmt.Errorf("agentauth: aud %q matches none of %q", c.Audience, s.audiences))
	}
	now := s.now()
	if tok.hasExp && now.After(c.ExpiresAt.Add(introspectionExpLeeway)) {
		return nil, agentcap.NewError(agentcap.CodeInvalidJWT, msgExpired).
			WithCause(fmt.Errorf("agentauth: exp %v passed", c.ExpiresAt))
	}
	if s.replay != nil {
		switch {
		case c.ID == "":
			return nil, missingClaim("jti")
		case !tok.hasExp:
			return nil, missingClaim("exp")
		case c.ExpiresAt.After(now.Add(DefaultMaxAge + MaxSkew)):
			// A record kept for introspectionReplayTTL would expire
			// while the token still passes the exp check.
			return nil, agentcap.NewError(agentcap.CodeInvalidJWT, msgLifetime).
				WithCause(fmt.Errorf("agentauth: exp %v is more than %v after now %v", c.ExpiresAt, DefaultMaxAge+MaxSkew, now))
		}
	}

	select {
	case s.slots <- struct{}{}:
	default:
		return nil, Unavailable(msgIntrospectionBusy, fmt.Errorf("agentauth: introspection: %d requests under way", cap(s.slots)))
	}
	resp, err := func() (*introspection, error) {
		defer func() { <-s.slots }()
		return s.introspect(ctx, token)
	}()
	if err != nil {
		return nil, internal(err)
	}
	if !resp.active {
		return nil, invalidToken(errors.New("agentauth: introspection: token is not active"))
	}
	if resp.agentID != c.Subject {
		return nil, internal(fmt.Errorf("agentauth: introspection: agent_id %q differs from the token's sub %q", resp.agentID, c.Subject))
	}
	if resp.expiresAt != nil && !s.now().Before(*resp.expiresAt) {
		return nil, agentcap.NewError(agentcap.CodeAgentExpired, msgAgentExpired).
			WithCause(fmt.Errorf("agentauth: introspection: agent %q session expired at %v", resp.agentID, resp.expiresAt))
	}
	if s.replay != nil {
		fresh, err := checkAndSet(ctx, s.replay, ReplayKey(ReplayKeyPrefix, resp.agentID, c.ID), introspectionReplayTTL, resp.agentID, resp.hostID)
		if err != nil {
			return nil, replayRefused(err, "agent")
		}
		if !fresh {
			return nil, agentcap.NewError(agentcap.CodeInvalidJWT, msgReplayed).
				WithCause(fmt.Errorf("agentauth: jti %q of agent %q was already used", c.ID, resp.agentID))
		}
	}
	return &Session{
		Agent: &Agent{
			ID:     resp.agentID,
			HostID: resp.hostID,
			UserID: resp.userID,
			Mode:   resp.mode,
			Status: agentcap.StatusActive,
			Grants: resp.grants,
		},
		Host:    &Host{ID: resp.hostID, UserID: resp.userID, Status: agentcap.StatusActive},
		Claims:  c,
		Compact: !resp.fullGrants,
	}, nil
}

type introspection struct {
	active     bool
	agentID    string
	hostID     string
	userID     string
	mode       string
	expiresAt  *time.Time
	grants     []Grant
	fullGrants bool
}

func (s *IntrospectionSource) introspect(ctx context.Context, token string) (*introspection, error) {
	body, err := json.Marshal(struct {
		Token string `json:"token"`
	}{token})
	if err != nil {
		return nil, fmt.Errorf("agentauth: introspection: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("agentauth: introspection: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if s.header != "" {
		req.Header.Set(s.header, s.credential)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("agentauth: introspection: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxIntrospectionResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("agentauth: introspection: reading response: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("agentauth: introspection: status %s", resp.Status)
	}
	if len(data) > maxIntrospectionResponseBytes {
		return nil, fmt.Errorf("agentauth: introspection: response larger than %d bytes", maxIntrospectionResponseBytes)
	}
	in, err := parseIntrospection(data)
	if err != nil {
		return nil, fmt.Errorf("agentauth: introspection: malformed response: %w", err)
	}
	return in, nil
}

// parseIntrospection reads a §5.12 response. Members it does not use are
// ignored, since providers may add some; the ones it uses must have their
// documented types, and an active response must name the agent, its host
// and its mode.
func parseIntrospection(data []byte) (*introspection, error) {
	if err := checkNoDuplicates(data); err != nil {
		return nil, err
	}
	m, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	var in introspection
	switch string(m["active"]) {
	case "true":
		in.active = true
	case "false":
		return &in, nil
	default:
		return nil, errors.New(`"active" is missing or not a boolean`)
	}
	if in.agentID, err = optString(m, "agent_id"); err != nil {
		return nil, err
	}
	if in.hostID, err = optString(m, "host_id"); err != nil {
		return nil, err
	}
	if in.agentID == "" || in.hostID == "" {
		return nil, errors.New(`an active response lacks "agent_id" or "host_id"`)
	}
	if in.userID, err = optNullableString(m, "user_id"); err != nil {
		return nil, err
	}
	if in.mode, err = optString(m, "mode"); err != nil {
		return nil, err
	}
	if in.mode != agentcap.ModeDelegated && in.mode != agentcap.ModeAutonomous {
		return nil, fmt.Errorf(`"mode" %q is not one of delegated, autonomous`, in.mode)
	}
	if in.expiresAt, err = optTime(m, "expires_at"); err != nil {
		return nil, err
	}
	raw, ok := m["agent_capability_grants"]
	if !ok || len(raw) == 0 || raw[0] != '[' {
		return nil, errors.New(`"agent_capability_grants" is missing or not an array`)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf(`"agent_capability_grants": %w`, err)
	}
	in.grants = make([]Grant, 0, len(items))
	for i, item := range items {
		g, hasConstraints, err := parseIntrospectedGrant(item)
		if err != nil {
			return nil, fmt.Errorf("agent_capability_grants[%d]: %w", i, err)
		}
		in.fullGrants = in.fullGrants || hasConstraints
		in.grants = append(in.grants, g)
	}
	return &in, nil
}

func parseIntrospectedGrant(raw json.RawMessage) (Grant, bool, error) {
	var g Grant
	m, err := decodeObject(raw)
	if err != nil {
		return g, false, err
	}
	if g.Capability, err = optString(m, "capability"); err != nil {
		return g, false, err
	}
	if g.Status, err = optString(m, "status"); err != nil {
		return g, false, err
	}
	if err := validateGrant(g); err != nil {
		return g, false, err
	}
	if g.ExpiresAt, err = optTime(m, "expires_at"); err != nil {
		return g, false, err
	}
	c, ok := m["constraints"]
	if !ok || string(c) == "null" {
		return g, false, nil
	}
	if g.Constraints, err = decodeObject(c); err != nil {
		return g, false, fmt.Errorf(`"constraints": %w`, err)
	}
	return g, true, nil
}
