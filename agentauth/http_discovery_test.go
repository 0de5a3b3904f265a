package agentauth_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/httpx"
)

func TestDiscoveryDocument(t *testing.T) {
	h := agentauth.DiscoveryHandler(agentauth.Discovery{
		ProviderName:    "bank",
		Description:     "Accounts & transfers",
		Issuer:          "https://bank.test",
		DefaultLocation: "https://bank.test/capability/execute",
		Endpoints:       agentauth.LocationEndpoints(""),
	})
	req := httptest.NewRequest(http.MethodGet, agentauth.DiscoveryPath, nil)
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
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, agentauth.DiscoveryPath, nil))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 || rec.Header().Get("Cache-Control") != "public, max-age=300" {
		t.Errorf("HEAD: %d %q %q", rec.Code, rec.Header().Get("Cache-Control"), rec.Body)
	}

	// Other methods.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, agentauth.DiscoveryPath, strings.NewReader("{}")))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" ||
		rec.Header().Get("Cache-Control") != "no-store" || !strings.Contains(rec.Body.String(), `"error":"method_not_allowed"`) {
		t.Errorf("POST: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
}

func TestDiscoveryServeMatchesServeHTTP(t *testing.T) {
	e, err := agentauth.NewDiscoveryEndpoint(agentauth.Discovery{
		ProviderName:    "p",
		Issuer:          "http://127.0.0.1:8080",
		Modes:           []string{agentauth.ModeDelegated},
		ApprovalMethods: []string{"device_authorization"},
		Endpoints:       agentauth.Endpoints{Execute: "/x/capability/execute", Introspect: "https://auth.test/agent/introspect"},
		JWKSURI:         "https://auth.test/jwks.json",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodDelete} {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(method, "/", nil))
		resp := e.Serve(&httpx.Request{Method: method})
		wantBody := resp.Body
		if method == http.MethodHead {
			wantBody = nil
		}
		if rec.Code != resp.Status || !cmp.Equal(rec.Header(), resp.Header) || rec.Body.String() != string(wantBody) {
			t.Errorf("%s: ServeHTTP %d %v %q, Serve %d %v %q", method, rec.Code, rec.Header(), rec.Body, resp.Status, resp.Header, resp.Body)
		}
	}
	resp := e.Serve(&httpx.Request{Method: http.MethodGet})
	resp.Body[0] = 'X'
	if e.Body()[0] != '{' {
		t.Error("a response body aliases the rendered document")
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
	ok := agentauth.Discovery{ProviderName: "p", Issuer: "https://bank.test"}
	cases := []struct {
		name   string
		change func(*agentauth.Discovery)
	}{
		{"no provider name", func(d *agentauth.Discovery) { d.ProviderName = " " }},
		{"no issuer", func(d *agentauth.Discovery) { d.Issuer = "" }},
		{"relative issuer", func(d *agentauth.Discovery) { d.Issuer = "/bank" }},
		{"issuer with credentials", func(d *agentauth.Discovery) { d.Issuer = "https://a:b@bank.test" }},
		{"bad default location", func(d *agentauth.Discovery) { d.DefaultLocation = "ftp://bank.test/x" }},
		{"bad jwks uri", func(d *agentauth.Discovery) { d.JWKSURI = "jwks.json" }},
		{"unsupported algorithm", func(d *agentauth.Discovery) { d.Algorithms = []string{"ES256"} }},
		{"unknown mode", func(d *agentauth.Discovery) { d.Modes = []string{"supervised"} }},
		{"empty approval method", func(d *agentauth.Discovery) { d.ApprovalMethods = []string{""} }},
		{"endpoint without a slash", func(d *agentauth.Discovery) { d.Endpoints.Execute = "capability/execute" }},
		{"scheme-relative endpoint", func(d *agentauth.Discovery) { d.Endpoints.Register = "//evil.test/agent/register" }},
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
