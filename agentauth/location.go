package agentauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
)

// Config configures New: the Agent Auth side of a capability location.
type Config struct {
	// Sessions verifies agent JWTs: a *Verifier over a Directory, an
	// *IntrospectionSource, or any other SessionSource. Required.
	Sessions SessionSource

	// Hosts, when set, lets list and describe run with a host JWT
	// (protocol §5.2: "capabilities available to the host's linked
	// user", used before an agent exists): a Bearer token whose typ is
	// host+jwt is verified by Hosts, and the identity is the host's (see
	// New). A HostVerifier serves a location trusting a Directory. Execute
	// never accepts a host JWT. Nil answers a host JWT 401 invalid_jwt.
	Hosts HostSource

	// Issuer is the issuer URL. The 401 challenge is
	// AgentAuth discovery="<issuer origin>/.well-known/agent-configuration".
	// Required: an absolute http or https URL.
	Issuer string

	// AllowAnonymousDiscovery lets list and describe run without a token,
	// as the nil identity: only capabilities whose visibility admits it
	// are shown, without grant_status. Execute always needs a token.
	AllowAnonymousDiscovery bool

	// Authorize, when set, runs for every call of an agent before the
	// token's capabilities claim and the agent's grants are checked. It
	// holds the application's own refusals that do not depend on grants
	// (a capability that acts for a user refuses an autonomous agent,
	// say), so that they win over capability_not_granted. An
	// *agentcap.Error answers in its own words; any other error refuses
	// the call as unauthorized.
	Authorize func(ctx context.Context, id *auth.Identity, call *auth.Call) error

	// Audience, when set, names the aud an agent JWT must carry to
	// execute capability here (protocol §4.3: the capability's location,
	// else the default location), and to poll or cancel a job of it,
	// whose status URL is a resource of the same location: another aud
	// is 401 invalid_jwt, checked before Authorize. "" (or a nil
	// Audience) accepts any aud the session source accepted, as a
	// location with one audience needs. A provider sets it for its
	// locations.
	Audience func(capability string) string

	// Now is the clock for grant expiry. Nil means time.Now.
	Now func() time.Time

	// Logger receives the hidden causes of internal errors raised while
	// verifying and authorizing. Nil discards them.
	Logger *slog.Logger
}

// errMalformedBearer refuses an Authorization header of the Bearer scheme
// that does not carry exactly one token.
var errMalformedBearer = agentcap.NewError(agentcap.CodeInvalidJWT, "the Authorization header must be Bearer followed by an agent JWT")

// New returns the auth.Verifier of a capability location for Agent Auth
// agents, which every transport takes (httpx.Config.Verifier,
// mcpx.Config.Verifier):
//
//   - It reads "Authorization: Bearer <agent JWT>" and verifies it with
//     Sessions, which records the token's jti: one token covers one
//     request, a whole batch included. No Authorization header, or one of
//     another scheme, is 401 authentication_required with the AgentAuth
//     challenge; a Bearer header without exactly one token is 401
//     invalid_jwt; the session source's refusals (invalid_jwt,
//     agent_revoked, host_pending, temporarily_unavailable, ...) pass
//     through.
//   - The identity of an agent has Subject and AgentID the agent's id,
//     HostID its host's, UserID the user it acts for (the agent's own
//     user, else its host's; none for an autonomous agent), and Claims
//     the *Session (see SessionOf). Its Authorizer runs, for every call,
//     Config.Authorize, then AuthorizeCall with the capability's required
//     constraints, the raw arguments and the decoded input (so that a
//     constrained field that decoding changed is caught); it reports
//     grant_status for listings, and rechecks the agent and host of a
//     long stream when Sessions is a SessionRechecker.
//   - The identity of a host JWT caller of list and describe (Config.Hosts)
//     has Subject "host:" and the host's id, HostID, UserID the host's
//     linked user (none while it is pending), and Claims the *Host (see
//     HostOf); it sees what that user may see, gets no grant_status, and
//     can never run a capability.
func New(cfg Config) (auth.Verifier, error) {
	if cfg.Sessions == nil {
		return nil, errors.New("agentauth: Config.Sessions is required")
	}
	challenge, err := discoveryChallenge(cfg.Issuer)
	if err != nil {
		return nil, err
	}
	l := &location{
		sessions:  cfg.Sessions,
		hosts:     cfg.Hosts,
		anonymous: cfg.AllowAnonymousDiscovery,
		authorize: cfg.Authorize,
		audience:  cfg.Audience,
		challenge: challenge,
		now:       cfg.Now,
		logger:    cfg.Logger,
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.logger == nil {
		l.logger = slog.New(slog.DiscardHandler)
	}
	return l, nil
}

// location is the verifier New returns.
type location struct {
	sessions  SessionSource
	hosts     HostSource
	anonymous bool
	authorize func(ctx context.Context, id *auth.Identity, call *auth.Call) error
	audience  func(capability string) string
	challenge string
	now       func() time.Time
	logger    *slog.Logger
}

// Challenge implements auth.Challenger: the AgentAuth discovery challenge.
func (l *location) Challenge() string { return l.challenge }

// Verify implements auth.Verifier.
func (l *location) Verify(ctx context.Context, req *auth.Request) (*auth.Identity, error) {
	token, ok := auth.BearerToken(req.Authorization)
	if !ok {
		if req.Discovery && l.anonymous {
			return nil, nil
		}
		return nil, auth.ErrNoCredentials
	}
	if token == "" {
		return nil, errMalformedBearer
	}
	if l.hosts != nil && req.Discovery && tokenType(token) == agentcap.TypeHostJWT {
		return l.hostIdentity(ctx, token)
	}
	s, err := l.sessions.Session(ctx, token)
	if err != nil {
		return nil, l.public(ctx, "verifying the agent JWT", err)
	}
	if s == nil || s.Agent == nil || s.Host == nil {
		return nil, l.public(ctx, "verifying the agent JWT", errors.New("agentauth: the session source returned an incomplete session"))
	}
	return l.agentIdentity(s), nil
}

// agentCaller is the identity of an agent and its authorizer, allocated
// together: one allocation per verified request.
type agentCaller struct {
	id     auth.Identity
	grants sessionGrants
}

// agentIdentity returns the identity of a verified session.
func (l *location) agentIdentity(s *Session) *auth.Identity {
	c := &agentCaller{}
	c.grants = sessionGrants{l: l, s: s, id: &c.id}
	c.id = auth.Identity{
		Subject:    s.Agent.ID,
		AgentID:    s.Agent.ID,
		HostID:     s.Host.ID,
		UserID:     ActsFor(s),
		Claims:     s,
		Authorizer: &c.grants,
		// An OAuth client's scopes are its agent's grants: it can ask
		// its user for more.
		ScopeChallenge: s.OAuthClient != "",
	}
	return &c.id
}

// ActsFor returns the user a session's agent acts for: the agent's own
// user, else its host's. An autonomous agent acts for no user, whatever
// its host is linked to.
func ActsFor(s *Session) string {
	if s == nil || s.Agent == nil || s.Agent.Mode == agentcap.ModeAutonomous {
		return ""
	}
	if s.Agent.UserID != "" {
		return s.Agent.UserID
	}
	if s.Host != nil {
		return s.Host.UserID
	}
	return ""
}

// hostIdentity verifies the host JWT of a list or describe request.
func (l *location) hostIdentity(ctx context.Context, token string) (*auth.Identity, error) {
	h, err := l.hosts.VerifyHost(ctx, token)
	if err != nil {
		return nil, l.public(ctx, "verifying the host JWT", err)
	}
	if h == nil {
		return nil, l.public(ctx, "verifying the host JWT", errors.New("agentauth: the host source returned no host"))
	}
	return &auth.Identity{Subject: "host:" + h.ID, HostID: h.ID, UserID: h.UserID, Claims: h, Authorizer: hostOnly{}}, nil
}

// SessionOf returns the Agent Auth session behind an identity that New
// (or a provider) verified, or nil for any other identity.
func SessionOf(id *auth.Identity) *Session {
	if id == nil {
		return nil
	}
	s, _ := id.Claims.(*Session)
	return s
}

// HostOf returns the host of a host JWT caller of list or describe, or nil
// for any other identity (an agent's host is SessionOf(id).Host).
func HostOf(id *auth.Identity) *Host {
	if id == nil {
		return nil
	}
	h, _ := id.Claims.(*Host)
	return h
}

// sessionGrants is the auth.Authorizer of an agent's identity.
type sessionGrants struct {
	l  *location
	s  *Session
	id *auth.Identity
}

var _ auth.JobAuthorizer = (*sessionGrants)(nil)

// Authorize implements auth.Authorizer.
func (g *sessionGrants) Authorize(ctx context.Context, call *auth.Call) error {
	if err := g.checkAudience(call.Capability); err != nil {
		return err
	}
	if g.l.authorize != nil {
		if err := g.l.authorize(ctx, g.id, call); err != nil {
			return err
		}
	}
	err := AuthorizeCall(g.s, call, g.l.now())
	if err != nil {
		// A grant that is broken on the server side is logged here: the
		// caller is told nothing of it.
		if e := agentcap.As(err); e != nil && e.HTTPStatus() >= 500 {
			g.l.logger.LogAttrs(ctx, slog.LevelError, "agentauth: authorizing a call failed",
				slog.String("capability", call.Capability), slog.String("agent", g.s.Agent.ID),
				slog.String("error", err.Error()))
		}
		return err
	}
	return nil
}

// AuthorizeJob implements auth.JobAuthorizer: the token must have been
// made for where capability executes (Config.Audience).
func (g *sessionGrants) AuthorizeJob(_ context.Context, capability string) error {
	return g.checkAudience(capability)
}

// checkAudience refuses a token whose aud is not Config.Audience's for
// capability.
func (g *sessionGrants) checkAudience(capability string) error {
	if g.l.audience == nil {
		return nil
	}
	want := g.l.audience(capability)
	if want == "" || slices.Contains(g.s.Claims.Audience, want) {
		return nil
	}
	return agentcap.NewError(agentcap.CodeInvalidJWT, "agent JWT audience is not this capability's location").
		WithCause(fmt.Errorf("aud %q, capability %s executes at %s", g.s.Claims.Audience, capability, want))
}

// GrantStatus implements auth.Authorizer.
func (g *sessionGrants) GrantStatus(capability string) string {
	return GrantStatus(g.s, capability, g.l.now())
}

// Recheck implements auth.Authorizer: the agent and host are read again
// when the session source can tell (a *Verifier can; remote introspection
// cannot without a token, so its streams end only at their maximum
// duration).
func (g *sessionGrants) Recheck(ctx context.Context) error {
	if rc, ok := g.l.sessions.(SessionRechecker); ok {
		return rc.Recheck(ctx, g.s)
	}
	return nil
}

// hostOnly is the auth.Authorizer of a host JWT caller, which lists and
// describes but never runs a capability.
type hostOnly struct{}

var errAgentRequired = agentcap.NewError(agentcap.CodeAuthenticationRequired, "an agent JWT is required to run a capability")

func (hostOnly) Authorize(context.Context, *auth.Call) error { return errAgentRequired }
func (hostOnly) GrantStatus(string) string                   { return "" }
func (hostOnly) Recheck(context.Context) error               { return nil }

// public returns err if it is safe to show (an *agentcap.Error), logging
// the hidden cause of a server-side failure; anything else is logged and
// replaced by a redacted internal error.
func (l *location) public(ctx context.Context, doing string, err error) error {
	if e := agentcap.As(err); e != nil {
		if e.HTTPStatus() >= 500 {
			l.logger.LogAttrs(ctx, slog.LevelError, "agentauth: "+doing+" failed",
				slog.String("code", string(e.Code)), slog.String("error", err.Error()))
		}
		return e
	}
	l.logger.LogAttrs(ctx, slog.LevelError, "agentauth: "+doing+" failed", slog.String("error", err.Error()))
	return agentcap.Internal(err)
}

// discoveryChallenge builds the WWW-Authenticate value that points an
// agent at the discovery document.
func discoveryChallenge(issuer string) (string, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return "", fmt.Errorf("agentauth: Config.Issuer: %w", err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return "", fmt.Errorf("agentauth: Config.Issuer %q must be an absolute http(s) URL without credentials", issuer)
	}
	origin := u.Scheme + "://" + u.Host
	// The origin is quoted in a header: nothing in it may end the quoted
	// string or the header.
	if strings.ContainsFunc(origin, func(r rune) bool { return r == '"' || r == '\\' || r < 0x21 || r == 0x7f }) {
		return "", fmt.Errorf("agentauth: Config.Issuer %q has a character that cannot appear in a challenge", issuer)
	}
	return `AgentAuth discovery="` + origin + agentcap.DiscoveryPath + `"`, nil
}
