package agentauth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
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
	members, err := decodeObject(body)
	if err != nil {
		return fmt.Errorf("JWK Set: %w", err)
	}
	rawKeys, ok := members["keys"]
	if !ok {
		return errors.New(`JWK Set has no "keys" member`)
	}
	var keys []json.RawMessage
	if err := json.Unmarshal(rawKeys, &keys); err != nil || keys == nil {
		return errors.New(`JWK Set "keys" is not an array`)
	}
	if len(keys) > maxKeys {
		return fmt.Errorf("JWK Set has %d keys, limit %d", len(keys), maxKeys)
	}
	for i, raw := range keys {
		key, err := decodeObject(raw)
		if err != nil {
			return fmt.Errorf("JWK Set keys[%d]: %w", i, err)
		}
		kty, err := optString(key, "kty")
		if err != nil {
			return fmt.Errorf("JWK Set keys[%d]: %w", i, err)
		}
		if kty == "oct" {
			return fmt.Errorf("JWK Set keys[%d] is a symmetric (oct) key", i)
		}
		for _, m := range privateJWKMembers {
			if _, ok := key[m]; ok {
				return fmt.Errorf("JWK Set keys[%d] has private member %q", i, m)
			}
		}
	}
	return nil
}

// jwksMinRefresh is the shortest interval between two fetches of one JWKS
// URL. go-oidc refetches whenever a signature fails against its cached
// keys, so without this floor every forged token naming a JWKS-keyed agent
// would make this server fetch from the key owner's URL.
const jwksMinRefresh = 10 * time.Second

// jwksFetcher is the RoundTripper go-oidc fetches one JWKS URL through. It
// follows redirects with the SSRF-safe client, validates the body, and
// answers from the last fetch while jwksMinRefresh has not passed.
type jwksFetcher struct {
	client  *http.Client
	maxKeys int
	now     func() time.Time

	mu      sync.Mutex
	fetched time.Time
	body    []byte
	err     error
}

// RoundTrip implements http.RoundTripper.
func (f *jwksFetcher) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := f.now(); f.dueLocked(now) {
		f.body, f.err = f.fetch(req)
		f.fetched = now
	}
	if f.err != nil {
		return nil, f.err
	}
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(f.body)),
		ContentLength: int64(len(f.body)),
		Request:       req,
	}, nil
}

// due reports whether the next round trip would fetch the URL again
// rather than answer from the last fetch.
func (f *jwksFetcher) due() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dueLocked(f.now())
}

// dueLocked is due with f.mu held. A clock that went backwards counts as
// due, so that a stale body cannot outlive a clock correction.
func (f *jwksFetcher) dueLocked(now time.Time) bool {
	return f.fetched.IsZero() || now.Sub(f.fetched) >= jwksMinRefresh || now.Before(f.fetched)
}

func (f *jwksFetcher) fetch(orig *http.Request) ([]byte, error) {
	req, err := http.NewRequestWithContext(orig.Context(), http.MethodGet, orig.URL.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("agentauth: fetch JWKS %s: %w", redactURL(orig.URL), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("agentauth: fetch JWKS %s: %w", redactURL(orig.URL), err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("agentauth: fetch JWKS %s: status %s", redactURL(orig.URL), resp.Status)
	}
	if err := validateJWKS(body, f.maxKeys); err != nil {
		return nil, fmt.Errorf("agentauth: fetch JWKS %s: %w", redactURL(orig.URL), err)
	}
	return body, nil
}

// keySets holds one jwksKeySet per JWKS URL, so that keys are cached and
// concurrent fetches of one URL are shared.
type keySets struct {
	policy FetchPolicy
	safe   *http.Client
	now    func() time.Time

	mu   sync.Mutex
	sets map[string]*jwksKeySet
}

func newKeySets(p FetchPolicy, now func() time.Time) *keySets {
	p = p.withDefaults()
	return &keySets{policy: p, safe: NewSafeHTTPClient(p), now: now, sets: make(map[string]*jwksKeySet)}
}

func (k *keySets) get(jwksURL string) *jwksKeySet {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s, ok := k.sets[jwksURL]; ok {
		return s
	}
	f := &jwksFetcher{client: k.safe, maxKeys: k.policy.MaxKeys, now: k.now}
	client := &http.Client{
		Transport: f,
		// The fetcher has already followed (and vetted) redirects.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       k.policy.Timeout,
	}
	s := &jwksKeySet{url: jwksURL, fetcher: f, ctx: oidc.ClientContext(context.Background(), client)}
	s.remote = oidc.NewRemoteKeySet(s.ctx, jwksURL)
	k.sets[jwksURL] = s
	return s
}

// jwksKeySet verifies tokens against the keys of one JWKS URL through a
// go-oidc remote key set, which caches the keys, looks a token's kid up
// and refetches on a miss; every fetch goes through one jwksFetcher, which
// holds the refresh floor.
//
// The remote key set parses the token again, with go-jose: go-oidc takes
// the compact serialization, neither a parsed token nor a key, and does
// not hand out the keys it caches. So a JWKS-keyed agent still pays that
// second parse, which an inline key no longer does. It is kept on the
// less common path because go-oidc's key cache, kid lookup and shared
// fetches are worth more than the parse.
type jwksKeySet struct {
	url     string
	fetcher *jwksFetcher
	ctx     context.Context // carries the HTTP client for go-oidc

	mu     sync.Mutex
	remote *oidc.RemoteKeySet
}

// verify checks token's signature and returns its payload.
//
// go-oidc hands a fetch's result to every caller that asks for keys until
// the goroutine that ran the fetch has cleared it. A call arriving just
// after a refresh can therefore get that refresh's keys without a fetch
// of its own, even when the refresh floor has passed since and the key
// owner has rotated its key. When a verification fails while the fetcher
// would fetch again, verify replaces the remote key set by a fresh one,
// which has no such leftover, and tries once more. That retry fetches at
// most once per jwksMinRefresh, like any other miss, because the fetcher
// decides; and it makes the outcome depend on the verifier's clock alone.
func (s *jwksKeySet) verify(ctx context.Context, token string) ([]byte, error) {
	s.mu.Lock()
	remote := s.remote
	s.mu.Unlock()
	payload, err := remote.VerifySignature(ctx, token)
	if err == nil || ctx.Err() != nil || !s.fetcher.due() {
		return payload, err
	}
	s.mu.Lock()
	if s.remote == remote {
		s.remote = oidc.NewRemoteKeySet(s.ctx, s.url)
	}
	remote = s.remote
	s.mu.Unlock()
	return remote.VerifySignature(ctx, token)
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
