package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/internal/readcheck"
)

// errMalformedBearer refuses an Authorization header of the Bearer scheme
// that does not carry exactly one token.
var errMalformedBearer = agentcap.NewError(agentcap.CodeInvalidJWT, "the Authorization header must be Bearer followed by an agent JWT")

// sessionSource is the SessionSource of the capability locations backed by
// the provider: it verifies agent JWTs against the Store (see
// agentauth.Verifier for the checks), counting each against the agent,
// host and user rate limits before its jti is recorded (see admit), then
// records the request on the agent (at most once per
// Config.TouchInterval while the agent has not lapsed), which extends its
// session or, past its lifetime, ends it (403 agent_expired, or
// absolute_lifetime_exceeded). Its audiences are the issuer, the
// default location and every capability location in the Registry (and
// every Config.Endpoints entry); a location's verifier checks per
// capability which one an execution must name.
type sessionSource struct{ p *Provider }

func (s sessionSource) Session(ctx context.Context, token string) (*agentauth.Session, error) {
	return s.p.session(ctx, token)
}

// session verifies token with a read check (see internal/readcheck): a
// store that keeps records under a count of changes shared with other
// instances may serve the agent and host it keeps without reading the
// count first, and the replay check (or one read of the count just
// before it) finds whether the count moved since they were read. If it
// did, nothing was recorded and the token is verified again from the
// store's fresh records, without a check (its rate limits, counted by
// the first attempt for the same agent, host and user, are not counted
// again). A token
// refused before the replay check, on records served unchecked (a key
// rotated, a host approved meanwhile), is refused only once one read of
// the count finds those records current; else it too is verified again.
func (p *Provider) session(ctx context.Context, token string) (*agentauth.Session, error) {
	var read agentRead
	rctx := context.WithValue(ctx, agentReadKey{}, &read)
	cctx, chk := readcheck.With(rctx)
	sess, err := p.verifier.Session(cctx, token)
	if err != nil && !errors.Is(err, readcheck.ErrMoved) {
		if moved := chk.Verify(ctx); moved != nil {
			err = moved
		}
	}
	if errors.Is(err, readcheck.ErrMoved) {
		read = agentRead{admitted: read.admitted}
		sess, err = p.verifier.Session(rctx, token)
	}
	if err != nil {
		return nil, err
	}
	if err := p.touch(ctx, sess.Agent.ID, read.agent); err != nil {
		return nil, err
	}
	return sess, nil
}

// admit is the verifier's Admit hook: a token that passed every check
// but the replay check is counted against the agent, host and user rate
// limits there, before its jti is recorded, so that a token refused 429
// is not spent and takes no room in the replay cache: an agent past its
// limit cannot fill the cache every agent relies on.
//
// A session check verified again (see session) is counted once: the
// second attempt, for the same agent, host and user, passes.
func (p *Provider) admit(ctx context.Context, s *agentauth.Session) error {
	r, _ := ctx.Value(agentReadKey{}).(*agentRead)
	who := admission{s.Agent.ID, s.Host.ID, s.Agent.UserID}
	if r != nil && r.admitted == who {
		return nil
	}
	if err := p.limits.agent(ctx, who.agent, who.host, who.user); err != nil {
		return err
	}
	if r != nil {
		r.admitted = who
	}
	return nil
}

// admission is whom a session check's rate limits were counted for.
type admission struct{ agent, host, user string }

// touch records an authenticated request of agent id, read as a by the
// verifier (nil when unknown), unless Config.TouchInterval lets it go
// unrecorded: a is active, has not lapsed now and its last use was
// recorded less than the interval before now. An agent that has lapsed
// is expired or revoked by the store and refused here.
func (p *Provider) touch(ctx context.Context, id string, a *store.Agent) error {
	now := p.now()
	if p.touchInterval > 0 && a != nil && a.ID == id && a.Status == agentcap.StatusActive &&
		a.LastUsedAt != nil && now.Sub(*a.LastUsedAt) < p.touchInterval && p.lifetimes.Lapsed(a, now) == "" {
		return nil
	}
	if err := p.store.TouchAgent(ctx, id, now, p.lifetimes); err != nil {
		switch {
		case errors.Is(err, store.ErrLifetimeExceeded):
			return agentcap.NewError(agentcap.CodeAbsoluteLifetimeExceeded, "the agent's absolute lifetime has passed")
		case errors.Is(err, store.ErrStatus):
			var se *store.StatusError
			errors.As(err, &se)
			return agentStateError(se.Status)
		}
		return storeDown(fmt.Errorf("touching agent %s: %w", id, err))
	}
	return nil
}

// hostSource is the HostSource of capability locations backed by the
// provider: list and describe with a host JWT (protocol §5.2, §5.2.1).
// The token is verified exactly as registration verifies it (see
// verifyHost), for a host the provider knows; the request counts against
// the host's rate limit. An unknown host is 401 invalid_jwt, after which
// the published client lists without credentials; a pending host is
// answered as a host without a user, since nobody has approved it yet;
// a revoked or rejected host is 403 host_revoked.
type hostSource struct{ p *Provider }

func (s hostSource) VerifyHost(ctx context.Context, token string) (*agentauth.Host, error) {
	p := s.p
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, p.issuer, nil)
	if err != nil {
		return nil, internalError(err)
	}
	r.Header.Set("Authorization", "Bearer "+token)
	h, err := p.verifyHost(ctx, r, hostKnownOrPending)
	if err != nil {
		return nil, err
	}
	if err := p.limits.host(ctx, h.host.ID); err != nil {
		return nil, err
	}
	d := h.host.DirectoryHost()
	if d.Status != agentcap.StatusActive {
		d.UserID = ""
	}
	return d, nil
}

// Verify implements auth.Verifier for the capability locations served
// with this provider's agents, the value to give httpx.Config.Verifier
// (and, for an MCP endpoint among Config.Endpoints, see
// EndpointVerifier): agentauth.New over the provider's sessions (see
// sessionSource: agent JWTs verified against the Store, the request
// recorded on the agent and counted against the rate limits) and host
// JWTs (see hostSource), with the provider's issuer, clock and
// Config.AllowAnonymousDiscovery. The identity's Authorizer first checks
// that the token was made for where the capability executes (an
// execution JWT's aud must be the capability's location, or the default
// location for a capability without one, protocol §4.3) and the
// capability's per-capability rate limit, then runs Config.Authorize,
// then the agent's grants. A poll or cancellation of a job at its status
// URL (httpx.LongRunning) needs the same aud as an execution of the job's
// capability: a token made for the issuer or another location is 401
// invalid_jwt there.
func (p *Provider) Verify(ctx context.Context, req *auth.Request) (*auth.Identity, error) {
	return p.location.Verify(ctx, req)
}

// Challenge implements auth.Challenger: the AgentAuth challenge that
// points agents at the provider's discovery document.
func (p *Provider) Challenge() string { return p.challenge }

// locationVerifier is the verifier of a location whose executions of def
// must name where(def) as their aud.
func (p *Provider) locationVerifier(sessions agentauth.SessionSource, where func(*core.Definition) string) (auth.Verifier, error) {
	next := p.authorize
	return agentauth.New(agentauth.Config{
		Sessions:                sessions,
		Hosts:                   hostSource{p},
		Issuer:                  p.issuer,
		AllowAnonymousDiscovery: p.anonymous,
		Now:                     p.now,
		Logger:                  p.logger,
		// A token is good where the capability executes, for its jobs
		// too (protocol §4.3).
		Audience: func(capability string) string {
			def, _ := p.reg.Lookup(capability)
			return where(def)
		},
		Authorize: func(ctx context.Context, id *auth.Identity, call *auth.Call) error {
			s := agentauth.SessionOf(id)
			def, ok := p.reg.Lookup(call.Capability)
			if s == nil || !ok {
				return internalError(fmt.Errorf("provider: a call of %q without an agent session or a registered capability", call.Capability))
			}
			if err := p.limits.capability(ctx, def.Name(), s.Agent.ID); err != nil {
				return err
			}
			if next != nil {
				return next(ctx, id, call)
			}
			return nil
		},
	})
}

// defaultWhere is where an execution of def must name as its aud at the
// provider's capability locations: the capability's own location, else
// the default location (also for a job of a capability no longer
// registered, def nil).
func (p *Provider) defaultWhere(def *core.Definition) string {
	if def != nil {
		if loc := def.Location(); loc != "" {
			return loc
		}
	}
	return p.defaultLocation
}

// agentSession authenticates an agent request to a provider endpoint:
// the token's aud must be the issuer.
func (p *Provider) agentSession(r *http.Request) (*agentauth.Session, error) {
	token, ok := auth.BearerToken(r.Header.Get("Authorization"))
	switch {
	case !ok:
		return nil, agentcap.NewError(agentcap.CodeAuthenticationRequired, "an agent JWT is required")
	case token == "":
		return nil, errMalformedBearer
	}
	sess, err := p.session(r.Context(), token)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(sess.Claims.Audience, p.issuer) {
		return nil, agentcap.NewError(agentcap.CodeInvalidJWT, "agent JWT audience is not this issuer")
	}
	return sess, nil
}

// requestCapability serves POST /agent/request-capability (protocol
// §5.4). Capabilities the agent already holds are reported as they are;
// if it holds all of them, the answer is 409 already_granted.
func (p *Provider) requestCapability(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	sess, err := p.agentSession(r)
	if err != nil {
		return err
	}
	m, err := readObject(r)
	if err != nil {
		return err
	}
	reqs, err := p.parseRequested(m["capabilities"], true)
	if err != nil {
		return err
	}
	reason, err := optString(m, "reason")
	if err != nil {
		return err
	}
	reason = displayText(reason, maxReasonRunes)
	hints, err := readHints(m)
	if err != nil {
		return err
	}
	a, err := p.store.GetAgent(ctx, sess.Agent.ID)
	if err != nil {
		return internalError(err)
	}
	host, err := p.store.GetHost(ctx, a.HostID)
	if err != nil {
		return internalError(err)
	}
	held := map[string]store.Grant{}
	for _, g := range a.Grants {
		held[g.Capability] = g
	}
	var fresh []store.Grant
	var pending []store.RequestedCapability
	var names []string
	for _, rc := range reqs {
		names = append(names, rc.Name)
		if g, ok := held[rc.Name]; ok && g.Status == agentcap.StatusActive && (g.ExpiresAt == nil || p.now().Before(*g.ExpiresAt)) {
			continue
		}
		def, _ := p.reg.Lookup(rc.Name)
		cons, err := p.effectiveConstraints(ctx, a, def, rc.Constraints)
		if err != nil {
			return err
		}
		g := store.Grant{Capability: rc.Name, Status: agentcap.StatusPending, Constraints: cons, Reason: reason}
		switch {
		case a.Mode == agentcap.ModeAutonomous:
			if p.grantAutonomous(ctx, host, def) {
				g.Status, g.GrantedBy = agentcap.StatusActive, "system:policy"
			} else {
				g.Status, g.DeniedBy, g.Reason = agentcap.StatusDenied, "system:policy", "autonomous agents of this host are not granted this capability"
			}
		case p.autoApprove(ctx, host, def):
			g.Status, g.GrantedBy = agentcap.StatusActive, "system:host_defaults"
		default:
			pending = append(pending, store.RequestedCapability{Name: rc.Name, Constraints: cons})
		}
		if g.Status == agentcap.StatusActive {
			g.ExpiresAt = p.grantExpiry(ctx, a, def, p.now())
		}
		fresh = append(fresh, g)
	}
	if len(fresh) == 0 {
		return agentcap.NewError(agentcap.CodeAlreadyGranted, "every requested capability is already granted")
	}
	if err := p.store.PutGrants(ctx, a.ID, fresh); err != nil {
		return internalError(err)
	}
	p.record(ctx, agentRecord(audit.EventGrantsChanged, a, host, "requested by the agent: "+grantSummary(fresh)))
	var ap *approvalJSON
	if len(pending) > 0 {
		rq := approvalRequest{kind: KindCapabilities, agent: a, host: host, caps: pending, hints: hints}
		if ap, err = p.startApproval(ctx, rq); err != nil {
			return err
		}
	}
	stored, err := p.store.ListGrants(ctx, a.ID)
	if err != nil {
		return internalError(err)
	}
	stored = slices.DeleteFunc(stored, func(g store.Grant) bool { return !slices.Contains(names, g.Capability) })
	writeJSON(w, http.StatusOK, struct {
		AgentID  string        `json:"agent_id"`
		Grants   []grantJSON   `json:"agent_capability_grants"`
		Approval *approvalJSON `json:"approval,omitempty"`
	}{a.ID, p.renderGrants(stored, false), ap})
	return nil
}

// BearerCredential returns an IntrospectionAuth that admits requests
// whose Authorization header is "Bearer " followed by secret, compared
// in constant time.
func BearerCredential(secret string) func(r *http.Request) bool {
	want := "Bearer " + secret
	return func(r *http.Request) bool {
		got := r.Header.Get("Authorization")
		return constantTimeEqual(got, want) && secret != ""
	}
}

// introspect serves POST /agent/introspect (protocol §5.12). Any token
// that does not verify is {"active": false}; the reason is not told.
// Verifying consumes the token's jti, as using it would.
func (p *Provider) introspect(w http.ResponseWriter, r *http.Request) error {
	if p.introspectAuth != nil && !p.introspectAuth(r) {
		// Its 401 carries the AgentAuth challenge alone, like every other.
		return agentcap.NewError(agentcap.CodeAuthenticationRequired, "the introspection endpoint needs the caller's credential")
	}
	m, err := readObject(r)
	if err != nil {
		return err
	}
	token, err := reqString(m, "token")
	if err != nil {
		return err
	}
	sess, err := p.session(r.Context(), strings.TrimSpace(token))
	if err != nil {
		if e := agentcap.As(err); e != nil && e.HTTPStatus() >= 500 {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]bool{"active": false})
		return nil
	}
	// A token made for one capability location is good only for the
	// capabilities that execute there, so that a location cannot replay
	// it elsewhere (protocol §8.18).
	aud := sess.Claims.Audience
	forProvider := slices.Contains(aud, p.issuer) || slices.Contains(aud, p.defaultLocation)
	type compact struct {
		Capability string `json:"capability"`
		Status     string `json:"status"`
	}
	grants := []compact{}
	for _, g := range sess.Agent.Grants {
		if sess.Claims.Capabilities != nil && !slices.Contains(sess.Claims.Capabilities, g.Capability) {
			continue
		}
		if !forProvider {
			def, ok := p.reg.Lookup(g.Capability)
			if !ok || !slices.Contains(aud, def.Location()) {
				continue
			}
		}
		if !g.Effective(p.now()) {
			continue
		}
		grants = append(grants, compact{g.Capability, g.Status})
	}
	a, err := p.store.GetAgent(r.Context(), sess.Agent.ID)
	if err != nil {
		return internalError(err)
	}
	out := map[string]any{
		"active":                  true,
		"agent_id":                a.ID,
		"host_id":                 a.HostID,
		"agent_capability_grants": grants,
		"mode":                    a.Mode,
	}
	if a.UserID != "" {
		out["user_id"] = a.UserID
	}
	if a.ExpiresAt != nil {
		out["expires_at"] = a.ExpiresAt
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
