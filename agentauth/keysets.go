package agentauth

import (
	"bytes"
	"container/list"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentcap/agentcap/agentauth/internal/remotekeys"
	"github.com/agentcap/agentcap/agentauth/internal/ttlmap"
	"github.com/agentcap/agentcap/internal/cachecontrol"
)

func init() {
	remotekeys.Of = func(v any) remotekeys.Cache { return v.(*Verifier).keys }
}

// jwksMinRefresh is the shortest interval between two fetches of one JWKS
// URL. go-oidc refetches whenever a signature fails against its cached
// keys, so without this floor every forged token naming a JWKS-keyed agent
// would make this server fetch from the key owner's URL.
const jwksMinRefresh = 10 * time.Second

// How long a fetched key set is trusted. A key its owner withdraws from
// its JWK Set (a compromised key, say) must stop verifying tokens, and
// nothing else tells a verifier it was withdrawn: a cached set is
// therefore fetched again, before it is used, once it is older than its
// max age. That is the response's Cache-Control max-age, bounded by
// jwksMinRefresh below (no-store, no-cache and max-age=0 included) and
// jwksMaxAge above; without one, jwksDefaultMaxAge.
const (
	jwksDefaultMaxAge = 5 * time.Minute
	jwksMaxAge        = time.Hour
)

// keySetMaxAge is the max age of a key set fetched with cacheControl.
func keySetMaxAge(cacheControl string) time.Duration {
	age, ok := cachecontrol.MaxAge(cacheControl)
	if !ok {
		return jwksDefaultMaxAge
	}
	return min(max(age, jwksMinRefresh), jwksMaxAge)
}

// maxJWKSFetches bounds the fetches one key set cache runs at once. Each
// may buffer a body of up to FetchPolicy.MaxBytes before it is compacted,
// so the bound is what keeps that memory bounded too; a fetch beyond it
// waits for a turn within its timeout.
const maxJWKSFetches = 4

// jwksFailureMemory is how long a failed fetch of a URL is remembered:
// until then the URL is not fetched again, by any key set, even one made
// anew after the set that failed was dropped. A URL that fails is what an
// attacker names to hold this server's fetches (up to the timeout each),
// and a registration may name a new one each time.
const jwksFailureMemory = time.Minute

// maxJWKSFailures bounds the failed URLs remembered (by a 64-bit hash, in
// about 100 bytes each). When as many failed within jwksFailureMemory, a
// further failure is not remembered; the floor of its own key set and the
// provider's fetch budgets still hold.
const maxJWKSFailures = 4096

// maxRemoteKIDBytes bounds the kid of a key kept from a fetched set.
// Real kids are thumbprints or short names; a longer one is dropped with
// its key rather than kept in memory.
const maxRemoteKIDBytes = 256

// What a cached key set is charged against FetchPolicy.CacheBytes: a
// fixed part for the records, the go-oidc key set and its HTTP client;
// the URL twice (the map key, go-oidc's copy); the compact body twice
// (itself, and the kids copied out of it by the two parses); and per key
// its parsed forms (go-jose's in go-oidc, the decoded point in ours).
// TestKeySetCost measures what cached sets of one key and of MaxKeys keys
// with long kids really hold (about 1.3 and 30 KB) and checks that the
// charge covers it.
const (
	keySetBaseCost = 2048
	remoteKeyCost  = 1024
)

// remoteKey is an Ed25519 key of a fetched JWK Set.
type remoteKey struct {
	kid string
	ed  *edKey
}

// compactJWKS checks a fetched JWK Set (validateJWKS) and keeps of it
// only what verification can use: its Ed25519 public keys, each as kty,
// crv, x and kid. Keys of other types, keys that parsePublicJWK refuses
// (an alg other than EdDSA, a use other than sig, a point off the curve)
// and keys with a kid longer than maxRemoteKIDBytes are dropped, as no
// agent or host token can verify under them. The compact set is what
// go-oidc parses and what stays in memory, a few kilobytes at most
// however large the body was.
func compactJWKS(body []byte, maxKeys int) ([]byte, []remoteKey, error) {
	raws, err := jwksMembers(body, maxKeys)
	if err != nil {
		return nil, nil, err
	}
	set := jose.JSONWebKeySet{Keys: make([]jose.JSONWebKey, 0, len(raws))}
	keys := make([]remoteKey, 0, len(raws))
	for _, raw := range raws {
		m, err := decodeObject(raw)
		if err != nil {
			continue
		}
		kty, _ := optString(m, "kty")
		crv, _ := optString(m, "crv")
		kid, err := optString(m, "kid")
		if kty != "OKP" || crv != "Ed25519" || err != nil || len(kid) > maxRemoteKIDBytes {
			continue
		}
		jwk, err := parsePublicJWK(raw)
		if err != nil {
			continue
		}
		pub := jwk.Key.(ed25519.PublicKey)
		ed, err := newEdKey(pub)
		if err != nil {
			continue
		}
		keys = append(keys, remoteKey{kid: kid, ed: ed})
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: pub, KeyID: kid})
	}
	compact, err := json.Marshal(set)
	if err != nil {
		return nil, nil, err
	}
	return compact, keys, nil
}

// keySets is the cache of remote key sets of a Verifier: one jwksKeySet
// per JWKS URL, so that keys are cached and concurrent fetches of one URL
// are shared. Its memory is bounded in bytes: each set is charged what it
// holds (see keySetBaseCost), and past FetchPolicy.CacheBytes the sets
// used least recently are dropped. A set in use when it is dropped stays
// usable by its callers; the next caller for its URL makes a new one.
type keySets struct {
	policy FetchPolicy
	safe   *http.Client
	now    func() time.Time
	slots  chan struct{} // one per fetch under way, at most maxJWKSFetches
	// failed maps the hash of a URL whose last fetch failed to when it
	// may be fetched again.
	failed *ttlmap.Map[uint64]
	seed   maphash.Seed

	mu    sync.Mutex
	sets  map[string]*jwksKeySet
	lru   list.List // of *jwksKeySet, the most recently used first
	bytes int64     // the cost of every set in sets
}

func newKeySets(p FetchPolicy, now func() time.Time) *keySets {
	p = p.withDefaults()
	failed := ttlmap.New(ttlmap.Config[uint64]{Max: maxJWKSFailures, Hash: func(h uint64) uint64 { return h }})
	failed.SetClock(now)
	return &keySets{
		policy: p,
		safe:   NewSafeHTTPClient(p),
		now:    now,
		slots:  make(chan struct{}, maxJWKSFetches),
		failed: failed,
		seed:   maphash.MakeSeed(),
		sets:   make(map[string]*jwksKeySet),
	}
}

// failedRecently reports whether a fetch of jwksURL failed less than
// jwksFailureMemory ago.
func (k *keySets) failedRecently(jwksURL string) bool {
	recent := false
	k.failed.Update(maphash.String(k.seed, jwksURL), func(now, until int64) int64 {
		recent = until > now
		return until
	})
	return recent
}

// rememberFailure records that a fetch of jwksURL failed.
func (k *keySets) rememberFailure(jwksURL string) {
	k.failed.Update(maphash.String(k.seed, jwksURL), func(now, _ int64) int64 {
		return now + int64(jwksFailureMemory)
	})
}

// get returns the key set of jwksURL, making it if needed. A URL the
// fetch policy refuses gets no key set, and so takes no memory.
func (k *keySets) get(jwksURL string) (*jwksKeySet, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s, ok := k.sets[jwksURL]; ok {
		k.lru.MoveToFront(s.elem)
		return s, nil
	}
	if err := k.policy.checkRawURL(jwksURL); err != nil {
		return nil, err
	}
	s := &jwksKeySet{url: jwksURL}
	s.fetcher = &jwksFetcher{sets: k, set: s}
	client := &http.Client{
		Transport: s.fetcher,
		// The fetcher has already followed (and vetted) redirects.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       k.policy.Timeout,
	}
	s.ctx = oidc.ClientContext(context.Background(), client)
	s.remote = oidc.NewRemoteKeySet(s.ctx, jwksURL)
	s.elem = k.lru.PushFront(s)
	s.cost = keySetCost(jwksURL, 0, 0)
	k.sets[jwksURL] = s
	k.bytes += s.cost
	k.evictLocked(s)
	return s, nil
}

// CheckURL implements remotekeys.Cache.
func (k *keySets) CheckURL(jwksURL string) error {
	return k.policy.checkRawURL(jwksURL)
}

// Key implements remotekeys.Cache.
func (k *keySets) Key(jwksURL, kid string, beforeFetch func() error) (ed25519.PublicKey, error) {
	s, err := k.get(jwksURL)
	if err != nil {
		return nil, err
	}
	return s.fetcher.key(kid, beforeFetch)
}

// CachedKey implements remotekeys.Cache.
func (k *keySets) CachedKey(jwksURL, kid string) (ed25519.PublicKey, error) {
	keys := k.cached(jwksURL, kid)
	if len(keys) == 0 {
		return nil, fmt.Errorf("agentauth: no cached key %q of the JWKS, and none is fetched", kid)
	}
	return keys[0].ed.pub, nil
}

// keySetCost is what a key set of url holding a compact body of
// bodyLen bytes with n keys is charged.
func keySetCost(url string, bodyLen, n int) int64 {
	return keySetBaseCost + 2*int64(len(url)) + 2*int64(bodyLen) + int64(n)*remoteKeyCost
}

// resize charges s its cost after a fetch changed what it holds, unless
// s was dropped meanwhile.
func (k *keySets) resize(s *jwksKeySet, bodyLen, n int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s.elem == nil {
		return
	}
	cost := keySetCost(s.url, bodyLen, n)
	k.bytes += cost - s.cost
	s.cost = cost
	k.evictLocked(s)
}

// evictLocked drops the sets used least recently until the cache is
// within its bound, never keep: a single set costs at most a few tens of
// kilobytes, so the bound may be passed by that much.
func (k *keySets) evictLocked(keep *jwksKeySet) {
	for k.bytes > k.policy.CacheBytes {
		e := k.lru.Back()
		s := e.Value.(*jwksKeySet)
		if s == keep {
			return
		}
		k.lru.Remove(e)
		s.elem = nil
		delete(k.sets, s.url)
		k.bytes -= s.cost
	}
}

// stats returns the number of sets held and what they are charged.
func (k *keySets) stats() (n int, bytes int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.sets), k.bytes
}

// fetch fetches rawURL with the SSRF-safe client, at most maxJWKSFetches
// at a time, and returns the compact form of the JWK Set it holds and how
// long it may be trusted. The fetch has its own deadline,
// FetchPolicy.Timeout, and no caller can cancel it: its result is shared.
func (k *keySets) fetch(rawURL string) ([]byte, []remoteKey, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), k.policy.Timeout)
	defer cancel()
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("agentauth: fetch JWKS: %w", err)
	}
	select {
	case k.slots <- struct{}{}:
		defer func() { <-k.slots }()
	case <-ctx.Done():
		return nil, nil, 0, fmt.Errorf("agentauth: fetch JWKS %s: no turn among %d fetches under way: %w", redactURL(u), maxJWKSFetches, ctx.Err())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, nil, 0, err
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := k.safe.Do(req)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("agentauth: fetch JWKS %s: %w", redactURL(u), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("agentauth: fetch JWKS %s: %w", redactURL(u), err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, 0, fmt.Errorf("agentauth: fetch JWKS %s: status %s", redactURL(u), resp.Status)
	}
	compact, keys, err := compactJWKS(body, k.policy.MaxKeys)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("agentauth: fetch JWKS %s: %w", redactURL(u), err)
	}
	return compact, keys, keySetMaxAge(resp.Header.Get("Cache-Control")), nil
}

// cached returns the keys named kid of the key set cached for jwksURL.
// It never fetches and never makes a set: it is what a token of an agent
// or host that may not act is checked against (see Verifier.Session), so
// that such a token costs no fetch and no memory.
func (k *keySets) cached(jwksURL, kid string) []remoteKey {
	k.mu.Lock()
	s := k.sets[jwksURL]
	k.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.fetcher.cached(kid)
}

// jwksFetcher is the RoundTripper go-oidc fetches one JWKS URL through.
// It fetches with keySets.fetch and answers from the last fetch while
// jwksMinRefresh has not passed.
type jwksFetcher struct {
	sets *keySets
	set  *jwksKeySet

	// last is the result of the last successful fetch, read without mu.
	last atomic.Pointer[fetchedSet]

	mu      sync.Mutex
	fetched time.Time
	err     error // of the last fetch, nil when it succeeded
}

// fetchedSet is what a successful fetch brought.
type fetchedSet struct {
	body    []byte // compact
	keys    []remoteKey
	expires time.Time // when it is older than its max age
}

// expired reports whether there is a fetched set and it is older than its
// max age.
func (f *jwksFetcher) expired() bool {
	last := f.last.Load()
	return last != nil && !f.sets.now().Before(last.expires)
}

// cached returns the keys named kid of the last successful fetch, unless
// it is older than its max age.
func (f *jwksFetcher) cached(kid string) []remoteKey {
	last := f.last.Load()
	if last == nil || !f.sets.now().Before(last.expires) {
		return nil
	}
	var out []remoteKey
	for _, k := range last.keys {
		if k.kid == kid {
			out = append(out, k)
		}
	}
	return out
}

// key returns the first key named kid, fetching the set when it holds
// none and the refresh floor allows, after beforeFetch agrees.
func (f *jwksFetcher) key(kid string, beforeFetch func() error) (ed25519.PublicKey, error) {
	if keys := f.cached(kid); len(keys) > 0 {
		return keys[0].ed.pub, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Another caller may have fetched while this one waited for mu.
	if keys := f.cached(kid); len(keys) > 0 {
		return keys[0].ed.pub, nil
	}
	now := f.sets.now()
	if !f.dueLocked(now) {
		if f.err != nil {
			return nil, f.err
		}
		return nil, fmt.Errorf("agentauth: the JWKS has no key %q, and was fetched less than %v ago", kid, jwksMinRefresh)
	}
	if err := f.fetchLocked(now, beforeFetch); err != nil {
		return nil, err
	}
	if f.err != nil {
		return nil, f.err
	}
	if keys := f.cached(kid); len(keys) > 0 {
		return keys[0].ed.pub, nil
	}
	return nil, fmt.Errorf("agentauth: the JWKS has no key %q", kid)
}

// RoundTrip implements http.RoundTripper.
func (f *jwksFetcher) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := f.sets.now(); f.dueLocked(now) {
		_ = f.fetchLocked(now, nil) // without beforeFetch, only f.err can fail
	}
	if f.err != nil {
		return nil, f.err
	}
	var body []byte
	if last := f.last.Load(); last != nil {
		body = last.body
	}
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

// fetchLocked fetches the URL with f.mu held, so that concurrent callers
// wait for its result rather than fetch again. A URL whose fetch failed
// recently is not fetched (see jwksFailureMemory); otherwise beforeFetch,
// when not nil, decides first, and its refusal is returned and changes
// nothing. A failed fetch keeps the keys of the last successful one:
// go-oidc keeps its own copy of them too.
func (f *jwksFetcher) fetchLocked(now time.Time, beforeFetch func() error) error {
	url := f.set.url
	if f.sets.failedRecently(url) {
		f.fetched = now
		f.err = fmt.Errorf("agentauth: fetch JWKS: a fetch of the URL failed less than %v ago", jwksFailureMemory)
		return nil
	}
	if beforeFetch != nil {
		if err := beforeFetch(); err != nil {
			return err
		}
	}
	f.fetched = now
	body, keys, maxAge, err := f.sets.fetch(url)
	f.err = err
	if err != nil {
		f.sets.rememberFailure(url)
		return nil
	}
	f.last.Store(&fetchedSet{body: body, keys: keys, expires: now.Add(maxAge)})
	f.sets.resize(f.set, len(body), len(keys))
	return nil
}

// lastErr returns the error of the last fetch, nil when it succeeded.
func (f *jwksFetcher) lastErr() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// due reports whether the next round trip would fetch the URL again
// rather than answer from the last fetch.
func (f *jwksFetcher) due() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dueLocked(f.sets.now())
}

// dueLocked is due with f.mu held. A clock that went backwards counts as
// due, so that a stale body cannot outlive a clock correction.
func (f *jwksFetcher) dueLocked(now time.Time) bool {
	return f.fetched.IsZero() || now.Sub(f.fetched) >= jwksMinRefresh || now.Before(f.fetched)
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

	// elem is the set's place in keySets.lru, nil once dropped; cost is
	// what it is charged. Both are guarded by keySets.mu.
	elem *list.Element
	cost int64

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
	if s.fetcher.expired() {
		if !s.fetcher.due() {
			s.mu.Unlock()
			return nil, fmt.Errorf("agentauth: the key set is older than its max age, and its last fetch failed: %w", s.fetcher.lastErr())
		}
		// go-oidc would answer from keys past their age: start afresh.
		s.remote = oidc.NewRemoteKeySet(s.ctx, s.url)
	}
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
