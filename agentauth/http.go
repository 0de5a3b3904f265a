package agentauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

// Caller is the principal of an Agent Auth request: the verified session
// and the application's principal mapped from it. Session is nil for an
// anonymous caller of list or describe (see
// HTTPOptions.AllowAnonymousDiscovery); the zero Caller is that caller.
// A caller of list or describe that sent a host JWT (see HTTPOptions.Hosts)
// has Host set and Session nil: it sees what the host's user may see,
// without grant_status, and can never execute.
type Caller[P any] struct {
	Session *Session
	// Host is the verified host of a host JWT caller of list or describe;
	// nil otherwise (an agent's host is Session.Host).
	Host      *Host
	Principal P

	executing bool
}

// Executing reports whether the caller is executing capabilities (execute
// or batch-execute) rather than listing or describing them.
//
// httpx answers an execute of a capability the caller may not see exactly
// like an unknown one (404 capability_not_found), before any authorizer
// runs. A visibility predicate that keeps a capability out of some
// callers' listings, yet wants those callers to get a precise refusal
// (403 unauthorized, say) when they call it anyway, admits them while
// they execute.
func (c Caller[P]) Executing() bool { return c.executing }

// HTTPOptions configures HTTPConfig. P is the application's principal type.
type HTTPOptions[P any] struct {
	// Sessions verifies bearer tokens: a *Verifier, an
	// *IntrospectionSource or any other SessionSource. Required.
	Sessions SessionSource

	// Principal maps a verified session to the application's principal,
	// for example by loading the user the agent acts for. Its errors reach
	// the caller only when they are (or wrap) a *core.AppError; any other
	// error is answered 500 internal_error and logged. Nil means the zero
	// P for every session: the application then works from the session
	// alone.
	Principal func(ctx context.Context, s *Session) (P, error)

	// Authorize, when set, runs for every execute and batch item before
	// the token's capabilities claim and the agent's grants are checked,
	// with the decoded input. It holds the application's own
	// refusals that do not depend on grants (a capability that needs a
	// user refuses an autonomous agent, say), so that they win over
	// capability_not_granted. A *core.AppError answers in its own words;
	// any other error is 403 unauthorized.
	Authorize func(ctx context.Context, c Caller[P], inv *core.Invocation) error

	// Issuer is the issuer URL. The 401 challenge is
	// AgentAuth discovery="<issuer origin>/.well-known/agent-configuration".
	// Required: an absolute http or https URL.
	Issuer string

	// Hosts, when set, lets list and describe run with a host JWT
	// (protocol §5.2: "capabilities available to the host's linked
	// user", used before an agent exists): a Bearer token whose typ is
	// host+jwt is verified by Hosts, and the Caller carries the host. A
	// HostVerifier serves a resource server trusting a Directory;
	// provider.HTTPConfig sets the provider's own. Execute and batch never
	// accept a host JWT. Nil answers a host JWT 401 invalid_jwt, as
	// before.
	Hosts HostSource

	// HostPrincipal maps a host JWT caller's host to the application's
	// principal (for example the host's linked user), which visibility
	// predicates then see. Nil means the zero P, so that a host caller
	// sees what an anonymous caller sees.
	HostPrincipal func(ctx context.Context, h *Host) (P, error)

	// AllowAnonymousDiscovery lets list and describe run without a token,
	// with the zero Caller: only capabilities whose visibility admits it
	// are shown, without grant_status. Execute always needs a token.
	AllowAnonymousDiscovery bool

	// Now is the clock for grant expiry. Nil means time.Now.
	Now func() time.Time

	// Logger receives the hidden causes of internal errors raised while
	// authenticating and authorizing. Nil discards them.
	Logger *slog.Logger
}

// DiscoveryPath is where a server publishes its discovery document,
// relative to the issuer's origin.
const DiscoveryPath = "/.well-known/agent-configuration"

// Public messages of HTTPConfig.
const (
	msgMalformedBearer = "the Authorization header must be Bearer followed by an agent JWT"
	msgNoSession       = "authentication is required"
)

// HTTPConfig returns an httpx.Config wired for Agent Auth:
//
//   - Authenticate reads "Authorization: Bearer <agent JWT>", verifies it
//     with Sessions (which records the token's jti, so one token covers
//     one HTTP request, a whole batch included) and maps the session with
//     Principal. No Authorization header, or one with another scheme, is
//     401 authentication_required with the AgentAuth challenge; a Bearer
//     header without exactly one token is 401 invalid_jwt; the session
//     source's *core.AppError codes (invalid_jwt, agent_revoked,
//     host_pending, ...) pass through.
//   - Authorize runs, for every execute and every batch item, the
//     optional HTTPOptions.Authorize, then AuthorizeCall with the
//     capability's required constraints, the raw arguments and the decoded
//     input (so a constrained field that decoding changed is caught).
//   - GrantStatus adds "granted" or "not_granted" to list and describe
//     entries of agent callers.
//   - LongRunning.Owner is the agent id, so that a job is polled and
//     cancelled by its agent only (with a fresh agent JWT per request;
//     another agent gets 404) and idempotency keys are per agent;
//     LongRunning.Recheck ends an open stream with an error event when its
//     agent or host is revoked, if Sessions is a SessionRechecker.
//     Set LongRunning.Jobs, BaseURL and Idempotency on the returned
//     Config to serve jobs and idempotency keys.
//
// The returned Config may be adjusted (body limits, list sizes) before it
// is given to httpx.New.
func HTTPConfig[P any](o HTTPOptions[P]) (httpx.Config[Caller[P]], error) {
	if o.Sessions == nil {
		return httpx.Config[Caller[P]]{}, errors.New("agentauth: HTTPOptions.Sessions is required")
	}
	challenge, err := discoveryChallenge(o.Issuer)
	if err != nil {
		return httpx.Config[Caller[P]]{}, err
	}
	a := &httpAuth[P]{
		sessions:      o.Sessions,
		hosts:         o.Hosts,
		hostPrincipal: o.HostPrincipal,
		principal:     o.Principal,
		authorize:     o.Authorize,
		now:           o.Now,
		logger:        o.Logger,
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.logger == nil {
		a.logger = slog.New(slog.DiscardHandler)
	}
	return httpx.Config[Caller[P]]{
		Authenticate:            a.authenticate,
		Challenge:               challenge,
		AllowAnonymousDiscovery: o.AllowAnonymousDiscovery,
		Authorize:               a.authorizeCall,
		GrantStatus:             a.grantStatus,
		Logger:                  o.Logger,
		LongRunning: httpx.LongRunning[Caller[P]]{
			Owner:   callerOwner[P],
			Recheck: a.recheck,
		},
	}, nil
}

// callerOwner scopes jobs and idempotency keys to the agent: a job's
// status_url answers only that agent, with any fresh token of its own.
func callerOwner[P any](c Caller[P]) string {
	if c.Session == nil || c.Session.Agent == nil {
		return ""
	}
	return c.Session.Agent.ID
}

// recheck ends a long stream once its agent or host may no longer act,
// when the session source can tell (a *Verifier can; remote
// introspection cannot without a token, so its streams end only at their
// maximum duration).
func (a *httpAuth[P]) recheck(ctx context.Context, c Caller[P]) error {
	rc, ok := a.sessions.(SessionRechecker)
	if !ok || c.Session == nil {
		return nil
	}
	return rc.Recheck(ctx, c.Session)
}

// discoveryChallenge builds the WWW-Authenticate value that points an
// agent at the discovery document.
func discoveryChallenge(issuer string) (string, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return "", fmt.Errorf("agentauth: HTTPOptions.Issuer: %w", err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return "", fmt.Errorf("agentauth: HTTPOptions.Issuer %q must be an absolute http(s) URL without credentials", issuer)
	}
	origin := u.Scheme + "://" + u.Host
	// The origin is quoted in a header: nothing in it may end the quoted
	// string or the header.
	if strings.ContainsFunc(origin, func(r rune) bool { return r == '"' || r == '\\' || r < 0x21 || r == 0x7f }) {
		return "", fmt.Errorf("agentauth: HTTPOptions.Issuer %q has a character that cannot appear in a challenge", issuer)
	}
	return `AgentAuth discovery="` + origin + DiscoveryPath + `"`, nil
}

// httpAuth holds what the httpx callbacks share.
type httpAuth[P any] struct {
	sessions      SessionSource
	hosts         HostSource
	hostPrincipal func(ctx context.Context, h *Host) (P, error)
	principal     func(ctx context.Context, s *Session) (P, error)
	authorize     func(ctx context.Context, c Caller[P], inv *core.Invocation) error
	now           func() time.Time
	logger        *slog.Logger
}

func (a *httpAuth[P]) authenticate(ctx context.Context, req *httpx.Request) (Caller[P], error) {
	var zero Caller[P]
	var header string
	if req.Header != nil {
		header = req.Header("Authorization")
	}
	token, err := BearerToken(header)
	if err != nil {
		return zero, err
	}
	if a.hosts != nil && isDiscoveryRoute(req.Path) && TokenType(token) == TypeHostJWT {
		return a.authenticateHost(ctx, token)
	}
	s, err := a.sessions.Session(ctx, token)
	if err != nil {
		return zero, a.public(ctx, "verifying the agent JWT", err)
	}
	if s == nil || s.Agent == nil || s.Host == nil {
		return zero, a.public(ctx, "verifying the agent JWT", errors.New("agentauth: the session source returned an incomplete session"))
	}
	c := Caller[P]{Session: s, executing: isExecuteRoute(req.Path)}
	if a.principal != nil {
		if c.Principal, err = a.principal(ctx, s); err != nil {
			return zero, a.public(ctx, "mapping the session to a principal", err)
		}
	}
	return c, nil
}

// authenticateHost verifies the host JWT of a list or describe request.
func (a *httpAuth[P]) authenticateHost(ctx context.Context, token string) (Caller[P], error) {
	var zero Caller[P]
	h, err := a.hosts.VerifyHost(ctx, token)
	if err != nil {
		return zero, a.public(ctx, "verifying the host JWT", err)
	}
	if h == nil {
		return zero, a.public(ctx, "verifying the host JWT", errors.New("agentauth: the host source returned no host"))
	}
	c := Caller[P]{Host: h}
	if a.hostPrincipal != nil {
		if c.Principal, err = a.hostPrincipal(ctx, h); err != nil {
			return zero, a.public(ctx, "mapping the host to a principal", err)
		}
	}
	return c, nil
}

func isDiscoveryRoute(path string) bool {
	p := strings.TrimPrefix(path, "/")
	return p == httpx.RouteList || p == httpx.RouteDescribe
}

func isExecuteRoute(path string) bool {
	p := strings.TrimPrefix(path, "/")
	return p == httpx.RouteExecute || p == httpx.RouteBatch
}

// BearerToken extracts the token of an Authorization header value. An
// empty value, or one with another scheme than Bearer (compared without
// regard to case), wraps httpx.ErrNoCredentials: as RFC 6750 advises, a
// client that used another method is told that authentication is required
// rather than that its token is bad. A Bearer value that does not carry
// exactly one token is a 401 invalid_jwt *core.AppError.
func BearerToken(header string) (string, error) {
	header = strings.Trim(header, " \t")
	if header == "" {
		return "", fmt.Errorf("agentauth: no Authorization header: %w", httpx.ErrNoCredentials)
	}
	scheme, rest, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("agentauth: Authorization scheme is not Bearer: %w", httpx.ErrNoCredentials)
	}
	token := strings.Trim(rest, " \t")
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", core.NewAppError(http.StatusUnauthorized, CodeInvalidJWT, msgMalformedBearer)
	}
	return token, nil
}

// public returns err if it is safe to show (a *core.AppError, or one of
// the httpx sentinels), logging the hidden cause of a server-side
// failure; anything else is logged and replaced by a redacted 500.
func (a *httpAuth[P]) public(ctx context.Context, doing string, err error) error {
	var ae *core.AppError
	if errors.As(err, &ae) {
		if ae.HTTPStatus() >= 500 {
			a.logger.LogAttrs(ctx, slog.LevelError, "agentauth: "+doing+" failed",
				slog.String("code", ae.WireCode()), slog.String("error", err.Error()))
		}
		return err
	}
	a.logger.LogAttrs(ctx, slog.LevelError, "agentauth: "+doing+" failed",
		slog.String("error", err.Error()))
	return core.NewAppError(http.StatusInternalServerError, CodeInternalError, msgInternal).WithCause(err)
}

func (a *httpAuth[P]) authorizeCall(ctx context.Context, c Caller[P], inv *core.Invocation) error {
	if c.Session == nil {
		// httpx never executes for an anonymous caller; a typed caller
		// that tries is refused the same way.
		return core.NewAppError(http.StatusUnauthorized, CodeAuthenticationRequired, msgNoSession)
	}
	if a.authorize != nil {
		if err := a.authorize(ctx, c, inv); err != nil {
			return err
		}
	}
	err := AuthorizeCall(c.Session, Call{
		Capability:          inv.Definition.Name(),
		RequiredConstraints: inv.Definition.RequiredConstraints(),
		Units:               inv.Definition.Units(),
		Arguments:           inv.Arguments,
		Normalized:          inv.Normalized,
	}, a.now())
	if err != nil {
		// Application errors stay out of httpx's error log, so a grant
		// that is broken on the server side is logged here.
		var ae *core.AppError
		if errors.As(err, &ae) && ae.Status >= 500 {
			a.logger.LogAttrs(ctx, slog.LevelError, "agentauth: authorizing a call failed",
				slog.String("capability", inv.Definition.Name()), slog.String("agent", c.Session.Agent.ID),
				slog.String("error", err.Error()))
		}
		return err
	}
	return nil
}

func (a *httpAuth[P]) grantStatus(_ context.Context, c Caller[P], def *core.Definition) string {
	if c.Session == nil {
		return ""
	}
	return GrantStatus(c.Session, def.Name(), a.now())
}
