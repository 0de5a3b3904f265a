package agentauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/agentcap/agentcap"
)

// Discovery document defaults.
const (
	// discoveryCacheControl is the Cache-Control of the discovery document:
	// it is the same for every caller and changes rarely.
	discoveryCacheControl = "public, max-age=300"
)

// LocationEndpoints returns the endpoints of a capability location whose
// httpx handler is mounted at prefix, relative to the issuer ("" or "/"
// for the issuer itself): capabilities, describe_capability and execute.
func LocationEndpoints(prefix string) agentcap.Endpoints {
	p := "/" + strings.Trim(prefix, "/")
	if p != "/" {
		p += "/"
	}
	return agentcap.Endpoints{
		Capabilities:       p + agentcap.RouteList,
		DescribeCapability: p + agentcap.RouteDescribe,
		Execute:            p + agentcap.RouteExecute,
	}
}

// DiscoveryEndpoint serves one discovery document, rendered once. It is
// an http.Handler, safe for concurrent use.
type DiscoveryEndpoint struct {
	body []byte
}

// NewDiscoveryEndpoint checks doc, fills in its defaults and renders it.
func NewDiscoveryEndpoint(doc agentcap.Discovery) (*DiscoveryEndpoint, error) {
	if doc.Version == "" {
		doc.Version = agentcap.ProtocolVersion
	}
	if len(doc.Algorithms) == 0 {
		doc.Algorithms = []string{agentcap.AlgorithmEd25519}
	}
	if len(doc.Modes) == 0 {
		doc.Modes = []string{agentcap.ModeDelegated, agentcap.ModeAutonomous}
	}
	if doc.ApprovalMethods == nil {
		doc.ApprovalMethods = []string{}
	}
	if err := validateDiscovery(&doc); err != nil {
		return nil, err
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("agentauth: discovery document: %w", err)
	}
	return &DiscoveryEndpoint{body: append(body, '\n')}, nil
}

func validateDiscovery(d *agentcap.Discovery) error {
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
		if a != agentcap.AlgorithmEd25519 {
			return fail("algorithm %q is not supported: agent and host keys are Ed25519", a)
		}
	}
	for _, m := range d.Modes {
		if m != agentcap.ModeDelegated && m != agentcap.ModeAutonomous {
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
func DiscoveryHandler(doc agentcap.Discovery) http.Handler {
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
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Cache-Control", "no-store")
		h.Set("Allow", allowDiscovery)
		w.WriteHeader(http.StatusMethodNotAllowed)
		_, _ = w.Write(errDiscoveryMethod)
		return
	}
	h.Set("Cache-Control", discoveryCacheControl)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		// A write error means the client is gone; there is nobody to tell.
		_, _ = w.Write(e.body)
	}
}

// errDiscoveryMethod answers another method than GET or HEAD.
var errDiscoveryMethod = func() []byte {
	b, _ := agentcap.AppendError(nil, agentcap.NewError(agentcap.CodeMethodNotAllowed, "use GET for this endpoint"), agentcap.KeyError)
	return append(b, '\n')
}()

const allowDiscovery = "GET, HEAD"
