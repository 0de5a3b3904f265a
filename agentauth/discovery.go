package agentauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/agentcap/agentcap/httpx"
)

// Discovery document defaults.
const (
	// ProtocolVersion is the protocol version agentauth speaks.
	ProtocolVersion = "1.0-draft"
	// AlgorithmEd25519 is the only key type agent and host keys may have.
	AlgorithmEd25519 = "Ed25519"
	// DiscoveryCacheControl is the Cache-Control of the discovery document:
	// it is the same for every caller and changes rarely.
	DiscoveryCacheControl = "public, max-age=300"
)

// Discovery is the document a server publishes at DiscoveryPath
// (protocol §5.1), with the protocol's field names.
type Discovery struct {
	// Version is the protocol version; empty means ProtocolVersion.
	Version string `json:"version"`
	// ProviderName identifies the provider. Required.
	ProviderName string `json:"provider_name"`
	// Description is a human-readable description of the service.
	Description string `json:"description,omitempty"`
	// Issuer is the base URL endpoints are relative to. Required: an
	// absolute http or https URL.
	Issuer string `json:"issuer"`
	// DefaultLocation is the absolute URL where capabilities without a
	// location of their own execute: the "aud" of their agent JWTs.
	DefaultLocation string `json:"default_location,omitempty"`
	// Algorithms lists the supported key types; empty means Ed25519, the
	// only one agentauth verifies.
	Algorithms []string `json:"algorithms"`
	// Modes lists the supported agent modes; empty means both delegated
	// and autonomous.
	Modes []string `json:"modes"`
	// ApprovalMethods lists how users approve agents and capabilities
	// (device_authorization, ciba, ...); empty for a server that approves
	// nothing itself.
	ApprovalMethods []string `json:"approval_methods"`
	// Endpoints are the server's endpoints, relative to Issuer. List only
	// those the server serves.
	Endpoints Endpoints `json:"endpoints"`
	// JWKSURI is the URL of the server's own JWK Set, if it has one.
	JWKSURI string `json:"jwks_uri,omitempty"`
}

// Endpoints are the paths of a server's endpoints, relative to its
// issuer. Empty members are left out of the document.
type Endpoints struct {
	Register           string `json:"register,omitempty"`
	Capabilities       string `json:"capabilities,omitempty"`
	DescribeCapability string `json:"describe_capability,omitempty"`
	Execute            string `json:"execute,omitempty"`
	RequestCapability  string `json:"request_capability,omitempty"`
	Status             string `json:"status,omitempty"`
	Reactivate         string `json:"reactivate,omitempty"`
	Revoke             string `json:"revoke,omitempty"`
	RevokeHost         string `json:"revoke_host,omitempty"`
	RotateKey          string `json:"rotate_key,omitempty"`
	RotateHostKey      string `json:"rotate_host_key,omitempty"`
	Introspect         string `json:"introspect,omitempty"`
}

// LocationEndpoints returns the endpoints of a capability location whose
// httpx handler is mounted at prefix, relative to the issuer ("" or "/"
// for the issuer itself): capabilities, describe_capability and execute.
func LocationEndpoints(prefix string) Endpoints {
	p := "/" + strings.Trim(prefix, "/")
	if p != "/" {
		p += "/"
	}
	return Endpoints{
		Capabilities:       p + httpx.RouteList,
		DescribeCapability: p + httpx.RouteDescribe,
		Execute:            p + httpx.RouteExecute,
	}
}

// DiscoveryEndpoint serves one discovery document, rendered once. It is
// an http.Handler and, through Serve, a handler for routers that are not
// net/http. It is safe for concurrent use.
type DiscoveryEndpoint struct {
	body []byte
}

// NewDiscoveryEndpoint checks doc, fills in its defaults and renders it.
func NewDiscoveryEndpoint(doc Discovery) (*DiscoveryEndpoint, error) {
	if doc.Version == "" {
		doc.Version = ProtocolVersion
	}
	if len(doc.Algorithms) == 0 {
		doc.Algorithms = []string{AlgorithmEd25519}
	}
	if len(doc.Modes) == 0 {
		doc.Modes = []string{ModeDelegated, ModeAutonomous}
	}
	if doc.ApprovalMethods == nil {
		doc.ApprovalMethods = []string{}
	}
	if err := doc.validate(); err != nil {
		return nil, err
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("agentauth: discovery document: %w", err)
	}
	return &DiscoveryEndpoint{body: append(body, '\n')}, nil
}

func (d *Discovery) validate() error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("agentauth: discovery document: "+format, args...)
	}
	if strings.TrimSpace(d.ProviderName) == "" {
		return fail("provider_name is required")
	}
	if err := checkAbsoluteURL(d.Issuer); err != nil {
		return fail("issuer: %w", err)
	}
	if d.DefaultLocation != "" {
		if err := checkAbsoluteURL(d.DefaultLocation); err != nil {
			return fail("default_location: %w", err)
		}
	}
	if d.JWKSURI != "" {
		if err := checkAbsoluteURL(d.JWKSURI); err != nil {
			return fail("jwks_uri: %w", err)
		}
	}
	for _, a := range d.Algorithms {
		if a != AlgorithmEd25519 {
			return fail("algorithm %q is not supported: agent and host keys are Ed25519", a)
		}
	}
	for _, m := range d.Modes {
		if m != ModeDelegated && m != ModeAutonomous {
			return fail("mode %q is not one of delegated, autonomous", m)
		}
	}
	if slices.Contains(d.ApprovalMethods, "") {
		return fail("approval_methods has an empty entry")
	}
	e := d.Endpoints
	for _, ep := range []struct{ name, value string }{
		{"register", e.Register}, {"capabilities", e.Capabilities},
		{"describe_capability", e.DescribeCapability}, {"execute", e.Execute},
		{"request_capability", e.RequestCapability}, {"status", e.Status},
		{"reactivate", e.Reactivate}, {"revoke", e.Revoke}, {"revoke_host", e.RevokeHost},
		{"rotate_key", e.RotateKey}, {"rotate_host_key", e.RotateHostKey}, {"introspect", e.Introspect},
	} {
		if ep.value == "" {
			continue
		}
		if !strings.HasPrefix(ep.value, "/") || strings.HasPrefix(ep.value, "//") {
			if err := checkAbsoluteURL(ep.value); err != nil {
				return fail("endpoints.%s %q is neither a path starting with / nor an absolute URL", ep.name, ep.value)
			}
		}
	}
	return nil
}

func checkAbsoluteURL(s string) error {
	if s == "" {
		return errors.New("is required")
	}
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("%q is not an absolute http(s) URL without credentials or fragment", s)
	}
	return nil
}

// DiscoveryHandler returns an http.Handler serving doc, for
// GET /.well-known/agent-configuration. It panics if doc is invalid (see
// NewDiscoveryEndpoint, which returns the error instead), as the
// document is fixed when the server is written.
func DiscoveryHandler(doc Discovery) http.Handler {
	e, err := NewDiscoveryEndpoint(doc)
	if err != nil {
		panic(err)
	}
	return e
}

// Body returns the rendered document. It must not be modified.
func (e *DiscoveryEndpoint) Body() []byte { return e.body }

// ServeHTTP answers GET and HEAD with the document; other methods get 405.
func (e *DiscoveryEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	resp := e.respond(r.Method)
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.Status)
	if r.Method != http.MethodHead {
		// A write error means the client is gone; there is nobody to tell.
		_, _ = w.Write(resp.Body)
	}
}

// Serve answers a transport-neutral request, for routers that are not
// net/http. For HEAD the body is left to the router, which knows not to
// send it.
func (e *DiscoveryEndpoint) Serve(req *httpx.Request) *httpx.Response {
	return e.respond(req.Method)
}

const allowDiscovery = "GET, HEAD"

func (e *DiscoveryEndpoint) respond(method string) *httpx.Response {
	h := http.Header{
		"Content-Type":           {"application/json"},
		"X-Content-Type-Options": {"nosniff"},
	}
	if method != http.MethodGet && method != http.MethodHead {
		h.Set("Cache-Control", "no-store")
		h.Set("Allow", allowDiscovery)
		return &httpx.Response{Status: http.StatusMethodNotAllowed, Header: h,
			Body: []byte(`{"error":"method_not_allowed","message":"use GET for this endpoint"}` + "\n")}
	}
	h.Set("Cache-Control", DiscoveryCacheControl)
	return &httpx.Response{Status: http.StatusOK, Header: h, Body: bytes.Clone(e.body)}
}
