package provider

import (
	"context"
	"crypto/ed25519"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/oauth2"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/auth"
)

// The authorization server's paths under the issuer, and the well-known
// path of its metadata (RFC 8414).
const (
	pathOAuthAuthorize = "/oauth/authorize"
	pathOAuthConsent   = "/oauth/consent"
	pathOAuthToken     = "/oauth/token"
	pathOAuthRevoke    = "/oauth/revoke"
	oauthMetadataPath  = "/.well-known/oauth-authorization-server"
)

// The prefixes of what the authorization server hands out. None can
// begin an agent JWT (whose first segment starts "eyJ"), so a token tells
// which reader it needs before any is tried.
const (
	accessTokenPrefix  = "oat_"
	refreshTokenPrefix = "ort_"
	codePrefix         = "oac_"
)

// anyScope stands for an authorization request that named no scope: the
// user chooses among every capability they may see.
const anyScope = "*"

// The lifetimes of an authorization request between its validation and
// the consent that ends it, and of an authorization code.
const (
	oauthRequestLife = 15 * time.Minute
	oauthCodeLife    = time.Minute
)

var (
	errSealInvalid = errors.New("provider: not a value this provider sealed")
	errSealExpired = errors.New("provider: the sealed value has expired")
)

// sealJSON seals v for label and subject (see seal) behind prefix.
func (p *Provider) sealJSON(prefix, label, subject string, v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return prefix + p.seal(label, subject, b), nil
}

// unsealJSON reads into v what sealJSON sealed behind prefix for label
// and subject at most life ago, and returns when it expires:
// errSealInvalid for anything else, errSealExpired once life has passed.
func (p *Provider) unsealJSON(prefix, label, subject, token string, life time.Duration, v any) (time.Time, error) {
	rest, ok := strings.CutPrefix(token, prefix)
	if !ok {
		return time.Time{}, errSealInvalid
	}
	b, issued, err := p.openSealed(label, subject, rest)
	if err != nil {
		return time.Time{}, errSealInvalid
	}
	expires := issued.Add(life)
	if now := p.now(); !now.Before(expires) || issued.After(now.Add(time.Minute)) {
		return expires, errSealExpired
	}
	if json.Unmarshal(b, v) != nil {
		return expires, errSealInvalid
	}
	return expires, nil
}

// oauthRequest is an authorization request that passed validation, on
// its way from the authorization endpoint through sign-in and consent.
type oauthRequest struct {
	Client    string   `json:"c"`
	Redirect  string   `json:"r"`
	State     string   `json:"s,omitempty"`
	Challenge string   `json:"p"`
	Resource  string   `json:"t"`
	Scopes    []string `json:"o,omitempty"`
	// Key, Agent and Approval are set once the consent step has found
	// or made the client's host (whose OAuthClient is Key, see
	// oauthClient.key) and agent, and asked the user.
	Key      string `json:"k,omitempty"`
	Agent    string `json:"a,omitempty"`
	Approval string `json:"q,omitempty"`
}

// oauthGrant is what a code, a refresh token or an access token carries:
// the agent it acts as, the client it was issued to and the resource it
// is good for; a code also its redirect URI and PKCE challenge, a code and
// a refresh token the nonce spent when they are used.
type oauthGrant struct {
	Agent  string `json:"a"`
	Client string `json:"c"`
	// Key is the client's key (oauthClient.key), which its agent's host
	// records; empty when it is Client.
	Key       string `json:"k,omitempty"`
	Resource  string `json:"t"`
	Redirect  string `json:"r,omitempty"`
	Challenge string `json:"p,omitempty"`
	Nonce     string `json:"n,omitempty"`
}

// clientKey is the key of the grant's client (see oauthClient.key).
func (g oauthGrant) clientKey() string {
	if g.Key != "" {
		return g.Key
	}
	return g.Client
}

// oauthServer is the authorization server's protocol machinery: the
// zitadel op package routes, decodes and answers the requests, and calls
// these methods, which hold the mapping to the provider's records.
type oauthServer struct {
	op.UnimplementedServer
	p *Provider
}

// newOAuthHandler returns the handler of the authorization, token and
// revocation endpoints, relative to the issuer's path.
func (p *Provider) newOAuthHandler() http.Handler {
	endpoints := op.Endpoints{
		Authorization: op.NewEndpoint(pathOAuthAuthorize),
		Token:         op.NewEndpoint(pathOAuthToken),
		Revocation:    op.NewEndpoint(pathOAuthRevoke),
	}
	return op.RegisterServer(&oauthServer{p: p}, endpoints)
}

// oauthOpClient is a client as the op package sees it: a public client
// (no secret, PKCE) with exact redirect URIs, loopback ones on any port.
type oauthOpClient struct{ c *oauthClient }

func (c oauthOpClient) GetID() string                       { return c.c.id }
func (c oauthOpClient) RedirectURIs() []string              { return c.c.redirectURIs }
func (c oauthOpClient) PostLogoutRedirectURIs() []string    { return nil }
func (c oauthOpClient) ApplicationType() op.ApplicationType { return op.ApplicationTypeNative }
func (c oauthOpClient) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodNone }
func (c oauthOpClient) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c oauthOpClient) LoginURL(string) string               { return "" }
func (c oauthOpClient) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeBearer }
func (c oauthOpClient) IDTokenLifetime() time.Duration       { return 0 }
func (c oauthOpClient) DevMode() bool                        { return false }
func (c oauthOpClient) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c oauthOpClient) ClockSkew() time.Duration             { return 0 }
func (c oauthOpClient) IsScopeAllowed(string) bool           { return true }
func (c oauthOpClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return nil
}
func (c oauthOpClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return nil
}
func (c oauthOpClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
}

// lookupClient finds a client for the op package: invalid_client (401 at
// the token endpoint) when there is none.
func (s *oauthServer) lookupClient(ctx context.Context, id string) (*oauthClient, error) {
	if id == "" {
		return nil, oidc.ErrInvalidRequest().WithDescription("client_id is missing")
	}
	c, err := s.p.oauthClient(ctx, id)
	if errors.Is(err, errUnknownClient) {
		return nil, op.NewStatusError(oidc.ErrInvalidClient().WithDescription("%s", err.Error()), http.StatusUnauthorized)
	}
	if err != nil {
		s.p.logger.ErrorContext(ctx, "agentauth/provider: OAuth client", "error", err.Error())
		return nil, oidc.ErrServerError().WithDescription("the client could not be looked up")
	}
	return c, nil
}

// VerifyAuthRequest finds the client of an authorization request; the
// op package then checks its redirect URI before anything else, so that
// every later refusal goes back to the client.
func (s *oauthServer) VerifyAuthRequest(ctx context.Context, r *op.Request[oidc.AuthRequest]) (*op.ClientRequest[oidc.AuthRequest], error) {
	c, err := s.lookupClient(ctx, r.Data.ClientID)
	if err != nil {
		return nil, err
	}
	// A fragment or credentials never belong in a redirect URI (RFC 6749
	// §3.1.2), so they are refused first, without a redirect.
	if r.Data.RedirectURI == "" {
		return &op.ClientRequest[oidc.AuthRequest]{Request: r, Client: oauthOpClient{c}}, nil
	}
	ru, err := url.Parse(r.Data.RedirectURI)
	if err != nil || ru.Fragment != "" || ru.User != nil || strings.Contains(r.Data.RedirectURI, "#") {
		return nil, oidc.ErrInvalidRequestRedirectURI().WithDescription("redirect_uri must not hold a fragment or credentials")
	}
	// The op package lets any loopback host, scheme and port stand in for
	// a registered loopback redirect as long as path and query match; only
	// the port may differ (RFC 8252 §7.3), so the rest is held here.
	if !slices.Contains(c.redirectURIs, r.Data.RedirectURI) && !loopbackPortVariant(c.redirectURIs, ru) {
		return nil, oidc.ErrInvalidRequestRedirectURI().WithDescription("redirect_uri is not one of the client's redirect URIs")
	}
	return &op.ClientRequest[oidc.AuthRequest]{Request: r, Client: oauthOpClient{c}}, nil
}

// loopbackPortVariant reports whether u is one of the registered
// redirect URIs on a loopback IP literal or localhost with another port:
// the scheme, host, path and query must be the registered ones.
func loopbackPortVariant(registered []string, u *url.URL) bool {
	host := u.Hostname()
	if host != "localhost" && !isLoopbackIP(host) {
		return false
	}
	for _, s := range registered {
		reg, err := url.Parse(s)
		if err == nil && reg.Scheme == u.Scheme && reg.Hostname() == host && reg.Opaque == "" && u.Opaque == "" &&
			reg.User == nil && reg.EscapedPath() == u.EscapedPath() && reg.RawQuery == u.RawQuery && reg.ForceQuery == u.ForceQuery {
			return true
		}
	}
	return false
}

// isLoopbackIP reports whether host is an IP literal of the loopback
// interface.
func isLoopbackIP(host string) bool {
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// Authorize checks what OAuth 2.1 and the MCP profile require beyond the
// op package's checks (PKCE with S256, a resource among the provider's
// MCP endpoints, scopes that name capabilities) and sends the user to the
// consent step with the request sealed.
func (s *oauthServer) Authorize(ctx context.Context, r *op.ClientRequest[oidc.AuthRequest]) (*op.Redirect, error) {
	p := s.p
	ar := r.Data
	switch {
	case ar.ResponseType != oidc.ResponseTypeCode:
		return nil, oidc.ErrInvalidRequest().WithDescription("only the code response type is supported")
	case ar.CodeChallenge == "":
		return nil, oidc.ErrInvalidRequest().WithDescription("PKCE is required: send code_challenge with code_challenge_method S256")
	case ar.CodeChallengeMethod != oidc.CodeChallengeMethodS256:
		return nil, oidc.ErrInvalidRequest().WithDescription("code_challenge_method must be S256")
	case !validChallenge(ar.CodeChallenge):
		return nil, oidc.ErrInvalidRequest().WithDescription("code_challenge must be the base64url SHA-256 of a verifier")
	}
	resources := r.Form["resource"]
	if len(resources) != 1 || !slices.Contains(p.endpoints, resources[0]) {
		return nil, oidc.ErrInvalidTarget().WithDescription("resource must name one of this server's MCP endpoints")
	}
	scopes, err := p.oauthScopes(ar.Scopes)
	if err != nil {
		return nil, err
	}
	rq := oauthRequest{
		Client:    r.Client.GetID(),
		Redirect:  ar.RedirectURI,
		State:     ar.State,
		Challenge: ar.CodeChallenge,
		Resource:  resources[0],
		Scopes:    scopes,
	}
	sealed, err := p.sealJSON("", "oauth-request", "", rq)
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	return op.NewRedirect(p.issuer + pathOAuthConsent + "?request=" + url.QueryEscape(sealed)), nil
}

// validChallenge reports an S256 code challenge: 43 base64url characters.
func validChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil
}

// oauthScopes checks the scopes of a request: capability names of the
// Registry. anyScope alone (see serveOAuth) lets the user choose.
func (p *Provider) oauthScopes(scopes []string) ([]string, error) {
	if len(scopes) == 1 && scopes[0] == anyScope {
		return nil, nil
	}
	out := make([]string, 0, len(scopes))
	for _, sc := range scopes {
		if _, ok := p.reg.Lookup(sc); !ok {
			return nil, oidc.ErrInvalidScope().WithDescription("%.60q is not a capability of this server", sc)
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out, nil
}

// VerifyClient authenticates the client of a token or revocation
// request: every client is public, so it only names itself; a client
// that sends a secret or an assertion is refused.
func (s *oauthServer) VerifyClient(ctx context.Context, r *op.Request[op.ClientCredentials]) (op.Client, error) {
	if r.Data.ClientSecret != "" || r.Data.ClientAssertion != "" {
		return nil, op.NewStatusError(oidc.ErrInvalidClient().WithDescription("clients of this server are public: send no secret"), http.StatusUnauthorized)
	}
	c, err := s.lookupClient(ctx, r.Data.ClientID)
	if err != nil {
		return nil, err
	}
	return oauthOpClient{c}, nil
}

// CodeExchange redeems an authorization code: once, by the client it
// was issued to, with the redirect URI and the PKCE verifier of its
// request. A code used a second time revokes the agent it was issued for,
// and so every token issued with it (RFC 6749 §4.1.2, OAuth 2.1 §4.1.3).
func (s *oauthServer) CodeExchange(ctx context.Context, r *op.ClientRequest[oidc.AccessTokenRequest]) (*op.Response, error) {
	p := s.p
	var g oauthGrant
	expires, err := p.unsealJSON(codePrefix, "oauth-code", r.Client.GetID(), r.Data.Code, oauthCodeLife, &g)
	if err != nil {
		return nil, oidc.ErrInvalidGrant().WithDescription("the code is not valid, or has expired")
	}
	if r.Data.RedirectURI != g.Redirect {
		return nil, oidc.ErrInvalidGrant().WithDescription("redirect_uri differs from the authorization request's")
	}
	if !verifierMatches(r.Data.CodeVerifier, g.Challenge) {
		return nil, oidc.ErrInvalidGrant().WithDescription("code_verifier does not match the code_challenge")
	}
	if err := checkTokenResource(r.Form, g.Resource); err != nil {
		return nil, err
	}
	if err := p.spendOAuthNonce(ctx, "oauth-code:", g, expires); err != nil {
		return nil, err
	}
	return p.issueOAuthTokens(ctx, g)
}

// verifierMatches reports whether verifier is the PKCE verifier of the S256
// challenge (RFC 7636 §4.6).
func verifierMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(oauth2.S256ChallengeFromVerifier(verifier)), []byte(challenge)) == 1
}

// checkTokenResource checks the resource parameters of a token request
// (RFC 8707 §2.2): none, or the one the grant is bound to.
func checkTokenResource(form url.Values, bound string) error {
	for _, res := range form["resource"] {
		if res != bound {
			return oidc.ErrInvalidTarget().WithDescription("the grant is bound to another resource")
		}
	}
	return nil
}

// spendOAuthNonce records the nonce of a code or a refresh token as used,
// in the shared store, so that each is good once on every instance. A
// second use revokes the grant's agent: whoever holds a spent code or
// refresh token may have stolen it, and the tokens issued with it go too.
func (p *Provider) spendOAuthNonce(ctx context.Context, kind string, g oauthGrant, expires time.Time) error {
	err := p.store.UseNonce(ctx, kind+g.Nonce, expires)
	if errors.Is(err, store.ErrConflict) {
		if rerr := p.revokeOAuthAgent(ctx, g, "a used "+strings.TrimSuffix(strings.TrimPrefix(kind, "oauth-"), ":")+" was presented again"); rerr != nil {
			p.logger.ErrorContext(ctx, "agentauth/provider: revoking after a replay", "agent", g.Agent, "error", rerr.Error())
		}
		return oidc.ErrInvalidGrant().WithDescription("the grant was already used; its tokens are revoked")
	}
	if err != nil {
		return oidc.ErrServerError().WithParent(err).WithDescription("the server could not record the grant's use")
	}
	return nil
}

// revokeOAuthAgent revokes the agent of a grant, as its user would.
func (p *Provider) revokeOAuthAgent(ctx context.Context, g oauthGrant, why string) error {
	a, err := p.store.GetAgent(ctx, g.Agent)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	live := []string{agentcap.StatusPending, agentcap.StatusActive, agentcap.StatusExpired}
	err = p.store.UpdateAgentStatus(ctx, a.ID, live, agentcap.StatusRevoked)
	if errors.Is(err, store.ErrStatus) {
		return nil
	}
	if err != nil {
		return err
	}
	h, err := p.store.GetHost(ctx, a.HostID)
	if err != nil {
		h = &store.Host{ID: a.HostID}
	}
	p.record(ctx, agentRecord(audit.EventAgentRevoked, a, h, "OAuth client "+g.Client+": "+why))
	return nil
}

// RefreshToken rotates a refresh token: the one presented is spent (a
// second use revokes the agent) and a new pair is issued, for the same
// agent, client and resource, while the agent is active.
func (s *oauthServer) RefreshToken(ctx context.Context, r *op.ClientRequest[oidc.RefreshTokenRequest]) (*op.Response, error) {
	p := s.p
	var g oauthGrant
	expires, err := p.unsealJSON(refreshTokenPrefix, "oauth-refresh", r.Client.GetID(), r.Data.RefreshToken, p.oauth.refreshLife, &g)
	if err != nil {
		return nil, oidc.ErrInvalidGrant().WithDescription("the refresh token is not valid, or has expired")
	}
	if err := checkTokenResource(r.Form, g.Resource); err != nil {
		return nil, err
	}
	if err := p.spendOAuthNonce(ctx, "oauth-refresh:", g, expires); err != nil {
		return nil, err
	}
	return p.issueOAuthTokens(ctx, g)
}

// issueOAuthTokens answers a token request with an access token and a
// refresh token for the grant's agent, which must be active; scope lists
// the capabilities it is granted.
func (p *Provider) issueOAuthTokens(ctx context.Context, g oauthGrant) (*op.Response, error) {
	a, err := p.store.GetAgent(ctx, g.Agent)
	if errors.Is(err, store.ErrNotFound) {
		return nil, oidc.ErrInvalidGrant().WithDescription("the grant was revoked")
	}
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err).WithDescription("the server could not read the grant")
	}
	if a.Status != agentcap.StatusActive {
		return nil, oidc.ErrInvalidGrant().WithDescription("the grant is %s", a.Status)
	}
	now := p.now()
	access, err := p.sealJSON(accessTokenPrefix, "oauth-access", "", oauthGrant{Agent: a.ID, Client: g.Client, Key: g.Key, Resource: g.Resource})
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	nonce, err := p.newID("")
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	refresh, err := p.sealJSON(refreshTokenPrefix, "oauth-refresh", g.Client, oauthGrant{Agent: a.ID, Client: g.Client, Key: g.Key, Resource: g.Resource, Nonce: nonce})
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	resp := op.NewResponse(&oidc.AccessTokenResponse{
		AccessToken:  access,
		TokenType:    oidc.BearerToken,
		RefreshToken: refresh,
		ExpiresIn:    uint64(p.oauth.accessLife / time.Second),
		Scope:        activeGrants(a, now),
	})
	resp.Header.Set("Cache-Control", "no-store")
	return resp, nil
}

// activeGrants lists the capabilities an agent may use at now.
func activeGrants(a *store.Agent, now time.Time) []string {
	var out []string
	for _, g := range a.Grants {
		if g.Status == agentcap.StatusActive && (g.ExpiresAt == nil || now.Before(*g.ExpiresAt)) {
			out = append(out, g.Capability)
		}
	}
	return out
}

// Revocation revokes the grant behind an access or refresh token of the
// requesting client (RFC 7009): the agent, and with it every token issued
// to it. An unknown or foreign token is answered alike, 200.
func (s *oauthServer) Revocation(ctx context.Context, r *op.ClientRequest[oidc.RevocationRequest]) (*op.Response, error) {
	p := s.p
	var g oauthGrant
	_, err := p.unsealJSON(refreshTokenPrefix, "oauth-refresh", r.Client.GetID(), r.Data.Token, p.oauth.refreshLife, &g)
	if err != nil {
		if _, err = p.unsealJSON(accessTokenPrefix, "oauth-access", "", r.Data.Token, p.oauth.accessLife, &g); err == nil && g.Client != r.Client.GetID() {
			err = errSealInvalid
		}
	}
	if err == nil {
		if err := p.revokeOAuthAgent(ctx, g, "revoked by the client"); err != nil {
			return nil, oidc.ErrServerError().WithParent(err).WithDescription("the server could not revoke the token")
		}
	}
	resp := op.NewResponse(struct{}{})
	resp.Header.Set("Cache-Control", "no-store")
	return resp, nil
}

// oauthSession verifies an access token presented at endpoint: sealed by
// this provider, unexpired, issued for endpoint, and of an agent that is
// still active under an active host, read from the store on every request
// so that a revocation ends it at once everywhere. It counts against the
// agent's rate limits and records the use as an agent JWT's would. Any
// refusal is 401, so that the client asks its user again.
func (p *Provider) oauthSession(ctx context.Context, endpoint, token string) (*agentauth.Session, error) {
	var g oauthGrant
	expires, err := p.unsealJSON(accessTokenPrefix, "oauth-access", "", token, p.oauth.accessLife, &g)
	switch {
	case errors.Is(err, errSealExpired):
		return nil, errAccessToken("the access token has expired")
	case err != nil:
		return nil, errAccessToken("the access token is not valid")
	case g.Resource != endpoint:
		return nil, errAccessToken("the access token was issued for another resource")
	}
	a, err := p.store.GetAgent(ctx, g.Agent)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errAccessToken("the access token's grant was revoked")
	}
	if err != nil {
		return nil, storeDown(fmt.Errorf("reading agent %s: %w", g.Agent, err))
	}
	h, err := p.store.GetHost(ctx, a.HostID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, storeDown(fmt.Errorf("reading host %s: %w", a.HostID, err))
	}
	if err != nil || h.OAuthClient != g.clientKey() || a.Status != agentcap.StatusActive || h.Status != agentcap.StatusActive {
		return nil, errAccessToken("the access token's grant was revoked")
	}
	now := p.now()
	sess := &agentauth.Session{
		Agent: a.DirectoryAgent(now),
		Host:  h.DirectoryHost(),
		Claims: agentauth.Claims{
			Subject:   a.ID,
			Audience:  []string{endpoint},
			ExpiresAt: expires,
		},
		OAuthClient: g.Client,
	}
	if err := p.limits.agent(ctx, a.ID, h.ID, a.UserID); err != nil {
		return nil, err
	}
	if err := p.touch(ctx, a.ID, a); err != nil {
		if e := agentcap.As(err); e != nil && e.HTTPStatus() >= 500 {
			return nil, err
		}
		return nil, errAccessToken("the access token's grant has lapsed")
	}
	return sess, nil
}

// errAccessToken refuses an access token: 401, which sends an OAuth
// client back to refresh or to its user.
func errAccessToken(msg string) *agentcap.Error {
	return agentcap.NewError(agentcap.CodeInvalidJWT, msg)
}

// endpointSessions is the session source of an MCP endpoint's verifier:
// agent JWTs as at every location, and, when the authorization server is
// on, its access tokens issued for the endpoint.
type endpointSessions struct {
	p        *Provider
	endpoint string
}

func (s endpointSessions) Session(ctx context.Context, token string) (*agentauth.Session, error) {
	if s.p.oauth.enabled && strings.HasPrefix(token, accessTokenPrefix) {
		return s.p.oauthSession(ctx, s.endpoint, token)
	}
	return s.p.session(ctx, token)
}

// oauthSettings are Config.OAuth with its defaults applied.
type oauthSettings struct {
	enabled     bool
	dynamic     bool
	accessLife  time.Duration
	refreshLife time.Duration
	handler     http.Handler
}

// setupOAuth checks Config.OAuth and builds the authorization server.
func (p *Provider) setupOAuth(cfg OAuthConfig) error {
	if !cfg.Enabled {
		return nil
	}
	switch {
	case len(p.endpoints) == 0:
		return errors.New("provider: Config.OAuth.Enabled needs Config.Endpoints: the MCP endpoints its tokens are for")
	case p.signedInUser == nil:
		return errors.New("provider: Config.OAuth.Enabled needs Config.SignedInUser: users consent on the approval page")
	case cfg.AccessTokenLifetime < 0 || cfg.RefreshTokenLifetime < 0:
		return errors.New("provider: Config.OAuth token lifetimes must not be negative")
	}
	p.oauth = oauthSettings{
		enabled:     true,
		dynamic:     cfg.DynamicRegistration,
		accessLife:  cfg.AccessTokenLifetime,
		refreshLife: cfg.RefreshTokenLifetime,
	}
	if p.oauth.accessLife == 0 {
		p.oauth.accessLife = 10 * time.Minute
	}
	if p.oauth.refreshLife == 0 {
		p.oauth.refreshLife = 30 * 24 * time.Hour
	}
	p.oauth.handler = p.newOAuthHandler()
	return nil
}

// oauthMetadata is the authorization server's metadata (RFC 8414), with
// the fields the MCP authorization specification reads.
type oauthMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint,omitempty"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	ResponseModesSupported            []string `json:"response_modes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	TokenEndpointAuthMethods          []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethods     []string `json:"revocation_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
	AuthorizationResponseISSSupported bool     `json:"authorization_response_iss_parameter_supported"`
	ProtectedResources                []string `json:"protected_resources,omitempty"`
}

// serveOAuthMetadata serves the authorization server's metadata.
func (p *Provider) serveOAuthMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "use GET", http.StatusMethodNotAllowed)
		return
	}
	md := oauthMetadata{
		Issuer:                            p.issuer,
		AuthorizationEndpoint:             p.issuer + pathOAuthAuthorize,
		TokenEndpoint:                     p.issuer + pathOAuthToken,
		RevocationEndpoint:                p.issuer + pathOAuthRevoke,
		ScopesSupported:                   p.capabilityNames(),
		ResponseTypesSupported:            []string{"code"},
		ResponseModesSupported:            []string{"query"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethods:          []string{"none"},
		RevocationEndpointAuthMethods:     []string{"none"},
		CodeChallengeMethodsSupported:     []string{"S256"},
		ClientIDMetadataDocumentSupported: true,
		AuthorizationResponseISSSupported: true,
		ProtectedResources:                p.endpoints,
	}
	if p.oauth.dynamic {
		md.RegistrationEndpoint = p.issuer + pathOAuthRegister
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	_ = json.NewEncoder(w).Encode(md)
}

// capabilityNames lists the Registry's capabilities: the scopes of the
// authorization server.
func (p *Provider) capabilityNames() []string {
	defs := p.reg.All()
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.Name()
	}
	return out
}

// serveOAuth serves the authorization, token and revocation endpoints
// through the op package. An authorization request without a scope is
// given anyScope first, since the user chooses there among what they may
// see.
func (p *Provider) serveOAuth(w http.ResponseWriter, r *http.Request) {
	if rel, _ := strings.CutPrefix(r.URL.Path, p.basePath); rel == pathOAuthAuthorize && r.Method == http.MethodGet {
		q := r.URL.Query()
		if strings.TrimSpace(q.Get("scope")) == "" {
			q.Set("scope", anyScope)
			r = r.Clone(r.Context())
			r.URL.RawQuery = q.Encode()
		}
	}
	http.StripPrefix(p.basePath, p.oauth.handler).ServeHTTP(w, r)
}

// throwawayKey returns a fresh Ed25519 public JWK whose private key is
// dropped at once: the key of the host and agent records a consent makes
// for an OAuth client, which act only through access tokens and can
// never sign a host or agent JWT.
func (p *Provider) throwawayKey() (json.RawMessage, error) {
	pub, _, err := ed25519.GenerateKey(p.rand)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]string{"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(pub)})
}

// oauthHost returns the user's host for client c, making it when the user
// has none that is active or pending: one host per user and client, linked
// to the user, named after the client. A host it makes is pending until
// the user's first consent activates it, so that a client the user never
// allowed shows as nothing more.
func (p *Provider) oauthHost(ctx context.Context, u *User, c *oauthClient) (*store.Host, error) {
	hosts, err := p.store.ListUserHosts(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	var pending *store.Host
	for _, h := range hosts {
		if h.OAuthClient != c.key() {
			continue
		}
		switch h.Status {
		case agentcap.StatusActive:
			return h, nil
		case agentcap.StatusPending:
			pending = h
		}
	}
	if pending != nil {
		return pending, nil
	}
	key, err := p.throwawayKey()
	if err != nil {
		return nil, err
	}
	id, err := p.newID("hst_")
	if err != nil {
		return nil, err
	}
	h := &store.Host{
		ID:          id,
		Name:        c.displayName(),
		PublicKey:   key,
		UserID:      u.ID,
		Status:      agentcap.StatusPending,
		OAuthClient: c.key(),
	}
	if err := p.store.CreateHost(ctx, h); err != nil {
		return nil, err
	}
	p.record(ctx, audit.Record{Event: audit.EventHostRegistered, UserID: u.ID, HostID: h.ID, Detail: "OAuth client " + c.id})
	return h, nil
}

// displayName is the name a consent shows and the records carry.
func (c *oauthClient) displayName() string {
	if c.name != "" {
		return displayText(c.name, maxNameRunes)
	}
	return displayText(c.id, maxNameRunes)
}

// oauthAgent returns the active agent of host h, or makes a pending one
// holding pending grants of caps, to be decided on the approval page;
// for an active agent, caps it does not hold yet become pending grants.
// needed are the capabilities the user is to decide.
func (p *Provider) oauthAgent(ctx context.Context, u *User, c *oauthClient, h *store.Host, caps []string) (a *store.Agent, needed []string, err error) {
	agents, err := p.store.ListAgents(ctx, h.ID)
	if err != nil {
		return nil, nil, err
	}
	now := p.now()
	for _, cand := range agents {
		if cand.Status != agentcap.StatusActive {
			continue
		}
		held := activeGrants(cand, now)
		var pending []store.Grant
		for _, name := range caps {
			if !slices.Contains(held, name) {
				needed = append(needed, name)
				pending = append(pending, store.Grant{Capability: name, Status: agentcap.StatusPending})
			}
		}
		if len(pending) > 0 {
			if err := p.store.PutGrants(ctx, cand.ID, pending); err != nil {
				return nil, nil, err
			}
		}
		return cand, needed, nil
	}
	key, err := p.throwawayKey()
	if err != nil {
		return nil, nil, err
	}
	id, err := p.newID("agt_")
	if err != nil {
		return nil, nil, err
	}
	a = &store.Agent{
		ID:       id,
		Name:     c.displayName(),
		HostID:   h.ID,
		UserID:   u.ID,
		Mode:     agentcap.ModeDelegated,
		Status:   agentcap.StatusPending,
		AgentKey: store.AgentKey{PublicKey: key},
	}
	for _, name := range caps {
		a.Grants = append(a.Grants, store.Grant{Capability: name, Status: agentcap.StatusPending})
	}
	if err := p.store.CreateAgent(ctx, a); err != nil {
		return nil, nil, err
	}
	p.record(ctx, agentRecord(audit.EventAgentRegistered, a, h, "OAuth client "+c.id))
	return a, caps, nil
}

// serveOAuthConsent is the step between the authorization endpoint and
// the approval page: it needs a freshly signed-in user, finds or makes
// the user's host and agent for the client, asks the user for the
// capabilities the agent does not hold yet through an approval request
// addressed to them, and sends them to the approval page with the
// request sealed for them. When the agent holds everything asked for
// already, the client gets its code at once.
func (p *Provider) serveOAuthConsent(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	setPageHeaders(h)
	d := p.newPageData("approve")
	if r.Method != http.MethodGet {
		h.Set("Allow", "GET")
		p.renderPage(w, http.StatusMethodNotAllowed, d, "Not allowed", "done", "Open the link the application gave you.")
		return
	}
	var rq oauthRequest
	if _, err := p.unsealJSON("", "oauth-request", "", r.URL.Query().Get("request"), oauthRequestLife, &rq); err != nil {
		p.renderPage(w, http.StatusBadRequest, d, "Request expired", "done", "This sign-in request has expired or is not valid. Start again from the application.")
		return
	}
	next := r.URL.Path + "?request=" + url.QueryEscape(r.URL.Query().Get("request"))
	u := p.pageUser(w, r, d, pageTmpl, true, next)
	if u == nil {
		return
	}
	ctx := r.Context()
	fail := func(err error) {
		p.logger.ErrorContext(ctx, "agentauth/provider: OAuth consent", "error", err.Error())
		p.renderPage(w, http.StatusInternalServerError, d, "Something went wrong", "done", "The request could not be handled. Try again later.")
	}
	c, err := p.oauthClient(ctx, rq.Client)
	if errors.Is(err, errUnknownClient) {
		p.renderPage(w, http.StatusBadRequest, d, "Unknown application", "done", "The application that sent you here is not known to this server any more.")
		return
	}
	if err != nil {
		fail(err)
		return
	}
	host, err := p.oauthHostFor(ctx, u, c)
	if errors.Is(err, errRegistrationExpired) {
		p.renderPage(w, http.StatusBadRequest, d, "Registration expired", "done", "The application's registration has expired. Start again from the application.")
		return
	}
	if err != nil {
		fail(err)
		return
	}
	caps := rq.Scopes
	if caps == nil {
		caps = p.visibleTo(ctx, u, host)
	}
	agent, needed, err := p.oauthAgent(ctx, u, c, host, caps)
	if err != nil {
		fail(err)
		return
	}
	rq.Agent = agent.ID
	if k := c.key(); k != c.id {
		rq.Key = k
	}
	if len(needed) == 0 && agent.Status == agentcap.StatusActive {
		p.redirectWithCode(w, r, rq)
		return
	}
	apID, err := p.oauthApproval(ctx, u, agent, needed)
	if err != nil {
		fail(err)
		return
	}
	rq.Approval = apID
	sealed, err := p.sealJSON("", "oauth-consent", u.ID, rq)
	if err != nil {
		fail(err)
		return
	}
	http.Redirect(w, r, p.verificationURI+"?request="+url.QueryEscape(apID)+"&oauth="+url.QueryEscape(sealed), http.StatusSeeOther)
}

var errRegistrationExpired = errors.New("provider: the dynamic registration has expired")

// oauthHostFor is oauthHost, refusing a dynamic registration that has
// expired unless the user consented to it before (their host for it is
// still active).
func (p *Provider) oauthHostFor(ctx context.Context, u *User, c *oauthClient) (*store.Host, error) {
	if c.kind == "dynamic" && p.registrationExpired(c) {
		hosts, err := p.store.ListUserHosts(ctx, u.ID)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(hosts, func(h *store.Host) bool { return h.OAuthClient == c.key() && h.Status == agentcap.StatusActive }) {
			return nil, errRegistrationExpired
		}
	}
	return p.oauthHost(ctx, u, c)
}

// visibleTo lists the capabilities that the agent a consent of user u
// makes under host h would see, for a request that named no scope: the
// visibility rules are asked about a delegated, active agent of u under
// h, as they will be asked about it once it calls.
func (p *Provider) visibleTo(ctx context.Context, u *User, h *store.Host) []string {
	host := h.DirectoryHost()
	host.Status, host.UserID = agentcap.StatusActive, u.ID
	sess := &agentauth.Session{
		Agent: &agentauth.Agent{HostID: h.ID, UserID: u.ID, Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive},
		Host:  host,
	}
	id := &auth.Identity{Subject: "oauth-consent:" + h.ID, HostID: h.ID, UserID: u.ID, Claims: sess}
	var out []string
	for _, d := range p.reg.Visible(ctx, id) {
		out = append(out, d.Name())
	}
	return out
}

// oauthApproval creates the approval request of a consent: addressed to
// the user, found by its id only, for the capabilities needed.
func (p *Provider) oauthApproval(ctx context.Context, u *User, a *store.Agent, needed []string) (string, error) {
	id, err := p.newID("apr_")
	if err != nil {
		return "", err
	}
	caps := make([]store.RequestedCapability, len(needed))
	for i, name := range needed {
		caps[i] = store.RequestedCapability{Name: name}
	}
	now := p.now()
	for range 5 {
		code, err := p.newUserCode()
		if err != nil {
			return "", err
		}
		err = p.store.CreateApproval(ctx, &store.Approval{
			ID:           id,
			Method:       store.MethodCIBA,
			AgentID:      a.ID,
			HostID:       a.HostID,
			UserID:       u.ID,
			Capabilities: caps,
			UserCode:     code,
			Status:       store.ApprovalPending,
			Interval:     p.pollInterval / 2,
			ExpiresAt:    now.Add(oauthRequestLife),
			CreatedAt:    now,
		})
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		return id, err
	}
	return "", errors.New("no free user code after 5 draws")
}

// oauthView is what the approval page shows of the OAuth client behind a
// consent, and the sealed request it carries through its forms.
type oauthView struct {
	Token        string
	ClientName   string
	ClientID     string
	ClientKind   string
	RedirectHost string
	request      oauthRequest
}

// oauthForPage reads the sealed consent a page request carries for user u
// and approval ap: nil without one; an error when it is not valid for
// them.
func (p *Provider) oauthForPage(ctx context.Context, token string, u *User, ap *Approval) (*oauthView, error) {
	if token == "" {
		return nil, nil
	}
	var rq oauthRequest
	if _, err := p.unsealJSON("", "oauth-consent", u.ID, token, oauthRequestLife, &rq); err != nil || rq.Approval != ap.ID || rq.Agent != ap.AgentID {
		return nil, errSealInvalid
	}
	c, err := p.oauthClient(ctx, rq.Client)
	if err != nil {
		return nil, err
	}
	v := &oauthView{Token: token, ClientName: c.displayName(), ClientID: rq.Client, ClientKind: c.kind, request: rq}
	if ru, err := url.Parse(rq.Redirect); err == nil {
		v.RedirectHost = ru.Scheme + "://" + ru.Host
		if ru.Host == "" {
			v.RedirectHost = ru.Scheme + ":"
		}
	}
	return v, nil
}

// formAction is the page's form-action source for the consent's redirect:
// browsers apply form-action to the redirect that follows a form post.
func (v *oauthView) formAction() string {
	ru, err := url.Parse(v.request.Redirect)
	if err != nil {
		return ""
	}
	if ru.Host == "" {
		return ru.Scheme + ":"
	}
	return ru.Scheme + "://" + ru.Host
}

// redirectWithCode ends a consent: the browser goes back to the client
// with a code (RFC 6749 §4.1.2), its state and the issuer (RFC 9207).
func (p *Provider) redirectWithCode(w http.ResponseWriter, r *http.Request, rq oauthRequest) {
	nonce, err := p.newID("")
	if err == nil {
		var code string
		code, err = p.sealJSON(codePrefix, "oauth-code", rq.Client, oauthGrant{
			Agent: rq.Agent, Client: rq.Client, Key: rq.Key, Resource: rq.Resource,
			Redirect: rq.Redirect, Challenge: rq.Challenge, Nonce: nonce,
		})
		if err == nil {
			p.redirectToClient(w, r, rq, url.Values{"code": {code}})
			return
		}
	}
	p.logger.ErrorContext(r.Context(), "agentauth/provider: OAuth code", "error", err.Error())
	p.redirectToClient(w, r, rq, url.Values{"error": {"server_error"}})
}

// redirectToClient sends the browser to the client's redirect URI with
// params, the request's state and the issuer added to its query.
func (p *Provider) redirectToClient(w http.ResponseWriter, r *http.Request, rq oauthRequest, params url.Values) {
	ru, err := url.Parse(rq.Redirect)
	if err != nil {
		http.Error(w, "bad redirect URI", http.StatusInternalServerError)
		return
	}
	q := ru.Query()
	for k, vs := range params {
		q[k] = vs
	}
	if rq.State != "" {
		q.Set("state", rq.State)
	}
	q.Set("iss", p.issuer)
	ru.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, ru.String(), http.StatusSeeOther)
}
