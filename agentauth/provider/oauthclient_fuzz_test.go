package provider

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// checkAcceptedRedirects fails t for a redirect URI that no rule admits.
func checkAcceptedRedirects(t *testing.T, uris []string, web bool) {
	t.Helper()
	if len(uris) == 0 || len(uris) > maxRedirectURIs {
		t.Fatalf("%d redirect URIs accepted", len(uris))
	}
	for _, raw := range uris {
		u, err := url.Parse(raw)
		if err != nil || !u.IsAbs() || strings.Contains(raw, "#") || u.User != nil || len(raw) > maxRedirectURIBytes {
			t.Fatalf("redirect URI %q accepted", raw)
		}
		if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
			t.Fatalf("http redirect URI %q to a host that is not loopback accepted", raw)
		}
		if web && u.Scheme != "https" && u.Scheme != "http" {
			t.Fatalf("redirect URI %q of scheme %q accepted for a registration", raw, u.Scheme)
		}
	}
}

func checkAcceptedName(t *testing.T, name string) {
	t.Helper()
	if !utf8.ValidString(name) || utf8.RuneCountInString(name) > maxNameRunes || name != displayText(name, maxNameRunes) {
		t.Fatalf("client name %q accepted as it is", name)
	}
}

// FuzzClientMetadataDocument feeds client ids and documents to the
// checks of a Client ID Metadata Document: they never panic, a client id
// they accept is an https URL with a path, and a document they accept
// names that client id and bounded, absolute redirect URIs.
func FuzzClientMetadataDocument(f *testing.F) {
	f.Add("https://client.example/app.json", []byte(`{"client_id":"https://client.example/app.json","client_name":"App","redirect_uris":["http://127.0.0.1/cb","com.example.app:/cb"]}`))
	f.Add("https://client.example/app.json", []byte(`{"client_id":"https://client.example/app.json","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"none","client_name":null}`))
	f.Add("https://client.example/app.json", []byte(`{"client_id":"https://client.example/app.json","redirect_uris":["https://a.example/cb"],"redirect_uris":["https://b.example/cb"]}`))
	f.Add("https://client.example/app.json", []byte(`{"client_id":"https://client.example/app.json","redirect_uris":["https://a.example/cb#f"],"token_endpoint_auth_method":"client_secret_basic"}`))
	f.Add("https://client.example/a/../b", []byte(`{}`))
	f.Add("https://u@client.example/app", []byte(`[]`))
	f.Add("https://client.example/", []byte(`{"client_id":"https://client.example/"}`))
	f.Fuzz(func(t *testing.T, id string, doc []byte) {
		if checkClientIDURL(id) != nil {
			return
		}
		u, err := url.Parse(id)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Path == "" || u.Path == "/" || u.Fragment != "" {
			t.Fatalf("client id %q accepted", id)
		}
		c, err := parseClientDocument(id, doc)
		if err != nil {
			return
		}
		if c.id != id || c.kind != clientKindMetadata || c.origin != "https://"+u.Host {
			t.Fatalf("document for %q gave %+v", id, c)
		}
		checkAcceptedRedirects(t, c.redirectURIs, false)
		checkAcceptedName(t, c.name)
	})
}

// FuzzRegistrationRequest feeds registration request bodies to their
// parser: it never panics, what it accepts has bounded https or loopback
// http redirect URIs, and the client_id sealed for it opens to the same
// redirect URIs and name, and to nothing once changed.
func FuzzRegistrationRequest(f *testing.F) {
	f.Add([]byte(`{"redirect_uris":["http://127.0.0.1:5000/cb","https://a.example/cb"],"client_name":"A","grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none"}`))
	f.Add([]byte(`{"redirect_uris":["http://[::1]/cb"],"client_name":"\u202eevil","scope":"x"}`))
	f.Add([]byte(`{"redirect_uris":["http://client.example/cb"]}`))
	f.Add([]byte(`{"redirect_uris":["https://a.example/cb"],"grant_types":["client_credentials"]}`))
	f.Add([]byte(`{"redirect_uris":"https://a.example/cb"}`))
	f.Add([]byte(`{"redirect_uris":["https://a.example/cb"],"a":{"b":1,"b":2}}`))
	now := time.Unix(1_900_000_000, 0)
	p := &Provider{
		pageSecret: []byte("0123456789abcdef0123456789abcdef"),
		now:        func() time.Time { return now },
		clientSet:  &oauthClientSet{dynamic: true, lifetime: defaultRegistrationLifetime},
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		md, err := parseRegistrationRequest(body)
		if err != nil {
			var e *clientMetadataError
			if !errors.As(err, &e) || (e.code != "invalid_redirect_uri" && e.code != "invalid_client_metadata") || e.description == "" {
				t.Fatalf("refusal %v is no RFC 7591 error", err)
			}
			return
		}
		checkAcceptedRedirects(t, md.redirectURIs, true)
		checkAcceptedName(t, md.name)
		id, issued, err := p.sealDynamicClient(md)
		if err != nil || !issued.Equal(now) {
			t.Fatalf("sealing: %v, %v", issued, err)
		}
		c, err := p.openDynamicClient(id)
		if err != nil || c.id != id || c.kind != clientKindDynamic || c.name != md.name ||
			!slices.Equal(c.redirectURIs, md.redirectURIs) || !c.issuedAt.Equal(now) {
			t.Fatalf("the sealed registration opened to %+v, %v", c, err)
		}
		for i := len(dynamicClientPrefix); i < len(id); i += 1 + len(id)/16 {
			b := []byte(id)
			b[i] ^= 0x20
			if c, err := p.openDynamicClient(string(b)); err == nil && string(b) != id {
				t.Fatalf("a changed client id opened: %q gave %+v", b, c)
			}
		}
	})
}
