package agentauth

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
)

// The RFC 8037 (appendix A.3) Ed25519 public key and its RFC 7638
// thumbprint.
const (
	rfc8037JWK   = `{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`
	rfc8037Thumb = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
)

func TestJWKThumbprint(t *testing.T) {
	for _, raw := range []string{
		rfc8037JWK,
		// Members outside the thumbprint do not change it.
		`{"kid":"k1","use":"sig","alg":"EdDSA","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","crv":"Ed25519","kty":"OKP"}`,
	} {
		k, err := parsePublicJWK([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		got, err := jwkThumbprint(k)
		if err != nil || got != rfc8037Thumb {
			t.Errorf("thumbprint of %s = %q, %v; want %q", raw, got, err, rfc8037Thumb)
		}
	}
}

func TestValidateJWKS(t *testing.T) {
	key := func(extra string) string {
		return `{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"` + extra + `}`
	}
	many := func(n int) string {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = key("")
		}
		return `{"keys":[` + strings.Join(keys, ",") + `]}`
	}
	tests := []struct {
		name, body, wantErr string
	}{
		{"one key", `{"keys":[` + key(`,"kid":"k1"`) + `]}`, ""},
		{"empty set", `{"keys":[]}`, ""},
		{"other key types tolerated", `{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"},` + key("") + `]}`, ""},
		{"extra top-level members tolerated", `{"keys":[],"issuer":"x"}`, ""},
		{"at the limit", many(3), ""},
		{"over the limit", many(4), "4 keys, limit 3"},
		{"symmetric key", `{"keys":[` + key("") + `,{"kty":"oct","k":"c2VjcmV0"}]}`, "keys[1] is a symmetric (oct) key"},
		{"private key", `{"keys":[` + key(`,"d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"`) + `]}`, `keys[0] has private member "d"`},
		{"RSA private key", `{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB","p":"AQAB"}]}`, `private member "p"`},
		{"no keys member", `{"key":[]}`, `no "keys" member`},
		{"keys not an array", `{"keys":{}}`, `"keys" is not an array`},
		{"keys null", `{"keys":null}`, `"keys" is not an array`},
		{"key not an object", `{"keys":["k"]}`, "keys[0]: not a JSON object"},
		{"kty not a string", `{"keys":[{"kty":1}]}`, `"kty" is not a string`},
		{"duplicate member", `{"keys":[],"keys":[` + key("") + `]}`, "duplicate member"},
		{"not JSON", `<html>`, "malformed JSON"},
		{"trailing data", `{"keys":[]}x`, "data after the object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateJWKS([]byte(tt.body), 3)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// FuzzValidateJWKS: validateJWKS never panics, and what it accepts is an
// object holding at most the allowed number of keys, none symmetric and
// none with private members.
func FuzzValidateJWKS(f *testing.F) {
	f.Add(`{"keys":[` + rfc8037JWK + `]}`)
	f.Add(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`)
	f.Add(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}]}`)
	f.Add(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}],"x":1}`)
	f.Fuzz(func(t *testing.T, body string) {
		if validateJWKS([]byte(body), defaultFetchMaxKeys) != nil {
			return
		}
		set, err := decodeObject([]byte(body))
		if err != nil {
			t.Fatalf("accepted a body that is not an object: %v", err)
		}
		var keys []json.RawMessage
		if err := json.Unmarshal(set["keys"], &keys); err != nil || len(keys) > defaultFetchMaxKeys {
			t.Fatalf("accepted keys %s: %v", set["keys"], err)
		}
		for _, raw := range keys {
			k, err := decodeObject(raw)
			if err != nil {
				t.Fatalf("accepted a key that is not an object: %s", raw)
			}
			if kty, _ := optString(k, "kty"); kty == "oct" {
				t.Fatalf("accepted a symmetric key: %s", raw)
			}
			for _, m := range privateJWKMembers {
				if _, ok := k[m]; ok {
					t.Fatalf("accepted a key with private member %q: %s", m, raw)
				}
			}
		}
	})
}

func TestInlineKeys(t *testing.T) {
	c := newInlineKeys(2)
	k, err := c.get([]byte(rfc8037JWK))
	if err != nil {
		t.Fatal(err)
	}
	if k.thumb != rfc8037Thumb || len(k.ed.pub) != ed25519.PublicKeySize {
		t.Fatalf("key = %+v", k)
	}
	if again, _ := c.get([]byte(rfc8037JWK)); again != k {
		t.Error("the same JWK bytes were parsed again")
	}

	// The same key written differently is another entry: the cache is
	// keyed by bytes, never by what they are believed to mean.
	spaced := ` ` + rfc8037JWK
	other, err := c.get([]byte(spaced))
	if err != nil {
		t.Fatal(err)
	}
	if other == k || !other.ed.pub.Equal(k.ed.pub) {
		t.Errorf("respelled JWK: got entry %p (first %p)", other, k)
	}

	// Bad keys are refused every time and never cached.
	for range 2 {
		if _, err := c.get([]byte(`{"kty":"OKP","crv":"Ed25519","x":"AAAA"}`)); err == nil {
			t.Fatal("short key accepted")
		}
	}
	if got := c.size(); got != 2 {
		t.Fatalf("size = %d, want 2", got)
	}

	// At the bound, a new key takes the place of an old one, and an old
	// one is parsed again when it comes back.
	third := `{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"k3"}`
	if _, err := c.get([]byte(third)); err != nil {
		t.Fatal(err)
	}
	if got := c.size(); got != 2 {
		t.Fatalf("size = %d after a third key, want the bound 2", got)
	}
	for _, raw := range []string{rfc8037JWK, spaced, third} {
		if k, err := c.get([]byte(raw)); err != nil || k.thumb != rfc8037Thumb {
			t.Errorf("get(%s) = %+v, %v", raw, k, err)
		}
	}
	if got := c.size(); got != 2 {
		t.Fatalf("size = %d, want the bound 2", got)
	}
}

// TestJWKSKeySetRenews reproduces what makes go-oidc answer a key lookup
// from an earlier fetch: a remote key set whose fetches do not reach the
// fetcher. While the fetcher would fetch again, a failed verification
// moves to a fresh remote key set and succeeds with the published key;
// within the refresh floor, it fails and nothing is fetched.
func TestJWKSKeySetRenews(t *testing.T) {
	oldKey := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	current := fuzzKey.Public().(ed25519.PublicKey)
	jwks := func(pub ed25519.PublicKey, kid string) []byte {
		b, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: kid, Algorithm: string(jose.EdDSA), Use: "sig"}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Write(jwks(current, "k2"))
	}))
	defer srv.Close()

	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sets := newKeySets(FetchPolicy{AllowLoopback: true}, func() time.Time { return now })
	s, err := sets.get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	f := s.fetcher
	if !f.due() {
		t.Fatal("a fetcher that never fetched is not due")
	}
	stale := func() *oidc.RemoteKeySet {
		old := jwks(oldKey.Public().(ed25519.PublicKey), "k1")
		client := &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(bytes.NewReader(old)), Request: req}, nil
		})}
		return oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), client), srv.URL)
	}
	s.remote = stale()
	token := fuzzToken(`{"alg":"EdDSA","typ":"agent+jwt","kid":"k2"}`, `{"sub":"agt_1"}`, 0)

	payload, err := s.verify(context.Background(), token)
	if err != nil || string(payload) != `{"sub":"agt_1"}` {
		t.Fatalf("verify = %q, %v; want the payload", payload, err)
	}
	if got := hits.Load(); got != 1 {
		t.Fatalf("fetched %d times, want 1", got)
	}
	if f.due() {
		t.Fatal("the fetcher is due right after a fetch")
	}

	// Within the floor a stale set stays in place: the fetcher would
	// answer from its last fetch anyway.
	s.remote = stale()
	kept := s.remote
	if _, err := s.verify(context.Background(), token); err == nil {
		t.Fatal("a stale key set verified a key it does not hold")
	}
	if s.remote != kept || hits.Load() != 1 {
		t.Fatalf("within the floor: key set replaced = %v, fetches = %d", s.remote != kept, hits.Load())
	}

	now = now.Add(jwksMinRefresh)
	if !f.due() {
		t.Fatal("the fetcher is not due after the floor")
	}
	if _, err := s.verify(context.Background(), token); err != nil {
		t.Fatalf("after the floor: %v", err)
	}
	if got := hits.Load(); got != 2 {
		t.Fatalf("fetched %d times, want 2", got)
	}

	now = now.Add(-time.Second)
	if !f.due() {
		t.Error("the fetcher is not due after the clock went back")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
