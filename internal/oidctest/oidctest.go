// Package oidctest is a minimal OpenID provider on loopback for tests:
// discovery and a JWKS with one ES256 key, and ID tokens signed with it.
package oidctest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer is a running provider. It stops when the test ends.
type Issuer struct {
	// URL is the issuer identifier and the base of its discovery document.
	URL    string
	signer jose.Signer
	public crypto.PublicKey
}

// NewIssuer starts a provider.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	iss := &Issuer{URL: srv.URL, public: &key.PublicKey}
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                iss.URL,
			"jwks_uri":                              iss.URL + "/keys",
			"authorization_endpoint":                iss.URL + "/auth",
			"token_endpoint":                        iss.URL + "/token",
			"id_token_signing_alg_values_supported": []string{"ES256"},
		})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	})
	iss.signer, err = jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	return iss
}

// Token signs claims as an ID token of the issuer's key.
func (iss *Issuer) Token(t testing.TB, c jwt.Claims) string {
	t.Helper()
	raw, err := jwt.Signed(iss.signer).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Verifier returns a verifier of the issuer's ID tokens for audience that
// knows the issuer's key already, so that verifying needs no request to
// the provider (fuzz targets verify many tokens).
func (iss *Issuer) Verifier(audience string) *oidc.IDTokenVerifier {
	keys := &oidc.StaticKeySet{PublicKeys: []crypto.PublicKey{iss.public}}
	return oidc.NewVerifier(iss.URL, keys, &oidc.Config{ClientID: audience, SupportedSigningAlgs: []string{oidc.ES256}})
}
