package provider

import (
	"container/list"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// How the authorization server knows its clients. A client_id names one
// of three kinds of client:
//
//   - registered: one of Config.OAuth.Clients, by its ID;
//   - dynamic: an id the provider handed out at {issuer}/oauth/register
//     (RFC 7591). It keeps no record of it: the id is sealed under
//     Config.PageSecret and carries the redirect URIs, the name and when
//     it was issued, so every instance sharing the secret reads it alike;
//   - metadata: an https URL with a path, naming the client's Client ID
//     Metadata Document, fetched under Config.OAuth.MetadataFetch through
//     the SSRF-safe fetcher and kept for a few minutes.
//
// Every client is public: none authenticates at the token endpoint, and
// none is handed a secret.

// pathOAuthRegister is the registration endpoint under the issuer.
const pathOAuthRegister = "/oauth/register"

// The kinds of oauthClient.
const (
	clientKindRegistered = "registered"
	clientKindDynamic    = "dynamic"
	clientKindMetadata   = "metadata"
)

const (
	// dynamicClientPrefix begins every dynamic client_id, and
	// dynamicClientLabel is the label of its seal.
	dynamicClientPrefix = "dyn_"
	dynamicClientLabel  = "oauth-client"

	defaultRegistrationLifetime   = 24 * time.Hour
	defaultRegistrationsPerMinute = 10
	// maxRegistrationBytes bounds a registration request's body.
	maxRegistrationBytes = 16 << 10

	// maxClientDocumentBytes and maxClientDocumentTime bound the fetch of
	// a Client ID Metadata Document; MetadataFetch may set less.
	maxClientDocumentBytes = 5 << 10
	maxClientDocumentTime  = 5 * time.Second
	// clientDocumentLife is how long a fetched document is used before it
	// is fetched again, and clientDocumentCacheSize how many are kept.
	clientDocumentLife      = 5 * time.Minute
	clientDocumentCacheSize = 256
	// maxClientIDURLBytes bounds a client_id that is a URL.
	maxClientIDURLBytes = 2048

	// maxRedirectURIs and maxRedirectURIBytes bound the redirect URIs of a
	// registration or a metadata document: a dynamic client_id carries
	// them all, and it travels in URLs.
	maxRedirectURIs     = 8
	maxRedirectURIBytes = 512
)

// errUnknownClient is wrapped by every refusal of a client_id that names
// no usable client; its message, detail included, may be shown to the
// client (invalid_client).
var errUnknownClient = errors.New("provider: unknown OAuth client")

func unknownClient(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUnknownClient}, args...)...)
}

// oauthClient is a client of the authorization server, whatever kind of
// client_id named it.
type oauthClient struct {
	id   string
	name string // untrusted display text, bounded; "" when none
	// redirectURIs are the client's redirect URIs, to be compared exactly.
	redirectURIs []string
	kind         string // clientKindRegistered, clientKindDynamic or clientKindMetadata
	// origin is, for a metadata client, scheme://host of its client_id.
	origin string
	// issuedAt is, for a dynamic client, when its client_id was issued.
	issuedAt time.Time
}

// key is what the client's host records (store.Host.OAuthClient) and its
// tokens are checked against: its client_id, except for a dynamic client,
// whose key is a digest of what it registered (its name and redirect
// URIs). A client that registers again, as some do on every
// authorization, gets another client_id for the same registration: its
// consents go to the same host and agent, so that a step-up adds to the
// grants the user gave before. Two registrations alike in every detail
// send their codes to the same redirect URIs and show the user the same
// consent: they are one client as far as anyone can tell.
func (c *oauthClient) key() string {
	if c.kind != clientKindDynamic {
		return c.id
	}
	h := sha256.New()
	h.Write([]byte(c.name))
	for _, u := range c.redirectURIs {
		h.Write([]byte{0})
		h.Write([]byte(u))
	}
	return dynamicClientPrefix + "registration:" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

func (c *oauthClient) clone() *oauthClient {
	out := *c
	out.redirectURIs = slices.Clone(c.redirectURIs)
	return &out
}

// oauthClientSet is what the provider knows of OAuth clients.
type oauthClientSet struct {
	registered map[string]*oauthClient
	dynamic    bool
	lifetime   time.Duration   // RegistrationLifetime
	perAddress ratelimit.Limit // RegistrationsPerMinute
	fetch      *http.Client
	documents  clientDocuments
}

// newOAuthClientSet checks the client settings of cfg.
func newOAuthClientSet(cfg OAuthConfig) (*oauthClientSet, error) {
	s := &oauthClientSet{
		registered: make(map[string]*oauthClient, len(cfg.Clients)),
		dynamic:    cfg.DynamicRegistration,
		lifetime:   cfg.RegistrationLifetime,
		documents:  clientDocuments{max: clientDocumentCacheSize},
	}
	for i, c := range cfg.Clients {
		switch {
		case c.ID == "":
			return nil, fmt.Errorf("provider: Config.OAuth.Clients[%d]: ID is required", i)
		case s.registered[c.ID] != nil:
			return nil, fmt.Errorf("provider: Config.OAuth.Clients[%d]: ID %q appears twice", i, c.ID)
		case len(c.RedirectURIs) == 0:
			return nil, fmt.Errorf("provider: Config.OAuth.Clients[%d] (%s): RedirectURIs is required", i, c.ID)
		}
		for _, u := range c.RedirectURIs {
			if err := checkRedirectURI(u, redirectAny); err != nil {
				return nil, fmt.Errorf("provider: Config.OAuth.Clients[%d] (%s): %v", i, c.ID, err)
			}
		}
		s.registered[c.ID] = &oauthClient{id: c.ID, name: c.Name, redirectURIs: slices.Clone(c.RedirectURIs), kind: clientKindRegistered}
	}
	switch {
	case s.lifetime == 0:
		s.lifetime = defaultRegistrationLifetime
	case s.lifetime < 0:
		return nil, fmt.Errorf("provider: Config.OAuth.RegistrationLifetime %v is negative", s.lifetime)
	}
	switch n := cfg.RegistrationsPerMinute; {
	case n == 0:
		s.perAddress = ratelimit.PerMinute(defaultRegistrationsPerMinute)
	case n < 0:
		return nil, fmt.Errorf("provider: Config.OAuth.RegistrationsPerMinute %d is negative", n)
	default:
		s.perAddress = ratelimit.PerMinute(n)
	}
	policy := cfg.MetadataFetch
	if policy.MaxBytes <= 0 || policy.MaxBytes > maxClientDocumentBytes {
		policy.MaxBytes = maxClientDocumentBytes
	}
	if policy.Timeout <= 0 || policy.Timeout > maxClientDocumentTime {
		policy.Timeout = maxClientDocumentTime
	}
	s.fetch = agentauth.NewSafeHTTPClient(policy)
	// A redirect is answered as it is, and refused: the document must be
	// at its client_id.
	s.fetch.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return s, nil
}

// oauthClient returns the client that id names. Anything that names no
// usable client is an error wrapping errUnknownClient; whether an unused
// dynamic registration has expired is for the caller to decide (see
// registrationExpired). The client returned is the caller's to keep.
func (p *Provider) oauthClient(ctx context.Context, id string) (*oauthClient, error) {
	s := p.clientSet
	if c, ok := s.registered[id]; ok {
		return c.clone(), nil
	}
	if strings.HasPrefix(id, dynamicClientPrefix) {
		if !s.dynamic {
			return nil, unknownClient("dynamic client registration is off")
		}
		return p.openDynamicClient(id)
	}
	if !strings.Contains(id, "://") {
		return nil, unknownClient("no client has this client_id")
	}
	if err := checkClientIDURL(id); err != nil {
		return nil, unknownClient("%v", err)
	}
	if c := s.documents.get(id, p.now()); c != nil {
		return c, nil
	}
	data, err := p.fetchClientDocument(ctx, id)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("provider: client ID metadata document: %w", ctx.Err())
		}
		return nil, err
	}
	c, err := parseClientDocument(id, data)
	if err != nil {
		return nil, unknownClient("the client ID metadata document is refused: %v", err)
	}
	s.documents.put(c, p.now())
	return c, nil
}

// registrationExpired reports whether a dynamic registration is too old
// to start an authorization on its own: one made more than
// Config.OAuth.RegistrationLifetime ago. Other clients never expire.
func (p *Provider) registrationExpired(c *oauthClient) bool {
	return c.kind == clientKindDynamic && !p.now().Before(c.issuedAt.Add(p.clientSet.lifetime))
}

// checkClientIDURL checks a client_id that is to name a Client ID
// Metadata Document: an https URL in normal form with a path other than
// "/", without fragment, credentials or dot segments.
func checkClientIDURL(id string) error {
	if len(id) > maxClientIDURLBytes {
		return fmt.Errorf("a client_id URL is at most %d bytes", maxClientIDURLBytes)
	}
	u, err := url.Parse(id)
	switch {
	case err != nil || !strings.HasPrefix(id, "https://"):
		return errors.New("a client_id URL must be an https URL")
	case u.Host == "" || u.User != nil || strings.Contains(id, "#"):
		return errors.New("a client_id URL needs a host and no credentials or fragment")
	case u.Path == "" || u.Path == "/":
		return errors.New("a client_id URL needs a path")
	case u.String() != id:
		return errors.New("a client_id URL must be in normal form")
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return errors.New("a client_id URL must not hold dot segments")
		}
	}
	return nil
}

// fetchClientDocument fetches the Client ID Metadata Document at id. Its
// errors wrap errUnknownClient; the causes of failed fetches, which may
// say what an address resolves to, are logged rather than told.
func (p *Provider) fetchClientDocument(ctx context.Context, id string) ([]byte, error) {
	refuse := func(public string, cause error) error {
		if cause != nil {
			p.logger.InfoContext(ctx, "agentauth/provider: client ID metadata document not fetched", "client_id", id, "error", cause.Error())
		}
		return unknownClient("the client ID metadata document %s", public)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, refuse("could not be fetched", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := p.clientSet.fetch.Do(req)
	switch {
	case errors.Is(err, agentauth.ErrResponseTooLarge):
		return nil, refuse(fmt.Sprintf("is larger than %d bytes", maxClientDocumentBytes), nil)
	case errors.Is(err, agentauth.ErrFetchBlocked):
		return nil, refuse("is at an address that may not be fetched", err)
	case err != nil:
		return nil, refuse("could not be fetched", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, refuse(fmt.Sprintf("was answered with HTTP status %d (redirects are not followed)", resp.StatusCode), nil)
	}
	if !jsonMediaType(resp.Header.Get("Content-Type")) {
		return nil, refuse("is not served as application/json", nil)
	}
	data, err := io.ReadAll(resp.Body)
	switch {
	case errors.Is(err, agentauth.ErrResponseTooLarge):
		return nil, refuse(fmt.Sprintf("is larger than %d bytes", maxClientDocumentBytes), nil)
	case err != nil:
		return nil, refuse("could not be read", err)
	}
	return data, nil
}

// jsonMediaType reports whether a Content-Type is JSON: application/json
// or a +json type.
func jsonMediaType(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")))
}

// parseClientDocument reads the Client ID Metadata Document of the
// client_id id, which checkClientIDURL accepted: its client_id must be id
// exactly, its redirect_uris absolute without fragment (http ones to
// loopback only), and it must not ask to authenticate at the token
// endpoint. Members it does not use are ignored.
func parseClientDocument(id string, data []byte) (*oauthClient, error) {
	m, md, err := parseClientMetadata(data, redirectNative)
	if err != nil {
		return nil, err
	}
	got, ok, err := memberString(m, "client_id")
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, errors.New("client_id is missing")
	case got != id:
		return nil, errors.New("its client_id is not the URL it was fetched from")
	}
	u, err := url.Parse(id)
	if err != nil {
		return nil, err
	}
	return &oauthClient{id: id, name: md.name, redirectURIs: md.redirectURIs, kind: clientKindMetadata, origin: u.Scheme + "://" + u.Host}, nil
}

// clientMetadataError is a refusal of client metadata in RFC 7591's
// terms: code is invalid_redirect_uri or invalid_client_metadata.
type clientMetadataError struct {
	code, description string
}

func (e *clientMetadataError) Error() string { return e.description }

func invalidMetadata(format string, args ...any) error {
	return &clientMetadataError{"invalid_client_metadata", fmt.Sprintf(format, args...)}
}

// clientMetadata is what a Client ID Metadata Document and a registration
// request say alike.
type clientMetadata struct {
	redirectURIs []string
	name         string // display text, bounded
}

// parseClientMetadata reads client metadata: one JSON object, no name
// twice at any depth, with redirect_uris (each checked under rule), an
// optional client_name, and token_endpoint_auth_method absent or "none".
// Its errors are *clientMetadataError. m holds every member as sent.
func parseClientMetadata(data []byte, rule redirectRule) (m map[string]json.RawMessage, md clientMetadata, err error) {
	if !utf8.Valid(data) {
		return nil, md, invalidMetadata("the metadata is not valid UTF-8")
	}
	if _, m, err = jsonvalue.ParseObject(data); err != nil {
		return nil, md, invalidMetadata("the metadata is not one JSON object: %v", err)
	}
	uris, ok, err := memberStrings(m, "redirect_uris")
	switch {
	case err != nil:
		return nil, md, &clientMetadataError{"invalid_redirect_uri", err.Error()}
	case !ok || len(uris) == 0:
		return nil, md, &clientMetadataError{"invalid_redirect_uri", "redirect_uris is required"}
	case len(uris) > maxRedirectURIs:
		return nil, md, &clientMetadataError{"invalid_redirect_uri", fmt.Sprintf("at most %d redirect_uris", maxRedirectURIs)}
	}
	for _, u := range uris {
		if len(u) > maxRedirectURIBytes {
			return nil, md, &clientMetadataError{"invalid_redirect_uri", fmt.Sprintf("a redirect URI is at most %d bytes", maxRedirectURIBytes)}
		}
		if err := checkRedirectURI(u, rule); err != nil {
			return nil, md, &clientMetadataError{"invalid_redirect_uri", err.Error()}
		}
	}
	method, ok, err := memberString(m, "token_endpoint_auth_method")
	switch {
	case err != nil:
		return nil, md, err
	case ok && method != "none":
		return nil, md, invalidMetadata(`token_endpoint_auth_method must be "none": only public clients are served`)
	}
	name, _, err := memberString(m, "client_name")
	if err != nil {
		return nil, md, err
	}
	return m, clientMetadata{redirectURIs: uris, name: displayText(name, maxNameRunes)}, nil
}

// memberString reads an optional string member; null counts as absent.
func memberString(m map[string]json.RawMessage, name string) (string, bool, error) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return "", false, nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false, invalidMetadata("%s must be a string", name)
	}
	return s, true, nil
}

// memberStrings reads an optional member holding an array of strings;
// null counts as absent.
func memberStrings(m map[string]json.RawMessage, name string) ([]string, bool, error) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return nil, false, nil
	}
	var s []string
	if json.Unmarshal(raw, &s) != nil || slices.Contains(s, "") {
		return nil, false, invalidMetadata("%s must be an array of non-empty strings", name)
	}
	return s, true, nil
}

// redirectRule says which redirect URIs a kind of client may have.
type redirectRule int

const (
	// redirectAny: any absolute URI without fragment or credentials, in
	// a scheme that a browser does not run or read locally (the
	// application's own clients).
	redirectAny redirectRule = iota
	// redirectNative: also http to loopback hosts only (metadata
	// documents, which may name a native app's private-use scheme).
	redirectNative
	// redirectWeb: https, or http to loopback hosts (RFC 8252) only
	// (dynamic registrations).
	redirectWeb
)

// checkRedirectURI checks a redirect URI under rule.
func checkRedirectURI(raw string, rule redirectRule) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs():
		return fmt.Errorf("redirect URI %q is not an absolute URI", raw)
	case strings.Contains(raw, "#"):
		return fmt.Errorf("redirect URI %q holds a fragment", raw)
	case u.User != nil:
		return fmt.Errorf("redirect URI %q holds credentials", raw)
	}
	switch u.Scheme {
	case "javascript", "data", "vbscript", "file", "blob", "about":
		return fmt.Errorf("redirect URI %q has scheme %s", raw, u.Scheme)
	case "http", "https":
		if u.Host == "" {
			return fmt.Errorf("redirect URI %q has no host", raw)
		}
	}
	switch {
	case rule == redirectAny || u.Scheme == "https":
		return nil
	case u.Scheme == "http":
		if !loopbackHost(u.Hostname()) {
			return fmt.Errorf("redirect URI %q: http is allowed to 127.0.0.1, [::1] and localhost only", raw)
		}
		return nil
	case rule == redirectWeb:
		return fmt.Errorf("redirect URI %q must be https, or http to a loopback address", raw)
	}
	return nil
}

func loopbackHost(host string) bool {
	return host == "127.0.0.1" || host == "::1" || host == "localhost"
}

// clientDocuments keeps the clients of documents fetched lately: at most
// max, the least recently used dropped first, each for
// clientDocumentLife. Refusals are never kept.
type clientDocuments struct {
	mu      sync.Mutex
	max     int
	entries map[string]*list.Element // of *clientDocument
	order   list.List                // most recently used first
}

type clientDocument struct {
	client  *oauthClient
	fetched time.Time
}

// get returns a copy of the client kept for id, nil when none is or it
// has grown too old.
func (d *clientDocuments) get(id string, now time.Time) *oauthClient {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.entries[id]
	if !ok {
		return nil
	}
	doc := e.Value.(*clientDocument)
	if age := now.Sub(doc.fetched); age >= clientDocumentLife || age < 0 {
		d.order.Remove(e)
		delete(d.entries, id)
		return nil
	}
	d.order.MoveToFront(e)
	return doc.client.clone()
}

// put keeps c, fetched now, and drops the least recently used past max.
func (d *clientDocuments) put(c *oauthClient, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.entries == nil {
		d.entries = make(map[string]*list.Element)
	}
	if e, ok := d.entries[c.id]; ok {
		d.order.Remove(e)
	}
	d.entries[c.id] = d.order.PushFront(&clientDocument{client: c.clone(), fetched: now})
	for d.order.Len() > d.max {
		last := d.order.Back()
		d.order.Remove(last)
		delete(d.entries, last.Value.(*clientDocument).client.id)
	}
}

// dynamicClient is what a dynamic client_id carries under its seal
// (beside when it was sealed).
type dynamicClient struct {
	RedirectURIs []string `json:"r"`
	Name         string   `json:"n,omitempty"`
}

// sealDynamicClient returns the client_id of a registration of md, and
// when it was issued.
func (p *Provider) sealDynamicClient(md clientMetadata) (string, time.Time, error) {
	payload, err := json.Marshal(dynamicClient{RedirectURIs: md.redirectURIs, Name: md.name})
	if err != nil {
		return "", time.Time{}, err
	}
	token := p.seal(dynamicClientLabel, "", payload)
	// The time of issue is the one the seal holds.
	_, issued, err := p.openSealed(dynamicClientLabel, "", token)
	return dynamicClientPrefix + token, issued, err
}

// openDynamicClient reads a dynamic client_id.
func (p *Provider) openDynamicClient(id string) (*oauthClient, error) {
	payload, issued, err := p.openSealed(dynamicClientLabel, "", strings.TrimPrefix(id, dynamicClientPrefix))
	if err != nil {
		return nil, unknownClient("the client_id was not issued by this server")
	}
	var dc dynamicClient
	if json.Unmarshal(payload, &dc) != nil || len(dc.RedirectURIs) == 0 {
		return nil, unknownClient("the client_id was not issued by this server")
	}
	return &oauthClient{id: id, name: dc.Name, redirectURIs: dc.RedirectURIs, kind: clientKindDynamic, issuedAt: issued}, nil
}

// errNotSealed is openSealed's refusal.
var errNotSealed = errors.New("provider: not a value this provider sealed")

// openSealed returns the payload of a value seal made for label and
// subject, and when it was sealed; how old it may be is the caller's
// rule. Anything else is errNotSealed.
func (p *Provider) openSealed(label, subject, token string) ([]byte, time.Time, error) {
	enc, rest, ok1 := strings.Cut(token, ".")
	issued, mac, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || !hmac.Equal([]byte(mac), []byte(csrfMAC(p.pageSecret, label, issued, subject, enc))) {
		return nil, time.Time{}, errNotSealed
	}
	at, err := strconv.ParseInt(issued, 10, 64)
	if err != nil {
		return nil, time.Time{}, errNotSealed
	}
	payload, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return nil, time.Time{}, errNotSealed
	}
	return payload, time.Unix(at, 0), nil
}

// The grant and response types a dynamic client may register: those the
// authorization server serves.
var (
	registrationGrantTypes    = []string{"authorization_code", "refresh_token"}
	registrationResponseTypes = []string{"code"}
)

// parseRegistrationRequest reads a registration request (RFC 7591 §2):
// client metadata with redirect URIs that are https or loopback http, and
// grant_types and response_types, when sent, among those served. Members
// it does not use are ignored (§2). Its errors are *clientMetadataError.
func parseRegistrationRequest(data []byte) (clientMetadata, error) {
	m, md, err := parseClientMetadata(data, redirectWeb)
	if err != nil {
		return md, err
	}
	for name, allowed := range map[string][]string{"grant_types": registrationGrantTypes, "response_types": registrationResponseTypes} {
		got, _, err := memberStrings(m, name)
		if err != nil {
			return md, err
		}
		for _, v := range got {
			if !slices.Contains(allowed, v) {
				return md, invalidMetadata("%s may hold only %s", name, strings.Join(allowed, " and "))
			}
		}
	}
	return md, nil
}

// registrationResponse is the answer to a registration (RFC 7591 §3.2.1).
type registrationResponse struct {
	ClientID                string   `json:"client_id"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
}

// registerOAuthClient serves pathOAuthRegister: Dynamic Client
// Registration (RFC 7591) of a public client, rate limited per client
// address. Nothing is stored: the client_id is the registration.
func (p *Provider) registerOAuthClient(w http.ResponseWriter, r *http.Request) error {
	if err := p.limits.oauthRegistration(r, p.clientSet.perAddress); err != nil {
		return err
	}
	refuse := func(err error) error {
		var e *clientMetadataError
		if !errors.As(err, &e) {
			return internalError(err)
		}
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": e.code, "error_description": e.description})
		return nil
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return refuse(invalidMetadata("the request must be application/json"))
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxRegistrationBytes+1))
	switch {
	case err != nil:
		return refuse(invalidMetadata("the request body could not be read"))
	case len(data) > maxRegistrationBytes:
		return refuse(invalidMetadata("the request body is larger than %d bytes", maxRegistrationBytes))
	}
	md, err := parseRegistrationRequest(data)
	if err != nil {
		return refuse(err)
	}
	id, issued, err := p.sealDynamicClient(md)
	if err != nil {
		return internalError(err)
	}
	writeJSON(w, http.StatusCreated, registrationResponse{
		ClientID:                id,
		ClientIDIssuedAt:        issued.Unix(),
		RedirectURIs:            md.redirectURIs,
		ClientName:              md.name,
		TokenEndpointAuthMethod: "none",
		GrantTypes:              registrationGrantTypes,
		ResponseTypes:           registrationResponseTypes,
	})
	return nil
}

// oauthRegistration charges a dynamic client registration to the
// request's client address.
func (l *limits) oauthRegistration(r *http.Request, limit ratelimit.Limit) error {
	rules := l.ipRule(r, limit)
	rules[0].Key = ratelimit.Key("oauth_register", rules[0].Key)
	return l.allow(r.Context(), "address's client registrations", rules...)
}
