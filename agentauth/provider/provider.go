package provider

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/internal/remotekeys"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/sqlstore"
)

// Paths of the provider endpoints, relative to the issuer, as the
// discovery document advertises them.
const (
	PathRegister          = "/agent/register"
	PathStatus            = "/agent/status"
	PathRequestCapability = "/agent/request-capability"
	PathRevoke            = "/agent/revoke"
	PathReactivate        = "/agent/reactivate"
	PathRotateKey         = "/agent/rotate-key"
	PathIntrospect        = "/agent/introspect"
	PathRevokeHost        = "/host/revoke"
	PathRotateHostKey     = "/host/rotate-key"
	// PathApprovalPoll is the RFC 8628 style polling endpoint, an
	// addition to the protocol's endpoints: a host JWT and {"agent_id"}
	// give authorization_pending, slow_down, access_denied or
	// expired_token until the agent's approval is decided, then its
	// status.
	PathApprovalPoll = "/agent/approval/poll"
	// PathApprove is where the approval page is served by default,
	// relative to the issuer.
	PathApprove = "/approve"
)

// Defaults of Config.
const (
	DefaultApprovalLifetime = 10 * time.Minute
	defaultPollInterval     = 5 * time.Second
	// defaultFreshAuth is how recently the approving user must have
	// signed in (protocol §8.11: a long-lived session is not enough).
	defaultFreshAuth = 10 * time.Minute
	// DefaultTouchInterval is Config.TouchInterval when it is zero.
	DefaultTouchInterval = time.Second
	// defaultMaxPendingAgents is Config.MaxPendingAgents when it is zero.
	defaultMaxPendingAgents = 20
)

// Config configures a Provider. Issuer, ProviderName, Registry and Store
// (or Database) are required; every other field has a safe default.
type Config struct {
	// Issuer is the provider's base URL: an absolute http(s) URL without
	// query, fragment or trailing slash. Endpoints are served under its
	// path, and host JWTs must have it as aud.
	Issuer string
	// ProviderName and Description are published in discovery.
	ProviderName string
	Description  string

	// Store keeps hosts, agents, grants and approvals.
	Store store.Store
	// Database, when Store is nil, is where New opens the store (the
	// provider's records of a sqlstore.DB, whose migrations create every
	// store's tables there): a SQLite file name, or a PostgreSQL URL
	// (postgres:// or postgresql://). The Provider owns that database:
	// Close closes it.
	Database string
	// Registry lists the capabilities agents may request. Their approval
	// strength, location, description and schemas come from it.
	Registry *core.Registry
	// Modes are the agent modes accepted; empty means both.
	Modes []string
	// Policy decides what is approved without a user.
	Policy Policy
	// Lifetimes are the lifetime clocks applied to agents.
	Lifetimes store.Policy
	// TouchInterval is how often, at most, an agent's authenticated
	// requests are recorded on it (store.Store.TouchAgent: its last use,
	// which extends its session). A request of an agent whose last use
	// was recorded less than TouchInterval before is not recorded when
	// the agent, as the verifier has just read it, is active and not
	// lapsed under Lifetimes at the provider's clock; an agent that has
	// lapsed is still expired or revoked by the request, exactly as
	// with every request recorded. The trade-off: the idle clock
	// (Lifetimes.SessionTTL) runs from a recorded last use up to
	// TouchInterval older than the true one, so an idle agent expires
	// up to TouchInterval sooner, never later; the other clocks do not
	// depend on the last use. Zero means DefaultTouchInterval; a
	// negative interval records every request.
	TouchInterval time.Duration

	// MaxPendingAgents bounds the agents of one host that wait for
	// approval at once: a registration of another is refused with 429
	// rate_limited until one of them is decided or cleaned up. Each
	// pending agent is a record, an approval request and, for a JWKS
	// agent, a URL the host chose. Zero means 20.
	MaxPendingAgents int

	// VerificationURI is where users approve: the approval page. Empty
	// means Issuer + PathApprove.
	VerificationURI string
	// ApprovalLifetime bounds an approval request; zero means
	// DefaultApprovalLifetime.
	ApprovalLifetime time.Duration
	// PollInterval is the interval clients are told to poll at, in whole
	// seconds; zero means 5 s. A poll sooner than half of
	// it, while approval is pending, is answered slow_down: the half
	// forgives clients whose timers fire a little early.
	PollInterval time.Duration

	// SignedInUser returns the user signed in to the approval page, or
	// nil when nobody is. The application owns sign-in; the page only
	// asks. An error is answered 500.
	SignedInUser func(r *http.Request) (*User, error)
	// FreshAuth is how recently the user must have signed in to approve;
	// zero means 10 minutes.
	FreshAuth time.Duration
	// SignInURL is where the approval page sends a user who is not
	// signed in (or not recently enough), with the page's URL in the
	// query parameter "next". Empty means the page says so instead.
	SignInURL string
	// PresenceCheck verifies the extra confirmation that a capability of
	// approval strength webauthn, or a call a person must confirm,
	// needs (protocol §8.10-8.11). Nil means the provider's own step: a
	// WebAuthn assertion with user verification from one of the user's
	// passkeys, over a challenge bound to the decision being made
	// (docs/presence.md). Users register passkeys on "Your agents", or
	// when first asked. Passkeys need the approval page on a host name
	// (browsers refuse WebAuthn on an IP address such as 127.0.0.1):
	// served on one, the step fails unless DevPresenceCode is set.
	PresenceCheck func(r *http.Request, u *User, a *Approval) error
	// DevPresenceCode turns on a development stand-in for the presence
	// step, beside passkeys: the user types the request's code again.
	// It proves nothing (the agent that showed the code can type it, in
	// a browser it drives), the page says so, and it is refused unless
	// set. For development and automated tests only.
	DevPresenceCode bool
	// PageSecret keys the approval page's CSRF tokens. Nil means 32
	// random bytes drawn at New: tokens then die with the process, which
	// is fine for one instance; several instances need a shared secret.
	PageSecret []byte

	// Notifier, when set, reaches users for CIBA approvals (protocol
	// §7.2): discovery then offers "ciba" beside device_authorization,
	// and Policy.ApprovalMethod chooses between them per request. Nil
	// offers device authorization only.
	Notifier Notifier
	// NotifyTimeout bounds one Notify call; zero means 30 s.
	NotifyTimeout time.Duration
	// ResolveLoginHint maps a client's login_hint (protocol §5.3) to a
	// user id, "" for none, for CIBA requests of hosts not yet linked to
	// a user. The answer to the client does not depend on it (CIBA Core
	// §14: a hint that names nobody is answered alike, and the request
	// then waits for no one). An error is answered 500. Nil ignores
	// login hints.
	ResolveLoginHint func(ctx context.Context, hint string) (userID string, err error)

	// OnClaim, when set, is told of autonomous agents claimed because
	// their host became linked to a user (protocol §2.10), after the
	// claim, so that the application moves what they own to the user. Its
	// error is logged; the claim stands.
	OnClaim func(ctx context.Context, c Claim) error

	// IntrospectionAuth authenticates callers of the introspection
	// endpoint (protocol §5.12); see BearerCredential. Nil leaves the
	// endpoint open, rate limited per client address.
	IntrospectionAuth func(r *http.Request) bool

	// RateLimits are the request limits of protocol §8.13.
	RateLimits RateLimits

	// Replay records host and agent JWT ids. Nil means an in-memory cache;
	// several instances must share one (package redisstore).
	Replay agentauth.ReplayCache
	// Skew is the clock skew tolerated on iat (exp gets none, as in
	// agentauth.Verifier); zero means agentauth.DefaultSkew.
	Skew time.Duration
	// KeyFetch is the policy for fetching host and agent JWKS URLs.
	KeyFetch agentauth.FetchPolicy
	// Endpoints lists further absolute URLs where the Registry's
	// capabilities are served by another transport, such as an MCP
	// endpoint: agent JWTs may name them as aud, for EndpointVerifier.
	Endpoints []string

	// Audit, when set, receives a record of every registration (of a
	// host and of an agent), approval decision, grant change,
	// reactivation, revocation (of an agent or a host, by itself or by
	// its user), key rotation and claim, with the request's id and client
	// address (see docs/audit.md). A record that cannot be written is
	// logged; the change stands. Nil keeps no trail.
	Audit audit.Sink
	// Activity is the trail the "Activity" page and GET /user/activity
	// read for the signed-in user: usually the store Audit writes to,
	// directly or through audit.Tee, which the executor's records go to
	// as well. Nil means Audit when that is an audit.Store; without one,
	// neither is served.
	Activity audit.Store

	// Confirmer issues the confirmation tokens of calls that a person
	// confirmed: the Confirmer of the executor serving the Registry, over
	// the same store. Setting it makes the provider ask people to confirm
	// calls (see HumanConfirmer) and serves PathConfirmation.
	Confirmer core.Confirmer

	// Authorize, when set, runs for every call at the provider's
	// capability locations, after the token's audience and the
	// capability's rate limit are checked and before the agent's grants:
	// the application's own refusals that do not depend on grants (a
	// capability that acts for a user refuses an autonomous agent, say),
	// as agentauth.Config.Authorize.
	Authorize func(ctx context.Context, id *auth.Identity, call *auth.Call) error
	// AllowAnonymousDiscovery lets list and describe at the provider's
	// capability locations run without a token, as the nil identity (see
	// agentauth.Config.AllowAnonymousDiscovery).
	AllowAnonymousDiscovery bool

	// OAuth configures the OAuth 2.1 authorization server of the
	// provider's MCP endpoints (Config.Endpoints): MCP hosts that speak
	// the MCP authorization specification connect with a user's consent
	// per capability, and their calls run under the same grants,
	// constraints, confirmations and audit as an Agent Auth agent's (see
	// docs/oauth.md). The zero value serves none.
	OAuth OAuthConfig

	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand is the source of ids and codes; nil means crypto/rand.
	Rand io.Reader
	// Logger receives the causes of internal errors; nil discards them.
	Logger *slog.Logger
}

// Provider is an Agent Auth provider: discovery, registration, status,
// capability requests, approval, revocation, reactivation, key rotation
// and introspection, over a Store. It is an http.Handler for those
// endpoints (see Handler for the whole site), safe for concurrent use.
type Provider struct {
	issuer          string
	basePath        string
	origin          string
	defaultLocation string
	providerName    string
	description     string
	store           store.Store
	reg             *core.Registry
	modes           []string
	policy          Policy
	lifetimes       store.Policy
	touchInterval   time.Duration
	maxPending      int
	verificationURI string
	approvalLife    time.Duration
	pollInterval    time.Duration
	signedInUser    func(r *http.Request) (*User, error)
	freshAuth       time.Duration
	signInURL       string
	presence        func(r *http.Request, u *User, a *Approval) error
	devPresenceCode bool
	// webauthn is the relying party of the passkeys; nil, with
	// passkeysOff saying why, where the pages cannot use them.
	webauthn       *webauthn.WebAuthn
	passkeysOff    string
	pageSecret     []byte
	introspectAuth func(r *http.Request) bool
	onClaim        func(ctx context.Context, c Claim) error
	notifier       Notifier
	notifyTimeout  time.Duration
	resolveHint    func(ctx context.Context, hint string) (string, error)
	notifying      sync.WaitGroup
	notifySlots    chan struct{} // one per Notify call under way
	limits         *limits
	replay         agentauth.ReplayCache
	skew, maxAge   time.Duration
	verifier       *agentauth.Verifier
	keys           remotekeys.Cache // the verifier's remote key sets
	endpoints      []string
	clientSet      *oauthClientSet // the OAuth clients (oauthclient.go)
	oauth          oauthSettings
	discovery      *agentauth.DiscoveryEndpoint
	challenge      string
	now            func() time.Time
	rand           io.Reader
	logger         *slog.Logger
	confirmer      core.Confirmer
	authorize      func(ctx context.Context, id *auth.Identity, call *auth.Call) error
	anonymous      bool
	location       auth.Verifier
	// owned is the database New opened for Config.Database.
	owned    *sqlstore.DB
	routes   map[string]route
	audit    audit.Sink
	activity audit.Store
}

type route struct {
	method string
	serve  func(p *Provider, w http.ResponseWriter, r *http.Request) error
}

// New checks cfg and returns a Provider. With Config.Database instead of
// Config.Store it opens the store first (and closes it again when cfg is
// refused).
func New(cfg Config) (*Provider, error) {
	if cfg.Store != nil || cfg.Database == "" {
		return newProvider(cfg)
	}
	db, err := openDatabase(context.Background(), cfg.Database)
	if err != nil {
		return nil, err
	}
	cfg.Store = db.Provider()
	p, err := newProvider(cfg)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	p.owned = db
	return p, nil
}

// openDatabase opens the database Config.Database names.
func openDatabase(ctx context.Context, database string) (*sqlstore.DB, error) {
	if strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://") {
		return sqlstore.OpenPostgres(ctx, database)
	}
	return sqlstore.OpenSQLite(ctx, database)
}

// Close closes the database New opened for Config.Database; it does nothing
// for a Config.Store, which stays the application's.
func (p *Provider) Close() error {
	if p.owned == nil {
		return nil
	}
	return p.owned.Close()
}

func newProvider(cfg Config) (*Provider, error) {
	iss, err := url.Parse(cfg.Issuer)
	switch {
	case err != nil:
		return nil, fmt.Errorf("provider: Config.Issuer: %w", err)
	case (iss.Scheme != "http" && iss.Scheme != "https") || iss.Host == "" || iss.User != nil || iss.RawQuery != "" || iss.Fragment != "" || strings.HasSuffix(cfg.Issuer, "/"):
		return nil, fmt.Errorf("provider: Config.Issuer %q must be an absolute http(s) URL without credentials, query, fragment or trailing slash", cfg.Issuer)
	case cfg.Store == nil:
		return nil, errors.New("provider: Config.Store or Config.Database is required")
	case cfg.Registry == nil:
		return nil, errors.New("provider: Config.Registry is required")
	case strings.TrimSpace(cfg.ProviderName) == "":
		return nil, errors.New("provider: Config.ProviderName is required")
	}
	p := &Provider{
		issuer:          cfg.Issuer,
		basePath:        iss.EscapedPath(),
		origin:          iss.Scheme + "://" + iss.Host,
		defaultLocation: cfg.Issuer + "/" + agentcap.RouteExecute,
		providerName:    cfg.ProviderName,
		description:     cfg.Description,
		store:           cfg.Store,
		reg:             cfg.Registry,
		modes:           slices.Clone(cfg.Modes),
		policy:          cfg.Policy,
		lifetimes:       cfg.Lifetimes,
		touchInterval:   cfg.TouchInterval,
		maxPending:      cfg.MaxPendingAgents,
		verificationURI: cfg.VerificationURI,
		approvalLife:    cfg.ApprovalLifetime,
		pollInterval:    cfg.PollInterval,
		signedInUser:    cfg.SignedInUser,
		freshAuth:       cfg.FreshAuth,
		signInURL:       cfg.SignInURL,
		presence:        cfg.PresenceCheck,
		devPresenceCode: cfg.DevPresenceCode,
		pageSecret:      slices.Clone(cfg.PageSecret),
		introspectAuth:  cfg.IntrospectionAuth,
		onClaim:         cfg.OnClaim,
		notifier:        cfg.Notifier,
		notifyTimeout:   cfg.NotifyTimeout,
		resolveHint:     cfg.ResolveLoginHint,
		replay:          cfg.Replay,
		skew:            cfg.Skew,
		maxAge:          agentauth.DefaultMaxAge,
		now:             cfg.Now,
		rand:            cfg.Rand,
		logger:          cfg.Logger,
		audit:           cfg.Audit,
		activity:        cfg.Activity,
		confirmer:       cfg.Confirmer,
		authorize:       cfg.Authorize,
		anonymous:       cfg.AllowAnonymousDiscovery,
	}
	if s, ok := cfg.Audit.(audit.Store); ok && p.activity == nil {
		p.activity = s
	}
	if len(p.modes) == 0 {
		p.modes = []string{agentcap.ModeDelegated, agentcap.ModeAutonomous}
	}
	for _, m := range p.modes {
		if m != agentcap.ModeDelegated && m != agentcap.ModeAutonomous {
			return nil, fmt.Errorf("provider: Config.Modes: unknown mode %q", m)
		}
	}
	if p.verificationURI == "" {
		p.verificationURI = p.issuer + PathApprove
	} else if u, err := url.Parse(p.verificationURI); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("provider: Config.VerificationURI %q must be an absolute http(s) URL without query", p.verificationURI)
	}
	p.webauthn, p.passkeysOff = newWebAuthn(p.verificationURI, p.origin, p.providerName)
	if p.approvalLife <= 0 {
		p.approvalLife = DefaultApprovalLifetime
	}
	switch {
	case p.pollInterval == 0:
		p.pollInterval = defaultPollInterval
	case p.pollInterval < time.Second || p.pollInterval%time.Second != 0:
		return nil, fmt.Errorf("provider: Config.PollInterval %v must be whole seconds", p.pollInterval)
	}
	if p.touchInterval == 0 {
		p.touchInterval = DefaultTouchInterval
	}
	switch {
	case p.maxPending == 0:
		p.maxPending = defaultMaxPendingAgents
	case p.maxPending < 0:
		return nil, fmt.Errorf("provider: Config.MaxPendingAgents %d is negative", p.maxPending)
	}
	if p.notifyTimeout <= 0 {
		p.notifyTimeout = defaultNotifyTimeout
	}
	p.notifySlots = make(chan struct{}, maxNotifying)
	if p.freshAuth <= 0 {
		p.freshAuth = defaultFreshAuth
	}
	switch {
	case p.skew == 0:
		p.skew = agentauth.DefaultSkew
	case p.skew < 0 || p.skew > agentauth.MaxSkew:
		return nil, fmt.Errorf("provider: Config.Skew %v must be in (0, %v]", p.skew, agentauth.MaxSkew)
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.rand == nil {
		p.rand = rand.Reader
	}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	if p.replay == nil {
		p.replay = agentauth.NewMemoryReplayCache(0).WithClock(p.now)
	}
	if len(p.pageSecret) == 0 {
		p.pageSecret = make([]byte, 32)
		if _, err := io.ReadFull(p.rand, p.pageSecret); err != nil {
			return nil, fmt.Errorf("provider: page secret: %w", err)
		}
	}
	if p.limits, err = newLimits(cfg.RateLimits, p.now); err != nil {
		return nil, err
	}
	audiences := []string{p.issuer, p.defaultLocation}
	for _, d := range p.reg.All() {
		if loc := d.Location(); loc != "" && !slices.Contains(audiences, loc) {
			audiences = append(audiences, loc)
		}
	}
	for _, e := range cfg.Endpoints {
		if err := checkEndpoint(e); err != nil {
			return nil, err
		}
		if !slices.Contains(audiences, e) {
			audiences = append(audiences, e)
		}
	}
	p.endpoints = slices.Clone(cfg.Endpoints)
	p.verifier, err = agentauth.NewVerifier(agentauth.VerifierConfig{
		Directory: directory{p},
		Audiences: audiences,
		Skew:      p.skew,
		Replay:    p.replay,
		KeyFetch:  cfg.KeyFetch,
		Now:       p.now,
		Admit:     p.admit,
	})
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	p.keys = remotekeys.Of(p.verifier)
	methods := p.methods()
	ep := agentauth.LocationEndpoints("/")
	ep.Register = PathRegister
	ep.Status = PathStatus
	ep.RequestCapability = PathRequestCapability
	ep.Revoke = PathRevoke
	ep.Reactivate = PathReactivate
	ep.RotateKey = PathRotateKey
	ep.RevokeHost = PathRevokeHost
	ep.RotateHostKey = PathRotateHostKey
	ep.Introspect = PathIntrospect
	p.discovery, err = agentauth.NewDiscoveryEndpoint(agentcap.Discovery{
		ProviderName:    p.providerName,
		Description:     p.description,
		Issuer:          p.issuer,
		DefaultLocation: p.defaultLocation,
		Modes:           p.modes,
		ApprovalMethods: methods,
		Endpoints:       ep,
	})
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	p.challenge = `AgentAuth discovery="` + p.origin + agentcap.DiscoveryPath + `"`
	if p.location, err = p.locationVerifier(sessionSource{p}, p.defaultWhere); err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	p.routes = map[string]route{
		PathRegister:          {http.MethodPost, (*Provider).register},
		PathStatus:            {http.MethodGet, (*Provider).status},
		PathRequestCapability: {http.MethodPost, (*Provider).requestCapability},
		PathRevoke:            {http.MethodPost, (*Provider).revoke},
		PathReactivate:        {http.MethodPost, (*Provider).reactivate},
		PathRotateKey:         {http.MethodPost, (*Provider).rotateKey},
		PathIntrospect:        {http.MethodPost, (*Provider).introspect},
		PathRevokeHost:        {http.MethodPost, (*Provider).revokeHost},
		PathRotateHostKey:     {http.MethodPost, (*Provider).rotateHostKey},
		PathApprovalPoll:      {http.MethodPost, (*Provider).approvalPoll},
	}
	if p.confirmer != nil {
		p.routes[PathConfirmation] = route{http.MethodGet, (*Provider).confirmationStatus}
	}
	// The OAuth authorization server's clients (oauthclient.go).
	if p.clientSet, err = newOAuthClientSet(cfg.OAuth); err != nil {
		return nil, err
	}
	if cfg.OAuth.Enabled && cfg.OAuth.DynamicRegistration {
		p.routes[pathOAuthRegister] = route{http.MethodPost, (*Provider).registerOAuthClient}
	}
	if err := p.setupOAuth(cfg.OAuth); err != nil {
		return nil, err
	}
	return p, nil
}

// Issuer returns the issuer URL.
func (p *Provider) Issuer() string { return p.issuer }

// DefaultLocation returns the URL of the default capability location,
// {issuer}/capability/execute: the aud of execution JWTs for capabilities
// without a location of their own.
func (p *Provider) DefaultLocation() string { return p.defaultLocation }

// VerificationURI returns the approval page's URL.
func (p *Provider) VerificationURI() string { return p.verificationURI }

// Discovery returns the discovery endpoint.
func (p *Provider) Discovery() *agentauth.DiscoveryEndpoint { return p.discovery }

// ServeHTTP serves the provider endpoints. The request path must be the
// full path, issuer path included: mount the Provider at the issuer's
// path without stripping it. Unknown paths are 404 not_found.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rel, ok := strings.CutPrefix(r.URL.Path, p.basePath)
	rt, known := p.routes[rel]
	if !ok || !known {
		p.writeError(w, r, agentcap.NewError(agentcap.CodeNotFound, "no such endpoint"))
		return
	}
	if r.Method != rt.method {
		w.Header().Set("Allow", rt.method)
		p.writeError(w, r, agentcap.NewError(agentcap.CodeMethodNotAllowed, "use "+rt.method+" for this endpoint"))
		return
	}
	r = p.withRequestInfo(w, r)
	if err := rt.serve(p, w, r); err != nil {
		p.writeError(w, r, err)
	}
}

// Handler returns the provider's whole site as one handler: the
// discovery document at {origin}/.well-known/agent-configuration (and at
// that path followed by the issuer's path), the provider endpoints under
// the issuer, the approval page at the verification URI's path, the
// "Your agents" page at {issuer}/agents and the user API under
// {issuer}/user/ when SignedInUser is set (and the "Activity" page at
// {issuer}/activity when there is an activity store), and, when
// location is not nil, the capability
// routes ({issuer}/capability/...) served by location with the issuer's
// path stripped, as an httpx handler expects. Other paths are 404.
func (p *Provider) Handler(location http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(agentcap.DiscoveryPath, p.discovery)
	if p.basePath != "" {
		mux.Handle(agentcap.DiscoveryPath+p.basePath, p.discovery)
	}
	for path := range p.routes {
		mux.Handle(p.basePath+path, p)
	}
	if p.signedInUser != nil {
		if u, err := url.Parse(p.verificationURI); err == nil && u.Scheme+"://"+u.Host == p.origin {
			mux.Handle(u.EscapedPath(), p.ApprovalPage())
		}
		mux.Handle(p.basePath+"/user/", p.UserAPI())
		mux.Handle(p.basePath+PathAgentsPage, p.AgentsPage())
		if p.activity != nil {
			mux.Handle(p.basePath+PathActivityPage, p.ActivityPage())
		}
	}
	if p.oauth.enabled {
		mux.HandleFunc(oauthMetadataPath, p.serveOAuthMetadata)
		if p.basePath != "" {
			mux.HandleFunc(oauthMetadataPath+p.basePath, p.serveOAuthMetadata)
		}
		for _, path := range []string{pathOAuthAuthorize, pathOAuthToken, pathOAuthRevoke} {
			mux.HandleFunc(p.basePath+path, p.serveOAuth)
		}
		mux.HandleFunc(p.basePath+pathOAuthConsent, p.serveOAuthConsent)
	}
	if location != nil {
		prefix := p.basePath + "/capability/"
		mux.Handle(prefix, http.StripPrefix(p.basePath, location))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		p.writeError(w, r, agentcap.NewError(agentcap.CodeNotFound, "no such endpoint"))
	})
	return p.limits.wrapIP(mux, p)
}

// newID returns prefix followed by 128 random bits in lower-case base32.
func (p *Provider) newID(prefix string) (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(p.rand, b[:]); err != nil {
		return "", fmt.Errorf("provider: random id: %w", err)
	}
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])), nil
}

// directory is the Store as the Verifier reads it, with agents seen at
// the provider's clock.
type directory struct{ p *Provider }

func (d directory) Host(ctx context.Context, id string) (*agentauth.Host, error) {
	if r, ok := ctx.Value(agentReadKey{}).(*agentRead); ok && r.host != nil && r.host.ID == id {
		// Read with the agent, a moment ago, in the same session check.
		h := r.host
		r.host = nil
		return h.DirectoryHost(), nil
	}
	h, err := d.p.store.GetHost(ctx, id)
	if err != nil {
		return nil, err
	}
	return h.DirectoryHost(), nil
}

func (d directory) Agent(ctx context.Context, id string) (*agentauth.Agent, error) {
	r, _ := ctx.Value(agentReadKey{}).(*agentRead)
	var (
		a   *store.Agent
		err error
	)
	if ah, ok := d.p.store.(store.AgentHostReader); ok && r != nil {
		// A session check reads the agent's host next: both at once.
		a, r.host, err = ah.GetAgentAndHost(ctx, id)
	} else {
		a, err = d.p.store.GetAgent(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	if r != nil {
		r.agent = a
	}
	return a.DirectoryAgent(d.p.now()), nil
}

// agentReadKey keys the *agentRead of a session check in its context.
type agentReadKey struct{}

// agentRead keeps the record the verifier read of a session's agent, so
// that the session check decides from it whether the request must be
// recorded on the agent, and, from a store that reads them together
// (store.AgentHostReader), the agent's host until the verifier asks for
// it. The verifier reads the agent, then its host, once each, in the
// goroutine of the session check.
type agentRead struct {
	agent *store.Agent
	host  *store.Host
	// admitted is whom the check's rate limits were counted for, by
	// admit.
	admitted admission
}

// Sweep applies the lifetime clocks and the pending cleanup of
// Config.Lifetimes at the provider's clock (see store.Store.Sweep).
func (p *Provider) Sweep(ctx context.Context) (store.SweepResult, error) {
	return p.store.Sweep(ctx, p.now(), p.lifetimes)
}

// RunSweeper calls Sweep every interval until ctx ends, logging
// failures; run it in a goroutine of its own. Between sweeps the
// directory view already treats agents past their deadline as expired,
// so the interval only bounds how long stale pending records linger.
func (p *Provider) RunSweeper(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := p.Sweep(ctx); err != nil && ctx.Err() == nil {
				p.logger.ErrorContext(ctx, "agentauth/provider: sweep", "error", err.Error())
			}
		}
	}
}
