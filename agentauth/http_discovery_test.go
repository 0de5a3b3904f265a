package agentauth_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
)

func TestDiscoveryDocument(t *testing.T) {
	h := agentauth.DiscoveryHandler(agentcap.Discovery{
		ProviderName:    "bank",
		Description:     "Accounts & transfers",
		Issuer:          "https://bank.test",
		DefaultLocation: "https://bank.test/capability/execute",
		Endpoints:       agentauth.LocationEndpoints(""),
	})
	req := httptest.NewRequest(http.MethodGet, agentcap.DiscoveryPath, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)

	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	wantHeader := map[string]string{
		"Content-Type":  "application/json",
		"Cache-Control": "public, max-age=300",
	}
	for k, v := range wantHeader {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"version":          "1.0-draft",
		"provider_name":    "bank",
		"description":      "Accounts & transfers",
		"issuer":           "https://bank.test",
		"default_location": "https://bank.test/capability/execute",
		"algorithms":       []any{"Ed25519"},
		"modes":            []any{"delegated", "autonomous"},
		"approval_methods": []any{},
		"endpoints": map[string]any{
			"capabilities":        "/capability/list",
			"describe_capability": "/capability/describe",
			"execute":             "/capability/execute",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("document (-want +got):\n%s", diff)
	}

	// HEAD: the same headers, no body.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, agentcap.DiscoveryPath, nil))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 || rec.Header().Get("Cache-Control") != "public, max-age=300" {
		t.Errorf("HEAD: %d %q %q", rec.Code, rec.Header().Get("Cache-Control"), rec.Body)
	}

	// Other methods.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, agentcap.DiscoveryPath, strings.NewReader("{}")))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" ||
		rec.Header().Get("Cache-Control") != "no-store" || !strings.Contains(rec.Body.String(), `"error":"method_not_allowed"`) {
		t.Errorf("POST: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
}

// TestDiscoveryEndpointAnswers pins every byte of the answers: GET the
// rendered document, HEAD its headers alone, any other method 405 with
// the error envelope.
func TestDiscoveryEndpointAnswers(t *testing.T) {
	e, err := agentauth.NewDiscoveryEndpoint(agentcap.Discovery{
		ProviderName:    "p",
		Issuer:          "http://127.0.0.1:8080",
		Modes:           []string{agentcap.ModeDelegated},
		ApprovalMethods: []string{"device_authorization"},
		Endpoints:       agentcap.Endpoints{Execute: "/x/capability/execute", Introspect: "https://auth.test/agent/introspect"},
		JWKSURI:         "https://auth.test/jwks.json",
	})
	if err != nil {
		t.Fatal(err)
	}
	document := `{"version":"1.0-draft","provider_name":"p","issuer":"http://127.0.0.1:8080","algorithms":["Ed25519"],"modes":["delegated"],"approval_methods":["device_authorization"],"endpoints":{"execute":"/x/capability/execute","introspect":"https://auth.test/agent/introspect"},"jwks_uri":"https://auth.test/jwks.json"}` + "\n"
	if string(e.Body()) != document {
		t.Errorf("Body:\n%s\nwant\n%s", e.Body(), document)
	}
	ok := http.Header{
		"Content-Type":           {"application/json"},
		"X-Content-Type-Options": {"nosniff"},
		"Cache-Control":          {"public, max-age=300"},
	}
	refused := http.Header{
		"Content-Type":           {"application/json"},
		"X-Content-Type-Options": {"nosniff"},
		"Cache-Control":          {"no-store"},
		"Allow":                  {"GET, HEAD"},
	}
	methodNotAllowed := `{"error":"method_not_allowed","message":"use GET for this endpoint"}` + "\n"
	tests := []struct {
		method string
		status int
		header http.Header
		body   string
	}{
		{http.MethodGet, 200, ok, document},
		{http.MethodHead, 200, ok, ""},
		{http.MethodDelete, 405, refused, methodNotAllowed},
		{http.MethodPost, 405, refused, methodNotAllowed},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(tt.method, "/", nil))
		if rec.Code != tt.status || !cmp.Equal(rec.Header(), tt.header) || rec.Body.String() != tt.body {
			t.Errorf("%s: %d %v %q; want %d %v %q", tt.method, rec.Code, rec.Header(), rec.Body, tt.status, tt.header, tt.body)
		}
	}
	var doc map[string]any
	if err := json.Unmarshal(e.Body(), &doc); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"execute": "/x/capability/execute", "introspect": "https://auth.test/agent/introspect"}, doc["endpoints"]); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
	if doc["jwks_uri"] != "https://auth.test/jwks.json" || cmp.Diff([]any{"delegated"}, doc["modes"]) != "" {
		t.Errorf("document: %v", doc)
	}
}

func TestDiscoveryValidation(t *testing.T) {
	ok := agentcap.Discovery{ProviderName: "p", Issuer: "https://bank.test"}
	cases := []struct {
		name   string
		change func(*agentcap.Discovery)
	}{
		{"no provider name", func(d *agentcap.Discovery) { d.ProviderName = " " }},
		{"no issuer", func(d *agentcap.Discovery) { d.Issuer = "" }},
		{"relative issuer", func(d *agentcap.Discovery) { d.Issuer = "/bank" }},
		{"issuer with credentials", func(d *agentcap.Discovery) { d.Issuer = "https://a:b@bank.test" }},
		{"bad default location", func(d *agentcap.Discovery) { d.DefaultLocation = "ftp://bank.test/x" }},
		{"bad jwks uri", func(d *agentcap.Discovery) { d.JWKSURI = "jwks.json" }},
		{"unsupported algorithm", func(d *agentcap.Discovery) { d.Algorithms = []string{"ES256"} }},
		{"unknown mode", func(d *agentcap.Discovery) { d.Modes = []string{"supervised"} }},
		{"empty approval method", func(d *agentcap.Discovery) { d.ApprovalMethods = []string{""} }},
		{"endpoint without a slash", func(d *agentcap.Discovery) { d.Endpoints.Execute = "capability/execute" }},
		{"scheme-relative endpoint", func(d *agentcap.Discovery) { d.Endpoints.Register = "//evil.test/agent/register" }},
	}
	if _, err := agentauth.NewDiscoveryEndpoint(ok); err != nil {
		t.Fatalf("the base document is refused: %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := ok
			c.change(&d)
			if _, err := agentauth.NewDiscoveryEndpoint(d); err == nil {
				t.Error("accepted")
			}
			defer func() {
				if recover() == nil {
					t.Error("DiscoveryHandler did not panic")
				}
			}()
			agentauth.DiscoveryHandler(d)
		})
	}
}

func TestLocationEndpoints(t *testing.T) {
	cases := map[string]string{
		"":            "/capability/execute",
		"/":           "/capability/execute",
		"api/agent":   "/api/agent/capability/execute",
		"/api/agent/": "/api/agent/capability/execute",
	}
	for prefix, want := range cases {
		e := agentauth.LocationEndpoints(prefix)
		if e.Execute != want || e.Capabilities != strings.TrimSuffix(want, "execute")+"list" ||
			e.DescribeCapability != strings.TrimSuffix(want, "execute")+"describe" || e.Register != "" {
			t.Errorf("LocationEndpoints(%q) = %+v", prefix, e)
		}
	}
}
