package agentauthtest

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"hash"
	"slices"
	"time"
)

// DefaultLifetime is the lifetime of minted tokens, exp - iat, as the
// published Agent Auth client uses it.
const DefaultLifetime = 60 * time.Second

// TokenOption changes a minted token, to make unusual valid tokens or
// deliberately broken ones.
type TokenOption func(*tokenConfig)

type tokenConfig struct {
	now          *time.Time
	issuedAt     *time.Time
	lifetime     time.Duration
	expiry       *time.Time
	jti          *string
	issuer       *string
	capabilities []string
	hasCaps      bool
	typ          *string
	alg          string
	key          ed25519.PrivateKey
	agentKey     *Agent
	headers      map[string]any
	claims       map[string]any
	dropHeaders  []string
	dropClaims   []string
}

// WithCapabilities sets the "capabilities" claim. With no names the claim
// is an empty array, which allows nothing.
func WithCapabilities(names ...string) TokenOption {
	return func(c *tokenConfig) {
		c.capabilities = append([]string{}, names...)
		c.hasCaps = true
	}
}

// WithIssuer sets the "iss" claim of an agent JWT (absent by default, as
// the published client sends it) or replaces the thumbprint in a host JWT.
func WithIssuer(iss string) TokenOption {
	return func(c *tokenConfig) { c.issuer = &iss }
}

// WithNow sets the time the token is minted at, overriding the host's
// clock. iat is this time unless WithIssuedAt says otherwise.
func WithNow(t time.Time) TokenOption {
	return func(c *tokenConfig) { c.now = &t }
}

// WithIssuedAt sets "iat". exp follows it unless WithExpiry is given.
func WithIssuedAt(t time.Time) TokenOption {
	return func(c *tokenConfig) { c.issuedAt = &t }
}

// WithLifetime sets exp to iat + d instead of iat + DefaultLifetime.
func WithLifetime(d time.Duration) TokenOption {
	return func(c *tokenConfig) { c.lifetime = d }
}

// WithExpiry sets "exp" to t regardless of iat.
func WithExpiry(t time.Time) TokenOption {
	return func(c *tokenConfig) { c.expiry = &t }
}

// WithJTI sets "jti" instead of a random id, for replay tests.
func WithJTI(jti string) TokenOption {
	return func(c *tokenConfig) { c.jti = &jti }
}

// WithType sets the header's "typ", for token-confusion tests (a host+jwt
// presented as an agent token, or the reverse).
func WithType(typ string) TokenOption {
	return func(c *tokenConfig) { c.typ = &typ }
}

// WithAlgorithm sets the header's "alg" and signs accordingly:
//
//   - "EdDSA" (the default): an Ed25519 signature;
//   - "none": no signature at all (the token ends with a dot);
//   - "HS256", "HS384", "HS512": an HMAC keyed with the raw bytes of the
//     holder's public key, the classic key-confusion attack against a
//     verifier that lets the token pick the algorithm;
//   - anything else, such as "ES256" or "RS256": the header claims that
//     algorithm over an Ed25519 signature.
func WithAlgorithm(alg string) TokenOption {
	return func(c *tokenConfig) { c.alg = alg }
}

// WithSigningKey signs with k instead of the holder's key; the header's
// kid still names the holder's key.
func WithSigningKey(k ed25519.PrivateKey) TokenOption {
	return func(c *tokenConfig) { c.key = k }
}

// WithHeader adds or replaces a protected header member, such as "jwk",
// "jku", "x5u" or "crit". Members replaced this way win over every other
// option.
func WithHeader(name string, value any) TokenOption {
	return func(c *tokenConfig) {
		if c.headers == nil {
			c.headers = map[string]any{}
		}
		c.headers[name] = value
	}
}

// WithoutHeader removes a protected header member, such as "kid" or "typ".
func WithoutHeader(name string) TokenOption {
	return func(c *tokenConfig) { c.dropHeaders = append(c.dropHeaders, name) }
}

// WithClaim adds or replaces a claim, for example an array "aud" or a
// string "exp". Claims set this way win over every other option.
func WithClaim(name string, value any) TokenOption {
	return func(c *tokenConfig) {
		if c.claims == nil {
			c.claims = map[string]any{}
		}
		c.claims[name] = value
	}
}

// WithoutClaim removes a claim, such as "jti" or "exp".
func WithoutClaim(name string) TokenOption {
	return func(c *tokenConfig) { c.dropClaims = append(c.dropClaims, name) }
}

// WithAgentPublicKey adds a's key to a host JWT, as registration requires:
// "agent_public_key" for an inline key, or "agent_jwks_url" and
// "agent_kid" when a has a JWKS URL.
func WithAgentPublicKey(a *Agent) TokenOption {
	return func(c *tokenConfig) { c.agentKey = a }
}

// Token returns an agent+jwt for audience (the capability's location, or
// the server's default location) signed by a, shaped like the published
// client's: header {alg: EdDSA, typ: agent+jwt, kid: thumbprint}, claims
// {sub, aud, iat, exp = iat + 60 s, jti}, plus "capabilities" and "iss"
// when asked for. It panics if a claim or header value cannot be encoded.
func (a *Agent) Token(audience string, opts ...TokenOption) string {
	c := newTokenConfig(opts)
	claims := map[string]any{"sub": a.ID, "aud": audience}
	if c.issuer != nil {
		claims["iss"] = *c.issuer
	}
	if c.hasCaps {
		claims["capabilities"] = c.capabilities
	}
	return a.Host.mint(c, "agent+jwt", a.Key, a.Thumbprint(), claims)
}

// Token returns a host+jwt for audience (the server's issuer) signed by h:
// header {alg: EdDSA, typ: host+jwt, kid: thumbprint}, claims {iss:
// thumbprint, aud, iat, exp = iat + 60 s, jti} and "host_public_key" (or
// "host_jwks_url" when h has a JWKS URL). WithAgentPublicKey adds an
// agent's key for registration. It panics if a value cannot be encoded.
func (h *Host) Token(audience string, opts ...TokenOption) string {
	c := newTokenConfig(opts)
	claims := map[string]any{"iss": h.Thumbprint(), "aud": audience}
	if c.issuer != nil {
		claims["iss"] = *c.issuer
	}
	if h.JWKSURL != "" {
		claims["host_jwks_url"] = h.JWKSURL
	} else {
		claims["host_public_key"] = h.PublicJWK()
	}
	if a := c.agentKey; a != nil {
		if a.JWKSURL != "" {
			claims["agent_jwks_url"] = a.JWKSURL
			claims["agent_kid"] = a.Thumbprint()
		} else {
			claims["agent_public_key"] = a.PublicJWK()
		}
	}
	if c.hasCaps {
		claims["capabilities"] = c.capabilities
	}
	return h.mint(c, "host+jwt", h.Key, h.Thumbprint(), claims)
}

func newTokenConfig(opts []TokenOption) *tokenConfig {
	c := &tokenConfig{lifetime: DefaultLifetime, alg: "EdDSA"}
	for _, o := range opts {
		o(c)
	}
	return c
}

// mint fills in the common claims and header and builds the compact
// serialization by hand, so that tokens no JOSE library would sign (alg
// none, HMAC keyed with a public key, a mislabelled algorithm) can be made
// too.
func (h *Host) mint(c *tokenConfig, typ string, key ed25519.PrivateKey, kid string, claims map[string]any) string {
	now := h.now()
	if c.now != nil {
		now = *c.now
	}
	iat := now
	if c.issuedAt != nil {
		iat = *c.issuedAt
	}
	exp := iat.Add(c.lifetime)
	if c.expiry != nil {
		exp = *c.expiry
	}
	claims["iat"] = iat.Unix()
	claims["exp"] = exp.Unix()
	if c.jti != nil {
		claims["jti"] = *c.jti
	} else {
		claims["jti"] = b64(h.randomBytes(16))
	}
	for k, v := range c.claims {
		claims[k] = v
	}
	for _, k := range c.dropClaims {
		delete(claims, k)
	}

	if c.typ != nil {
		typ = *c.typ
	}
	header := map[string]any{"alg": c.alg, "typ": typ, "kid": kid}
	for k, v := range c.headers {
		header[k] = v
	}
	for _, k := range c.dropHeaders {
		delete(header, k)
	}

	input := encodeSegment("header", header) + "." + encodeSegment("claims", claims)
	signer := key
	if c.key != nil {
		signer = c.key
	}
	return input + "." + b64(sign(c.alg, signer, key, []byte(input)))
}

func encodeSegment(what string, v map[string]any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("agentauthtest: encoding the token %s: %v", what, err))
	}
	return b64(b)
}

// sign returns the signature for alg over input. signer is the key that
// signs; holder is the key the verifier knows, whose public bytes key the
// HMAC variants.
func sign(alg string, signer, holder ed25519.PrivateKey, input []byte) []byte {
	var newHash func() hash.Hash
	switch alg {
	case "none":
		return nil
	case "HS256":
		newHash = sha256.New
	case "HS384":
		newHash = sha512.New384
	case "HS512":
		newHash = sha512.New
	default:
		return ed25519.Sign(signer, input)
	}
	m := hmac.New(newHash, slices.Clone(holder.Public().(ed25519.PublicKey)))
	m.Write(input)
	return m.Sum(nil)
}
