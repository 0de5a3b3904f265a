package provider

import (
	"crypto"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"filippo.io/edwards25519"

	jose "github.com/go-jose/go-jose/v4"
)

// secretJWKMembers carry private or symmetric key material (RFC 7518 §6).
// A key that has one is never accepted as a public key, so that a client
// that sends its private key by mistake learns so instead of succeeding.
var secretJWKMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k", "priv"}

// errUnsupportedKey marks a key of another type than Ed25519: the protocol
// answers it unsupported_algorithm rather than invalid_request.
var errUnsupportedKey = errors.New("only Ed25519 keys (kty OKP, crv Ed25519) are supported")

// publicKey is a parsed Ed25519 public JWK with its RFC 7638 thumbprint
// and its canonical encoding.
type publicKey struct {
	key        ed25519.PublicKey
	thumbprint string
	jwk        json.RawMessage
}

// parseJWK parses an Ed25519 public JWK.
func parseJWK(raw json.RawMessage) (*publicKey, error) {
	m, err := parseObject(raw)
	if err != nil {
		return nil, errors.New("the key is not a JSON object")
	}
	for _, name := range secretJWKMembers {
		if _, ok := m[name]; ok {
			return nil, fmt.Errorf("the key has the private member %q; send only the public key", name)
		}
	}
	kty, _ := optString(m, "kty")
	crv, _ := optString(m, "crv")
	if kty != "OKP" || crv != "Ed25519" {
		return nil, errUnsupportedKey
	}
	if alg, err := optString(m, "alg"); err != nil || (alg != "" && alg != string(jose.EdDSA)) {
		return nil, errUnsupportedKey
	}
	if use, err := optString(m, "use"); err != nil || (use != "" && use != "sig") {
		return nil, errors.New(`the key's use must be "sig"`)
	}
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("the key is not a valid JWK: %w", err)
	}
	pub, ok := k.Key.(ed25519.PublicKey)
	if !ok || len(pub) != ed25519.PublicKeySize {
		return nil, errUnsupportedKey
	}
	// A key that is no curve point could never sign a token; refusing it
	// here keeps it out of the store.
	if _, err := new(edwards25519.Point).SetBytes(pub); err != nil {
		return nil, errors.New("the key is not an Ed25519 curve point")
	}
	return newPublicKey(pub)
}

func newPublicKey(pub ed25519.PublicKey) (*publicKey, error) {
	k := jose.JSONWebKey{Key: pub}
	sum, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, err
	}
	x := base64.RawURLEncoding.EncodeToString(pub)
	jwk, _ := json.Marshal(map[string]string{"kty": "OKP", "crv": "Ed25519", "x": x})
	return &publicKey{key: pub, thumbprint: base64.RawURLEncoding.EncodeToString(sum), jwk: jwk}, nil
}
