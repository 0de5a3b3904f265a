package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/internal/cachecontrol"
)

// Discovery cache lifetimes (protocol §5.1, §10.5).
const (
	// defaultDiscoveryAge is how long a document without Cache-Control
	// is cached.
	defaultDiscoveryAge = time.Hour
	// maxDiscoveryAge is the longest a document is ever cached, whatever
	// its Cache-Control says, and the longest a stale copy stands in for
	// a provider that cannot be reached.
	maxDiscoveryAge = 24 * time.Hour
)

// supportedMajorVersion is the protocol major version the client speaks.
const supportedMajorVersion = 1

// ErrUnsupportedVersion is wrapped by the error of a discovery document
// whose version the client does not speak.
var ErrUnsupportedVersion = errors.New("client: unsupported protocol version")

// Discovery is a provider's discovery document as fetched and checked by
// Client.Discover. It must not be modified.
type Discovery struct {
	agentcap.Discovery

	// URL is the address the document was fetched from.
	URL string `json:"-"`
	// Expires is when the cached copy goes stale.
	Expires time.Time `json:"-"`

	endpoints map[string]string
	location  string
}

// Endpoint names, as in the document's endpoints object.
const (
	endpointRegister           = "register"
	endpointCapabilities       = "capabilities"
	endpointDescribeCapability = "describe_capability"
	endpointExecute            = "execute"
	endpointRequestCapability  = "request_capability"
	endpointStatus             = "status"
	endpointReactivate         = "reactivate"
	endpointRevoke             = "revoke"
	endpointRevokeHost         = "revoke_host"
	endpointRotateKey          = "rotate_key"
	endpointRotateHostKey      = "rotate_host_key"
	endpointIntrospect         = "introspect"
)

// standardPaths are the protocol's endpoint paths, used when a document
// leaves an endpoint out.
var standardPaths = map[string]string{
	endpointRegister:           "/agent/register",
	endpointCapabilities:       "/capability/list",
	endpointDescribeCapability: "/capability/describe",
	endpointExecute:            "/capability/execute",
	endpointRequestCapability:  "/agent/request-capability",
	endpointStatus:             "/agent/status",
	endpointReactivate:         "/agent/reactivate",
	endpointRevoke:             "/agent/revoke",
	endpointRevokeHost:         "/host/revoke",
	endpointRotateKey:          "/agent/rotate-key",
	endpointRotateHostKey:      "/host/rotate-key",
	endpointIntrospect:         "/agent/introspect",
}

// EndpointURL returns the absolute URL of the endpoint named as in the
// document's endpoints object: "register", "capabilities",
// "describe_capability", "execute", "request_capability", "status",
// "reactivate", "revoke", "revoke_host", "rotate_key", "rotate_host_key"
// or "introspect". An endpoint the document leaves out has the protocol's
// standard path.
func (d *Discovery) EndpointURL(name string) (string, error) {
	u, ok := d.endpoints[name]
	if !ok {
		return "", fmt.Errorf("client: unknown endpoint %q", name)
	}
	return u, nil
}

// DefaultLocationURL returns where capabilities without a location of
// their own execute: default_location, or issuer + endpoints.execute when
// the document has none.
func (d *Discovery) DefaultLocationURL() string { return d.location }

// Discover returns the discovery document of the provider at providerURL,
// from the cache while it is fresh.
//
// providerURL may be the document's own URL (ending in
// agent-configuration), a site (its /.well-known/agent-configuration is
// read), or a base URL with a path, for which
// <origin>/.well-known/agent-configuration<path>,
// <base>/agent-configuration and <origin>/.well-known/agent-configuration
// are tried in that order, a 404 moving on to the next.
//
// The document must have a supported major version, an issuer, and
// Ed25519 among its algorithms; every URL it names must pass the client's
// https rule, and absolute endpoint URLs must share the issuer's origin
// (the host JWT goes to them). When a refresh fails, a stale copy younger
// than 24 hours is returned instead.
func (c *Client) Discover(ctx context.Context, providerURL string) (*Discovery, error) {
	key := strings.TrimRight(providerURL, "/")
	now := c.cfg.Now()
	c.discoveryMu.Lock()
	e := c.discovery[key]
	c.discoveryMu.Unlock()
	if e != nil && now.Before(e.doc.Expires) {
		return e.doc, nil
	}
	doc, err := c.fetchDiscovery(ctx, providerURL)
	if err != nil {
		if e != nil && now.Sub(e.fetched) < maxDiscoveryAge && ctx.Err() == nil {
			return e.doc, nil
		}
		return nil, err
	}
	if doc.Expires.After(now) {
		c.discoveryMu.Lock()
		c.discovery[key] = &discoveryEntry{doc: doc, fetched: now}
		c.discoveryMu.Unlock()
	}
	return doc, nil
}

type discoveryEntry struct {
	doc     *Discovery
	fetched time.Time
}

// discoveryCandidates lists the URLs tried for providerURL, in order.
func discoveryCandidates(u *url.URL) []string {
	u = &url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawQuery: u.RawQuery}
	p := strings.TrimRight(u.Path, "/")
	if strings.HasSuffix(p, "/agent-configuration") {
		return []string{u.String()}
	}
	root := u.Scheme + "://" + u.Host
	if p == "" {
		return []string{root + agentcap.DiscoveryPath}
	}
	base := root + p
	return []string{root + agentcap.DiscoveryPath + p, base + "/agent-configuration", root + agentcap.DiscoveryPath}
}

func (c *Client) fetchDiscovery(ctx context.Context, providerURL string) (*Discovery, error) {
	u, err := c.checkURL(providerURL)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for _, candidate := range discoveryCandidates(u) {
		var raw json.RawMessage
		_, header, err := c.do(ctx, call{method: http.MethodGet, url: candidate}, &raw)
		var e *Error
		if errors.As(err, &e) && (e.Status == http.StatusNotFound || e.Status == http.StatusGone) {
			lastErr = fmt.Errorf("client: no discovery document at %s: %w", candidate, err)
			continue
		}
		if err != nil {
			return nil, err
		}
		doc, err := c.parseDiscovery(raw)
		if err != nil {
			return nil, fmt.Errorf("client: discovery document at %s: %w", candidate, err)
		}
		doc.URL = candidate
		doc.Expires = c.cfg.Now().Add(cacheLifetime(header.Get("Cache-Control")))
		return doc, nil
	}
	return nil, lastErr
}

// ParseDiscovery checks a discovery document and resolves its endpoints,
// under the same rules as Client.Discover.
func (c *Client) ParseDiscovery(data []byte) (*Discovery, error) {
	return c.parseDiscovery(data)
}

func (c *Client) parseDiscovery(data []byte) (*Discovery, error) {
	var doc Discovery
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("malformed: %w", err)
	}
	if err := checkVersion(doc.Version); err != nil {
		return nil, err
	}
	if doc.Issuer == "" {
		return nil, errors.New("no issuer")
	}
	iss, err := c.checkURL(doc.Issuer)
	if err != nil {
		return nil, fmt.Errorf("issuer: %w", err)
	}
	if !slices.Contains(doc.Algorithms, agentcap.AlgorithmEd25519) {
		return nil, fmt.Errorf("algorithms %q do not include %s", doc.Algorithms, agentcap.AlgorithmEd25519)
	}
	issuer := strings.TrimRight(doc.Issuer, "/")
	given := map[string]string{
		endpointRegister:           doc.Endpoints.Register,
		endpointCapabilities:       doc.Endpoints.Capabilities,
		endpointDescribeCapability: doc.Endpoints.DescribeCapability,
		endpointExecute:            doc.Endpoints.Execute,
		endpointRequestCapability:  doc.Endpoints.RequestCapability,
		endpointStatus:             doc.Endpoints.Status,
		endpointReactivate:         doc.Endpoints.Reactivate,
		endpointRevoke:             doc.Endpoints.Revoke,
		endpointRevokeHost:         doc.Endpoints.RevokeHost,
		endpointRotateKey:          doc.Endpoints.RotateKey,
		endpointRotateHostKey:      doc.Endpoints.RotateHostKey,
		endpointIntrospect:         doc.Endpoints.Introspect,
	}
	doc.endpoints = make(map[string]string, len(given))
	for name, v := range given {
		if v == "" {
			v = standardPaths[name]
		}
		resolved, err := c.resolveEndpoint(iss, issuer, v)
		if err != nil {
			return nil, fmt.Errorf("endpoint %s: %w", name, err)
		}
		doc.endpoints[name] = resolved
	}
	doc.location = doc.DefaultLocation
	if doc.location == "" {
		doc.location = doc.endpoints[endpointExecute]
	}
	if _, err := c.checkURL(doc.location); err != nil {
		return nil, fmt.Errorf("default_location: %w", err)
	}
	return &doc, nil
}

// resolveEndpoint turns an endpoint of the document into an absolute URL.
// The protocol makes endpoints relative to the issuer; some providers
// publish absolute URLs, which must then stay on the issuer's origin.
func (c *Client) resolveEndpoint(iss *url.URL, issuer, v string) (string, error) {
	if strings.Contains(v, "://") {
		u, err := c.checkURL(v)
		if err != nil {
			return "", err
		}
		if origin(u) != origin(iss) {
			return "", fmt.Errorf("%q is not on the issuer's origin", v)
		}
		return v, nil
	}
	if !strings.HasPrefix(v, "/") {
		v = "/" + v
	}
	return issuer + v, nil
}

// checkVersion accepts MAJOR.MINOR with an optional -draft suffix and the
// supported major version.
func checkVersion(v string) error {
	if v == "" {
		return fmt.Errorf("%w: no version", ErrUnsupportedVersion)
	}
	core := strings.TrimSuffix(v, "-draft")
	major, minor, ok := strings.Cut(core, ".")
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnsupportedVersion, v)
	}
	m, err := strconv.Atoi(major)
	if err != nil || m < 0 {
		return fmt.Errorf("%w: %q", ErrUnsupportedVersion, v)
	}
	if n, err := strconv.Atoi(minor); err != nil || n < 0 {
		return fmt.Errorf("%w: %q", ErrUnsupportedVersion, v)
	}
	if m != supportedMajorVersion {
		return fmt.Errorf("%w: %q (this client speaks %d.x)", ErrUnsupportedVersion, v, supportedMajorVersion)
	}
	return nil
}

// cacheLifetime reads how long a response may be cached from its
// Cache-Control (see cachecontrol.MaxAge: no-store, no-cache and a
// max-age that does not read mean not at all), capped at
// maxDiscoveryAge; without any of them, defaultDiscoveryAge.
func cacheLifetime(cacheControl string) time.Duration {
	age, ok := cachecontrol.MaxAge(cacheControl)
	if !ok {
		return defaultDiscoveryAge
	}
	return min(age, maxDiscoveryAge)
}
