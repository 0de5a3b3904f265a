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

// defaultLifetime is the lifetime of minted tokens, exp - iat, as the
// published Agent Auth client uses it.
const defaultLifetime = 60 * time.Second

// Token describes a token to mint with Agent.Token or Host.Token. The zero
// value, with an Audience, is the token the published client sends; each
// field set makes an unusual valid token or a deliberately broken one:
//
//	agent.Token(agentauthtest.Token{
//		Audience:     location,
//		Capabilities: []string{"transfer_money"},
//		Lifetime:     10 * time.Minute,
//		Claims:       map[string]any{"aud": []string{"https://other.example", location}},
//	})
type Token struct {
	// Audience is the "aud" claim: the capability's location (or the
	// server's default location) for an agent JWT, the server's issuer
	// for a host JWT.
	Audience string
	// Capabilities is the "capabilities" claim. Nil leaves the claim out;
	// an empty, non-nil slice sends an empty array, which allows nothing.
	Capabilities []string
	// Issuer is the "iss" claim of an agent JWT (absent when empty, as the
	// published client sends it), or replaces the thumbprint in a host
	// JWT.
	Issuer string
	// IssuedAt is "iat". Zero means now by the host's Clock.
	IssuedAt time.Time
	// Lifetime is exp - iat. Zero means 60 seconds.
	Lifetime time.Duration
	// Expiry is "exp" regardless of iat. Zero means iat + Lifetime.
	Expiry time.Time
	// JTI is "jti", for replay tests. Empty means a random id; send an
	// empty jti with Claims.
	JTI string
	// Type is the header's "typ", for token-confusion tests (a host+jwt
	// presented as an agent token, or the reverse). Empty means the
	// token's own type.
	Type string
	// Algorithm is the header's "alg", and says how the token is signed:
	//
	//   - "" or "EdDSA": an Ed25519 signature;
	//   - "none": no signature at all (the token ends with a dot);
	//   - "HS256", "HS384", "HS512": an HMAC keyed with the raw bytes of
	//     the holder's public key, the classic key-confusion attack against
	//     a verifier that lets the token pick the algorithm;
	//   - anything else, such as "ES256" or "RS256": the header claims
	//     that algorithm over an Ed25519 signature.
	Algorithm string
	// SigningKey signs instead of the holder's key; the header's kid still
	// names the holder's key.
	SigningKey ed25519.PrivateKey
	// Agent, in a host JWT, adds the agent's key, as registration
	// requires: "agent_public_key" for an inline key, or "agent_jwks_url"
	// and "agent_kid" when the agent has a JWKS URL. Agent JWTs ignore it.
	Agent *Agent
	// Header adds or replaces protected header members, such as "jwk",
	// "jku", "x5u" or "crit", after every other field is applied. A nil
	// value removes the member (such as "kid" or "typ"); send JSON null as
	// json.RawMessage("null").
	Header map[string]any
	// Claims adds or replaces claims, for example an array "aud" or a
	// string "exp", after every other field is applied. A nil value
	// removes the claim (such as "jti" or "exp"); send JSON null as
	// json.RawMessage("null").
	Claims map[string]any
}

// Token returns an agent+jwt signed by a and described by tok, shaped
// like the published client's: header {alg: EdDSA, typ: agent+jwt, kid:
// thumbprint}, claims {sub, aud, iat, exp = iat + 60 s, jti}, plus
// "capabilities" and "iss" when tok has them. It panics if a claim or
// header value cannot be encoded.
func (a *Agent) Token(tok Token) string {
	claims := map[string]any{"sub": a.ID, "aud": tok.Audience}
	if tok.Issuer != "" {
		claims["iss"] = tok.Issuer
	}
	if tok.Capabilities != nil {
		claims["capabilities"] = tok.Capabilities
	}
	return a.Host.mint(tok, "agent+jwt", a.Key, a.Thumbprint(), claims)
}

// Token returns a host+jwt signed by h and described by tok: header {alg:
// EdDSA, typ: host+jwt, kid: thumbprint}, claims {iss: thumbprint, aud,
// iat, exp = iat + 60 s, jti} and "host_public_key" (or "host_jwks_url"
// when h has a JWKS URL), plus the key of tok.Agent for registration. It
// panics if a value cannot be encoded.
func (h *Host) Token(tok Token) string {
	claims := map[string]any{"iss": h.Thumbprint(), "aud": tok.Audience}
	if tok.Issuer != "" {
		claims["iss"] = tok.Issuer
	}
	if h.JWKSURL != "" {
		claims["host_jwks_url"] = h.JWKSURL
	} else {
		claims["host_public_key"] = h.PublicJWK()
	}
	if a := tok.Agent; a != nil {
		if a.JWKSURL != "" {
			claims["agent_jwks_url"] = a.JWKSURL
			claims["agent_kid"] = a.Thumbprint()
		} else {
			claims["agent_public_key"] = a.PublicJWK()
		}
	}
	if tok.Capabilities != nil {
		claims["capabilities"] = tok.Capabilities
	}
	return h.mint(tok, "host+jwt", h.Key, h.Thumbprint(), claims)
}

// mint fills in the common claims and header and builds the compact
// serialization by hand, so that tokens no JOSE library would sign (alg
// none, HMAC keyed with a public key, a mislabelled algorithm) can be made
// too.
func (h *Host) mint(tok Token, typ string, key ed25519.PrivateKey, kid string, claims map[string]any) string {
	iat := tok.IssuedAt
	if iat.IsZero() {
		iat = h.now()
	}
	lifetime := tok.Lifetime
	if lifetime == 0 {
		lifetime = defaultLifetime
	}
	exp := tok.Expiry
	if exp.IsZero() {
		exp = iat.Add(lifetime)
	}
	claims["iat"] = iat.Unix()
	claims["exp"] = exp.Unix()
	if tok.JTI != "" {
		claims["jti"] = tok.JTI
	} else {
		claims["jti"] = b64(h.randomBytes(16))
	}
	override(claims, tok.Claims)

	if tok.Type != "" {
		typ = tok.Type
	}
	alg := tok.Algorithm
	if alg == "" {
		alg = "EdDSA"
	}
	header := map[string]any{"alg": alg, "typ": typ, "kid": kid}
	override(header, tok.Header)

	input := encodeSegment("header", header) + "." + encodeSegment("claims", claims)
	signer := key
	if tok.SigningKey != nil {
		signer = tok.SigningKey
	}
	return input + "." + b64(sign(alg, signer, key, []byte(input)))
}

// override sets the members of with in m, removing those whose value is
// nil.
func override(m, with map[string]any) {
	for k, v := range with {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
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
