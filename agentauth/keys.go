package agentauth

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	jose "github.com/go-jose/go-jose/v4"
)

// privateJWKMembers are the JWK members that carry private or symmetric key
// material (RFC 7518 §6). A directory or a JWK Set holding any of them is
// misconfigured, and accepting it would make a secret look like a
// verification key.
var privateJWKMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k", "priv"}

// parsePublicJWK parses an inline agent or host key. Only an Ed25519 public
// key (kty OKP, crv Ed25519) is accepted; private members, symmetric keys
// and every other key type are refused, as is an "alg" other than EdDSA or
// a "use" other than "sig".
func parsePublicJWK(raw []byte) (*jose.JSONWebKey, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("empty JWK")
	}
	members, err := decodeObject(raw)
	if err != nil {
		return nil, fmt.Errorf("JWK: %w", err)
	}
	for _, m := range privateJWKMembers {
		if _, ok := members[m]; ok {
			return nil, fmt.Errorf("JWK has private or symmetric member %q; only public keys are accepted", m)
		}
	}
	kty, err := optString(members, "kty")
	if err != nil {
		return nil, fmt.Errorf("JWK: %w", err)
	}
	crv, err := optString(members, "crv")
	if err != nil {
		return nil, fmt.Errorf("JWK: %w", err)
	}
	if kty != "OKP" || crv != "Ed25519" {
		return nil, fmt.Errorf("JWK has kty %q crv %q; only kty OKP with crv Ed25519 is accepted", kty, crv)
	}
	if alg, err := optString(members, "alg"); err != nil || (alg != "" && alg != string(jose.EdDSA)) {
		return nil, fmt.Errorf("JWK alg must be EdDSA when present (got %s)", members["alg"])
	}
	if use, err := optString(members, "use"); err != nil || (use != "" && use != "sig") {
		return nil, fmt.Errorf("JWK use must be sig when present (got %s)", members["use"])
	}
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("JWK: %w", err)
	}
	pub, ok := k.Key.(ed25519.PublicKey)
	if !ok || len(pub) != ed25519.PublicKeySize || !k.IsPublic() || !k.Valid() {
		return nil, errors.New("JWK is not a valid Ed25519 public key")
	}
	if _, err := newEdKey(pub); err != nil {
		return nil, fmt.Errorf("JWK: %w", err)
	}
	return &k, nil
}

// jwkThumbprint returns the RFC 7638 SHA-256 thumbprint of k, base64url
// without padding: the form the protocol uses for host identifiers.
func jwkThumbprint(k *jose.JSONWebKey) (string, error) {
	sum, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}

// validateJWKS checks a fetched JWK Set before any key in it is used: a
// JSON object whose "keys" member is an array of at most maxKeys objects,
// none symmetric (kty "oct") and none carrying private members.
func validateJWKS(body []byte, maxKeys int) error {
	_, err := jwksMembers(body, maxKeys)
	return err
}

// jwksMembers is validateJWKS returning the keys, each a JSON object.
func jwksMembers(body []byte, maxKeys int) ([]json.RawMessage, error) {
	members, err := decodeObject(body)
	if err != nil {
		return nil, fmt.Errorf("JWK Set: %w", err)
	}
	rawKeys, ok := members["keys"]
	if !ok {
		return nil, errors.New(`JWK Set has no "keys" member`)
	}
	var keys []json.RawMessage
	if err := json.Unmarshal(rawKeys, &keys); err != nil || keys == nil {
		return nil, errors.New(`JWK Set "keys" is not an array`)
	}
	if len(keys) > maxKeys {
		return nil, fmt.Errorf("JWK Set has %d keys, limit %d", len(keys), maxKeys)
	}
	for i, raw := range keys {
		key, err := decodeObject(raw)
		if err != nil {
			return nil, fmt.Errorf("JWK Set keys[%d]: %w", i, err)
		}
		kty, err := optString(key, "kty")
		if err != nil {
			return nil, fmt.Errorf("JWK Set keys[%d]: %w", i, err)
		}
		if kty == "oct" {
			return nil, fmt.Errorf("JWK Set keys[%d] is a symmetric (oct) key", i)
		}
		for _, m := range privateJWKMembers {
			if _, ok := key[m]; ok {
				return nil, fmt.Errorf("JWK Set keys[%d] has private member %q", i, m)
			}
		}
	}
	return keys, nil
}

// maxInlineKeys bounds the inline key cache of a Verifier. Beyond it, an
// arbitrary entry makes room for each new key: a miss only costs a parse.
const maxInlineKeys = 4096

// inlineKey is an inline Ed25519 JWK after parsePublicJWK: the key with
// its curve point decoded, and the RFC 7638 thumbprint an "iss" claim may
// name.
type inlineKey struct {
	ed    *edKey
	thumb string
}

// inlineKeys caches parsed inline JWKs by their exact bytes. The key is
// the content, not an agent or host id: a directory record that changes
// its key changes the bytes and misses, and an entry can only ever be
// found by a record holding exactly the JWK it was parsed from.
type inlineKeys struct {
	max int

	mu sync.RWMutex
	m  map[string]*inlineKey
}

func newInlineKeys(max int) *inlineKeys {
	return &inlineKeys{max: max, m: make(map[string]*inlineKey)}
}

// get returns the parsed form of the inline JWK raw. Keys that fail to
// parse are not cached; they are directory errors, not attacker input.
func (c *inlineKeys) get(raw []byte) (*inlineKey, error) {
	c.mu.RLock()
	k, ok := c.m[string(raw)]
	c.mu.RUnlock()
	if ok {
		return k, nil
	}
	jwk, err := parsePublicJWK(raw)
	if err != nil {
		return nil, err
	}
	thumb, err := jwkThumbprint(jwk)
	if err != nil {
		return nil, fmt.Errorf("JWK thumbprint: %w", err)
	}
	ed, err := newEdKey(jwk.Key.(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	k = &inlineKey{ed: ed, thumb: thumb}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[string(raw)]; !ok && len(c.m) >= c.max {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[string(raw)] = k
	return k, nil
}

// size returns the number of cached keys.
func (c *inlineKeys) size() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
