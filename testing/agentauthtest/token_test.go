package agentauthtest_test

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"hash"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/testing/agentauthtest"
)

const audience = "https://bank.example/capability/execute"

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func seeded(seed byte) *rand.ChaCha8 {
	var s [32]byte
	s[0] = seed
	return rand.NewChaCha8(s)
}

func fixedClock() time.Time { return t0 }

func newAgent(t *testing.T) (*agentauthtest.Host, *agentauthtest.Agent) {
	t.Helper()
	h := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Rand: seeded(1), Clock: fixedClock})
	return h, h.NewAgent(agentauthtest.Agent{ID: "agt_1"})
}

// at is the token for audience.
var at = agentauthtest.Token{Audience: audience}

// decoded is a token split into its parts.
type decoded struct {
	header, claims map[string]any
	signature      []byte
	signingInput   string
}

func decode(t *testing.T, token string) decoded {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q has %d parts", token, len(parts))
	}
	var d decoded
	for i, dst := range []*map[string]any{&d.header, &d.claims} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatalf("segment %d: %v", i, err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(dst); err != nil {
			t.Fatalf("segment %d: %v", i, err)
		}
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatalf("signature: %v", err)
	}
	d.signature, d.signingInput = sig, parts[0]+"."+parts[1]
	return d
}

// verifyEdDSA parses token with go-jose, allowing only EdDSA, verifies it
// with pub and returns its claims.
func verifyEdDSA(t *testing.T, token string, pub ed25519.PublicKey) map[string]any {
	t.Helper()
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		t.Fatalf("go-jose cannot parse %q: %v", token, err)
	}
	payload, err := jws.Verify(pub)
	if err != nil {
		t.Fatalf("go-jose cannot verify: %v", err)
	}
	var claims map[string]any
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

func pubOf(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

func unix(t time.Time) json.Number { return json.Number(strconv.FormatInt(t.Unix(), 10)) }

func TestAgentTokenIsValid(t *testing.T) {
	_, a := newAgent(t)
	token := a.Token(at)

	claims := verifyEdDSA(t, token, pubOf(a.Key))
	jti, _ := claims["jti"].(string)
	if len(jti) < 16 {
		t.Errorf("jti %q is too short to be unique", jti)
	}
	delete(claims, "jti")
	want := map[string]any{"sub": "agt_1", "aud": audience, "iat": unix(t0), "exp": unix(t0.Add(60 * time.Second))}
	if diff := cmp.Diff(want, claims); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	d := decode(t, token)
	wantHeader := map[string]any{"alg": "EdDSA", "typ": "agent+jwt", "kid": a.Thumbprint()}
	if diff := cmp.Diff(wantHeader, d.header); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
}

func TestTokenFields(t *testing.T) {
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	tests := []struct {
		name        string
		tok         agentauthtest.Token
		wantHeader  map[string]any // members that must have these values
		wantClaims  map[string]any
		absentClaim []string
		absentHead  []string
	}{
		{name: "capabilities", tok: agentauthtest.Token{Capabilities: []string{"transfer", "read"}},
			wantClaims: map[string]any{"capabilities": []any{"transfer", "read"}}},
		{name: "empty capabilities is an empty array", tok: agentauthtest.Token{Capabilities: []string{}},
			wantClaims: map[string]any{"capabilities": []any{}}},
		{name: "no capabilities claim by default", absentClaim: []string{"capabilities", "iss"}},
		{name: "issuer", tok: agentauthtest.Token{Issuer: "hst_1"},
			wantClaims: map[string]any{"iss": "hst_1"}},
		{name: "issued at", tok: agentauthtest.Token{IssuedAt: t0.Add(-time.Hour)},
			wantClaims: map[string]any{"iat": unix(t0.Add(-time.Hour)), "exp": unix(t0.Add(-time.Hour + time.Minute))}},
		{name: "lifetime", tok: agentauthtest.Token{Lifetime: 10 * time.Minute},
			wantClaims: map[string]any{"iat": unix(t0), "exp": unix(t0.Add(10 * time.Minute))}},
		{name: "expiry wins over lifetime", tok: agentauthtest.Token{Expiry: t0.Add(-time.Second), Lifetime: time.Hour},
			wantClaims: map[string]any{"iat": unix(t0), "exp": unix(t0.Add(-time.Second))}},
		{name: "jti", tok: agentauthtest.Token{JTI: "jti-1"},
			wantClaims: map[string]any{"jti": "jti-1"}},
		{name: "claim overrides", tok: agentauthtest.Token{Claims: map[string]any{"aud": []string{"a", audience}, "cnf": map[string]string{"jkt": "x"}}},
			wantClaims: map[string]any{"aud": []any{"a", audience}, "cnf": map[string]any{"jkt": "x"}}},
		{name: "claim wins over fields", tok: agentauthtest.Token{Claims: map[string]any{"jti": 5}, JTI: "x"},
			wantClaims: map[string]any{"jti": json.Number("5")}},
		{name: "empty jti claim", tok: agentauthtest.Token{Claims: map[string]any{"jti": ""}},
			wantClaims: map[string]any{"jti": ""}},
		{name: "null claim", tok: agentauthtest.Token{Claims: map[string]any{"iss": json.RawMessage("null"), "capabilities": []string(nil)}},
			wantClaims: map[string]any{"iss": nil, "capabilities": nil}},
		{name: "nil removes claims", tok: agentauthtest.Token{Claims: map[string]any{"jti": nil, "exp": nil}},
			absentClaim: []string{"jti", "exp"}},
		{name: "extra headers", tok: agentauthtest.Token{Header: map[string]any{"jku": "https://evil.example/jwks", "crit": []string{"exp"}}},
			wantHeader: map[string]any{"jku": "https://evil.example/jwks", "crit": []any{"exp"}, "alg": "EdDSA"}},
		{name: "embedded jwk header", tok: agentauthtest.Token{Header: map[string]any{"jwk": agentauthtest.PublicJWK(pubOf(other))}},
			wantHeader: map[string]any{"jwk": map[string]any{"crv": "Ed25519", "kty": "OKP", "kid": agentauthtest.Thumbprint(pubOf(other)), "x": base64.RawURLEncoding.EncodeToString(pubOf(other))}}},
		{name: "nil removes a header", tok: agentauthtest.Token{Header: map[string]any{"kid": nil}}, absentHead: []string{"kid"}},
		{name: "wrong type", tok: agentauthtest.Token{Type: "host+jwt"},
			wantHeader: map[string]any{"typ": "host+jwt"}},
		{name: "header wins over fields", tok: agentauthtest.Token{Header: map[string]any{"typ": "JWT"}, Type: "x"},
			wantHeader: map[string]any{"typ": "JWT"}},
		{name: "agent key ignored in an agent token", tok: agentauthtest.Token{Agent: agentauthtest.NewHost(agentauthtest.Host{ID: "h", Rand: seeded(2)}).NewAgent(agentauthtest.Agent{ID: "a"})},
			absentClaim: []string{"agent_public_key", "agent_jwks_url", "agent_kid"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, a := newAgent(t)
			tok := tc.tok
			tok.Audience = audience
			d := decode(t, a.Token(tok))
			for k, want := range tc.wantHeader {
				if diff := cmp.Diff(want, d.header[k]); diff != "" {
					t.Errorf("header %q (-want +got):\n%s", k, diff)
				}
			}
			for k, want := range tc.wantClaims {
				got, ok := d.claims[k]
				if !ok {
					t.Errorf("claim %q absent", k)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("claim %q (-want +got):\n%s", k, diff)
				}
			}
			for _, k := range tc.absentClaim {
				if v, ok := d.claims[k]; ok {
					t.Errorf("claim %q = %v, want absent", k, v)
				}
			}
			for _, k := range tc.absentHead {
				if v, ok := d.header[k]; ok {
					t.Errorf("header %q = %v, want absent", k, v)
				}
			}
			// Whatever the claims, the default algorithm still signs
			// properly, so a verifier fails for the intended reason only.
			if !ed25519.Verify(pubOf(a.Key), []byte(d.signingInput), d.signature) {
				t.Error("signature does not verify")
			}
		})
	}
}

func TestBrokenAlgorithms(t *testing.T) {
	_, a := newAgent(t)
	pub := pubOf(a.Key)

	t.Run("none", func(t *testing.T) {
		token := a.Token(agentauthtest.Token{Audience: audience, Algorithm: "none"})
		if !strings.HasSuffix(token, ".") {
			t.Errorf("token %q does not end with an empty signature", token)
		}
		d := decode(t, token)
		if d.header["alg"] != "none" || len(d.signature) != 0 {
			t.Errorf("header %v, signature %x: want alg none and no signature", d.header, d.signature)
		}
		if _, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.EdDSA}); err == nil {
			t.Error("go-jose accepted an unsigned token as EdDSA")
		}
	})

	for _, tc := range []struct {
		alg     jose.SignatureAlgorithm
		newHash func() hash.Hash
	}{{jose.HS256, sha256.New}, {jose.HS384, sha512.New384}, {jose.HS512, sha512.New}} {
		t.Run(string(tc.alg), func(t *testing.T) {
			token := a.Token(agentauthtest.Token{Audience: audience, Algorithm: string(tc.alg)})
			if _, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.EdDSA}); err == nil {
				t.Error("go-jose accepted an HMAC token as EdDSA")
			}
			d := decode(t, token)
			if d.header["alg"] != string(tc.alg) {
				t.Errorf("alg = %v", d.header["alg"])
			}
			// It really is an HMAC keyed with the public key bytes.
			m := hmac.New(tc.newHash, pub)
			m.Write([]byte(d.signingInput))
			if !hmac.Equal(m.Sum(nil), d.signature) {
				t.Errorf("signature is not %s keyed with the public key", tc.alg)
			}
		})
	}
	t.Run("HS256 verifies with go-jose", func(t *testing.T) {
		jws, err := jose.ParseSignedCompact(a.Token(agentauthtest.Token{Audience: audience, Algorithm: "HS256"}), []jose.SignatureAlgorithm{jose.HS256})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jws.Verify([]byte(pub)); err != nil {
			t.Errorf("HMAC with the public key does not verify: %v", err)
		}
	})

	t.Run("ES256 label on an Ed25519 signature", func(t *testing.T) {
		token := a.Token(agentauthtest.Token{Audience: audience, Algorithm: "ES256"})
		d := decode(t, token)
		if d.header["alg"] != "ES256" {
			t.Errorf("alg = %v", d.header["alg"])
		}
		if !ed25519.Verify(pub, []byte(d.signingInput), d.signature) {
			t.Error("signature is not an Ed25519 signature")
		}
		if _, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.EdDSA}); err == nil {
			t.Error("go-jose accepted an ES256-labelled token as EdDSA")
		}
	})

	t.Run("wrong signing key", func(t *testing.T) {
		other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
		token := a.Token(agentauthtest.Token{Audience: audience, SigningKey: other})
		jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.EdDSA})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jws.Verify(pub); err == nil {
			t.Error("token signed with another key verifies with the agent's key")
		}
		if _, err := jws.Verify(pubOf(other)); err != nil {
			t.Errorf("token does not verify with the key that signed it: %v", err)
		}
		if kid := jws.Signatures[0].Header.KeyID; kid != a.Thumbprint() {
			t.Errorf("kid = %q, want the agent's thumbprint", kid)
		}
	})
}

func TestHostToken(t *testing.T) {
	h := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Rand: seeded(2), Clock: fixedClock})
	inline := h.NewAgent(agentauthtest.Agent{ID: "agt_inline"})
	remote := h.NewAgent(agentauthtest.Agent{ID: "agt_remote", JWKSURL: "https://agents.example/jwks"})

	claims := verifyEdDSA(t, h.Token(agentauthtest.Token{Audience: "https://bank.example", Agent: inline}), pubOf(h.Key))
	delete(claims, "jti")
	var hostJWK, agentJWK map[string]any
	if err := json.Unmarshal(h.PublicJWK(), &hostJWK); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(inline.PublicJWK(), &agentJWK); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"iss": h.Thumbprint(), "aud": "https://bank.example", "iat": unix(t0), "exp": unix(t0.Add(time.Minute)),
		"host_public_key": hostJWK, "agent_public_key": agentJWK,
	}
	if diff := cmp.Diff(want, claims); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	d := decode(t, h.Token(agentauthtest.Token{Audience: "https://bank.example"}))
	if diff := cmp.Diff(map[string]any{"alg": "EdDSA", "typ": "host+jwt", "kid": h.Thumbprint()}, d.header); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	if _, ok := d.claims["agent_public_key"]; ok {
		t.Error("agent_public_key present without Token.Agent")
	}

	d = decode(t, h.Token(agentauthtest.Token{Audience: "https://bank.example", Agent: remote}))
	if d.claims["agent_jwks_url"] != "https://agents.example/jwks" || d.claims["agent_kid"] != remote.Thumbprint() {
		t.Errorf("claims %v: want agent_jwks_url and agent_kid", d.claims)
	}

	jh := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_2", JWKSURL: "https://host.example/jwks"})
	d = decode(t, jh.Token(agentauthtest.Token{Audience: "https://bank.example"}))
	if d.claims["host_jwks_url"] != "https://host.example/jwks" || d.claims["host_public_key"] != nil {
		t.Errorf("claims %v: want host_jwks_url and no host_public_key", d.claims)
	}
	if d.claims["iss"] != jh.Thumbprint() {
		t.Errorf("iss = %v, want the thumbprint", d.claims["iss"])
	}
}

func TestDeterminism(t *testing.T) {
	mint := func() (string, string, string) {
		h := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Rand: seeded(3), Clock: fixedClock})
		a := h.NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("transfer", map[string]any{"amount": map[string]any{"max": 1000}})
		return a.Token(at), h.Token(at), string(a.Record().PublicKey)
	}
	a1, h1, k1 := mint()
	a2, h2, k2 := mint()
	if a1 != a2 || h1 != h2 || k1 != k2 {
		t.Error("the same seed and clock gave different keys or tokens")
	}

	// Tokens of one agent differ by their jti.
	_, a := newAgent(t)
	seen := map[string]bool{}
	for range 100 {
		jti := decode(t, a.Token(at)).claims["jti"].(string)
		if seen[jti] {
			t.Fatalf("jti %q repeated", jti)
		}
		seen[jti] = true
	}
}

func TestDefaultRandomness(t *testing.T) {
	h1, h2 := agentauthtest.NewHost(agentauthtest.Host{ID: "a"}), agentauthtest.NewHost(agentauthtest.Host{ID: "b"})
	if h1.Key.Equal(h2.Key) {
		t.Error("two hosts without a random source share a key")
	}
	a := h1.NewAgent(agentauthtest.Agent{ID: "agt"})
	if a.Key.Equal(h1.Key) {
		t.Error("agent shares its host's key")
	}
	before := time.Now().Add(-time.Second).Unix()
	iat, err := decode(t, a.Token(at)).claims["iat"].(json.Number).Int64()
	if err != nil || iat < before || iat > time.Now().Add(time.Second).Unix() {
		t.Errorf("iat %d (%v) is not now by default", iat, err)
	}
}

// TestThumbprintRFC8037 checks the RFC 7638 thumbprint against the example
// Ed25519 key of RFC 8037, Appendix A.1 and A.3.
func TestThumbprintRFC8037(t *testing.T) {
	seed, err := base64.RawURLEncoding.DecodeString("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
	if err != nil {
		t.Fatal(err)
	}
	key := ed25519.NewKeyFromSeed(seed)
	if x := base64.RawURLEncoding.EncodeToString(pubOf(key)); x != "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" {
		t.Fatalf("public key x = %s, want the RFC 8037 A.1 value", x)
	}
	const want = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
	h := agentauthtest.NewHost(agentauthtest.Host{ID: "hst", Key: key})
	a := h.NewAgent(agentauthtest.Agent{ID: "agt", Key: key})
	for name, got := range map[string]string{"Host": h.Thumbprint(), "Agent": a.Thumbprint(), "func": agentauthtest.Thumbprint(pubOf(key))} {
		if got != want {
			t.Errorf("%s thumbprint = %s, want %s", name, got, want)
		}
	}
	// go-jose agrees for other keys too.
	for i := range 5 {
		k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(i)}, 32))
		tp, err := (&jose.JSONWebKey{Key: pubOf(k)}).Thumbprint(crypto.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		if got := agentauthtest.Thumbprint(pubOf(k)); got != base64.RawURLEncoding.EncodeToString(tp) {
			t.Errorf("key %d: thumbprint %s, go-jose %s", i, got, base64.RawURLEncoding.EncodeToString(tp))
		}
	}
}

func TestPublicJWK(t *testing.T) {
	_, a := newAgent(t)
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON(a.PublicJWK()); err != nil {
		t.Fatal(err)
	}
	if !k.IsPublic() || !k.Valid() || !pubOf(a.Key).Equal(k.Key) || k.KeyID != a.Thumbprint() {
		t.Errorf("JWK %s does not describe the agent's public key", a.PublicJWK())
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(a.JWKS(), &set); err != nil {
		t.Fatal(err)
	}
	if keys := set.Key(a.Thumbprint()); len(keys) != 1 || !pubOf(a.Key).Equal(keys[0].Key) {
		t.Errorf("JWKS %s does not hold the agent's key under its kid", a.JWKS())
	}
	if strings.Contains(string(a.PublicJWK()), `"d"`) {
		t.Error("public JWK carries a private member")
	}
}
