package agentauth

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
)

// ksClock is a settable clock for key set tests.
type ksClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *ksClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *ksClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// ksServer serves, on loopback, a JWK Set per path: by default one key,
// fuzzKey's, with kid "k1", padded with an unused member to pad bytes.
// It counts the fetches of each path.
type ksServer struct {
	srv *httptest.Server
	pad int

	mu     sync.Mutex
	bodies map[string][]byte // path -> body, instead of the default
	header map[string]string // path -> Cache-Control
	hits   map[string]int
	total  atomic.Int64
}

func newKSServer(t testing.TB, pad int) *ksServer {
	t.Helper()
	s := &ksServer{pad: pad, bodies: map[string][]byte{}, header: map[string]string{}, hits: map[string]int{}}
	def := ksJWKS(t, pad, jose.JSONWebKey{Key: fuzzKey.Public(), KeyID: "k1"})
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.total.Add(1)
		s.mu.Lock()
		s.hits[r.URL.Path]++
		body, ok := s.bodies[r.URL.Path]
		cc := s.header[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			body = def
		}
		if cc != "" {
			w.Header().Set("Cache-Control", cc)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *ksServer) url(path string) string { return s.srv.URL + path }

func (s *ksServer) set(path string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bodies[path] = body
}

func (s *ksServer) fetches(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// ksJWKS is a JWK Set of keys, padded with an extra top-level member to
// at least pad bytes.
func ksJWKS(t testing.TB, pad int, keys ...jose.JSONWebKey) []byte {
	t.Helper()
	set, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	if n := pad - len(set); n > 0 {
		set = append(set[:len(set)-1], []byte(`,"padding":"`+strings.Repeat("x", n)+`"}`)...)
	}
	return set
}

// ksWorld is a Verifier over a directory with one active host and
// JWKS-keyed agents, at a settable clock.
type ksWorld struct {
	v     *Verifier
	dir   *MemoryDirectory
	clock *ksClock
}

const ksAudience = "https://location.example/capability/execute"

func newKSWorld(t testing.TB, policy FetchPolicy) *ksWorld {
	t.Helper()
	clock := &ksClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	dir := NewMemoryDirectory()
	hostKey := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey)
	jwk, err := json.Marshal(jose.JSONWebKey{Key: hostKey})
	if err != nil {
		t.Fatal(err)
	}
	if err := dir.PutHost(&Host{ID: "hst_1", PublicKey: jwk, Status: agentcap.StatusActive}); err != nil {
		t.Fatal(err)
	}
	policy.AllowLoopback = true
	v, err := NewVerifier(VerifierConfig{Directory: dir, Audiences: []string{ksAudience}, KeyFetch: policy, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	return &ksWorld{v: v, dir: dir, clock: clock}
}

// agent puts an agent keyed by url with kid "k1" and the status given.
func (w *ksWorld) agent(t testing.TB, id, url, status string) {
	t.Helper()
	if err := w.dir.PutAgent(&Agent{ID: id, HostID: "hst_1", Mode: agentcap.ModeAutonomous, Status: status, JWKSURL: url, KID: "k1"}); err != nil {
		t.Fatal(err)
	}
}

var ksJTI atomic.Int64

// token is an agent JWT of agent id with kid "k1", signed with fuzzKey
// (or, when forged, with another key), at the world's clock.
func (w *ksWorld) token(id string, forged bool) string {
	now := w.clock.now().Unix()
	payload := fmt.Sprintf(`{"sub":%q,"aud":%q,"iat":%d,"exp":%d,"jti":"j%d"}`, id, ksAudience, now, now+60, ksJTI.Add(1))
	flip := uint8(0)
	if forged {
		flip = 7
	}
	return fuzzToken(`{"alg":"EdDSA","typ":"agent+jwt","kid":"k1"}`, payload, flip)
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestKeySetsMemoryBounded is the unbounded-cache attack on a standalone
// Verifier: agents keyed by distinct JWKS URLs, each serving a JWK Set
// of almost FetchPolicy.MaxBytes. Every token verifies, yet what the
// verifier keeps stays within its CacheBytes: a key set is kept compact
// (its keys, not the body it came in) and the sets used least recently
// are dropped past the bound. Before, each URL kept its whole body for
// the life of the process.
func TestKeySetsMemoryBounded(t *testing.T) {
	const (
		agents   = 24
		bodySize = defaultFetchMaxBytes - 1024
		budget   = 32 << 10
	)
	srv := newKSServer(t, bodySize)
	w := newKSWorld(t, FetchPolicy{CacheBytes: budget})
	for i := range agents {
		w.agent(t, fmt.Sprintf("agt_%d", i), srv.url(fmt.Sprintf("/jwks/%d.json", i)), agentcap.StatusActive)
	}
	before := heapInUse()
	for i := range agents {
		if _, err := w.v.Session(context.Background(), w.token(fmt.Sprintf("agt_%d", i), false)); err != nil {
			t.Fatalf("agent %d: %v", i, err)
		}
	}
	grown := int64(heapInUse()) - int64(before)
	n, charged := w.v.keys.stats()
	t.Logf("%d key sets of %d kept, charged %d bytes; heap grew by %d bytes", n, agents, charged, grown)
	if srv.total.Load() != agents {
		t.Fatalf("%d fetches, want %d", srv.total.Load(), agents)
	}
	// One set may pass the bound: the one just fetched is never dropped.
	if limit := int64(budget + keySetCost(srv.url("/jwks/00.json"), 1024, defaultFetchMaxKeys)); charged > limit {
		t.Errorf("key sets charged %d bytes, bound %d", charged, limit)
	}
	if n >= agents {
		t.Errorf("all %d key sets kept under a bound of %d bytes", n, budget)
	}
	// The bodies alone were 24 MiB; a few MiB of slack absorb what the
	// HTTP connections keep.
	if grown > 4<<20 {
		t.Errorf("heap grew by %d bytes after %d key sets", grown, agents)
	}

	// A set that was dropped is fetched again when needed.
	if _, err := w.v.Session(context.Background(), w.token("agt_0", false)); err != nil {
		t.Fatal(err)
	}
	if got := srv.fetches("/jwks/0.json"); got != 2 {
		t.Errorf("dropped key set fetched %d times, want 2", got)
	}
}

// TestKeySetCost checks that what a cached key set is charged covers
// what it holds: key sets of the smallest and of the largest shape (one
// key; MaxKeys keys with the longest kids kept) are filled and used
// through go-oidc, and the heap they take, per set, is at most their
// charge.
func TestKeySetCost(t *testing.T) {
	long := strings.Repeat("k", maxRemoteKIDBytes-3)
	for _, n := range []int{1, defaultFetchMaxKeys} {
		t.Run(fmt.Sprintf("%d keys", n), func(t *testing.T) {
			keys := []jose.JSONWebKey{{Key: fuzzKey.Public(), KeyID: "k1"}}
			for i := 1; i < n; i++ {
				pub := ed25519.NewKeyFromSeed([]byte(fmt.Sprintf("%032d", i))).Public()
				keys = append(keys, jose.JSONWebKey{Key: pub, KeyID: fmt.Sprintf("%s%03d", long, i)})
			}
			perSet, charged := measureKeySets(t, ksJWKS(t, 0, keys...))
			t.Logf("a key set of %d keys holds about %d bytes, charged %d", n, perSet, charged)
			if perSet > charged {
				t.Errorf("a key set holds about %d bytes, more than the %d it is charged", perSet, charged)
			}
		})
	}
}

// measureKeySets caches 200 key sets serving body, each used once
// through go-oidc, and returns the heap each holds and what it is charged.
func measureKeySets(t *testing.T, body []byte) (perSet, charged int64) {
	const sets = 200
	srv := newKSServer(t, 0)
	urls := make([]string, sets)
	for i := range urls {
		path := fmt.Sprintf("/set/%04d", i)
		srv.set(path, body)
		urls[i] = srv.url(path)
	}
	srv.set("/warm", body)
	clock := &ksClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	ks := newKeySets(FetchPolicy{AllowLoopback: true, CacheBytes: 1 << 30}, clock.now)
	token := fuzzToken(`{"alg":"EdDSA","typ":"agent+jwt","kid":"k1"}`, `{"sub":"agt_1"}`, 0)
	// The first set fills what every set shares (the HTTP client's
	// connections, go-oidc's package state) before the measure.
	warm, err := ks.get(srv.url("/warm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := warm.verify(context.Background(), token); err != nil {
		t.Fatal(err)
	}
	before := heapInUse()
	held := make([]*jwksKeySet, 0, sets)
	for _, u := range urls {
		s, err := ks.get(u)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.verify(context.Background(), token); err != nil {
			t.Fatal(err)
		}
		held = append(held, s)
	}
	perSet = (int64(heapInUse()) - int64(before)) / sets
	runtime.KeepAlive(held)
	_, total := ks.stats()
	return perSet, (total - warm.cost) / sets
}

// TestKeySetsRefuseURLs: a URL the fetch policy refuses gets no key set,
// whatever a directory says, so it takes no memory.
func TestKeySetsRefuseURLs(t *testing.T) {
	ks := newKeySets(FetchPolicy{}, time.Now)
	for _, u := range []string{
		"http://keys.example.com/jwks.json",
		"https://10.0.0.1/jwks.json",
		"https://user:pw@keys.example.com/jwks.json",
		"ftp://keys.example.com/jwks.json",
		"https://keys.example.com/" + strings.Repeat("a", maxFetchURLBytes),
	} {
		if _, err := ks.get(u); err == nil {
			t.Errorf("get(%.60q) made a key set", u)
		}
	}
	if n, bytes := ks.stats(); n != 0 || bytes != 0 {
		t.Errorf("%d key sets, %d bytes after refused URLs", n, bytes)
	}
}

// FuzzCompactJWKS: compactJWKS accepts exactly the sets validateJWKS
// accepts; what it keeps is a valid JWK Set of Ed25519 public keys, one
// per key it returns, in order, which go-jose reads back to the same kid
// and key, and which compacts to itself.
func FuzzCompactJWKS(f *testing.F) {
	f.Add(`{"keys":[` + rfc8037JWK + `]}`)
	f.Add(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"k1","alg":"EdDSA","use":"sig"}],"pad":"x"}`)
	f.Add(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"k1","use":"enc"},{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`)
	f.Add(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`)
	f.Add(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","kid":1}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		compact, keys, err := compactJWKS([]byte(body), defaultFetchMaxKeys)
		if (err == nil) != (validateJWKS([]byte(body), defaultFetchMaxKeys) == nil) {
			t.Fatalf("compactJWKS error %v disagrees with validateJWKS", err)
		}
		if err != nil {
			return
		}
		if err := validateJWKS(compact, defaultFetchMaxKeys); err != nil {
			t.Fatalf("compact set %s refused: %v", compact, err)
		}
		var set jose.JSONWebKeySet
		if err := json.Unmarshal(compact, &set); err != nil || len(set.Keys) != len(keys) {
			t.Fatalf("compact set %s: %v, %d keys for %d", compact, err, len(set.Keys), len(keys))
		}
		for i, k := range keys {
			pub, ok := set.Keys[i].Key.(ed25519.PublicKey)
			if !ok || !pub.Equal(k.ed.pub) || set.Keys[i].KeyID != k.kid || len(k.kid) > maxRemoteKIDBytes {
				t.Fatalf("key %d: %+v kept as %+v", i, set.Keys[i], k)
			}
		}
		again, _, err := compactJWKS(compact, defaultFetchMaxKeys)
		if err != nil || string(again) != string(compact) {
			t.Fatalf("compact set %s compacts to %s, %v", compact, again, err)
		}
	})
}

// ksOutcome is the HTTP status and code of a refusal, 0 and "" for none.
func ksOutcome(err error) (int, agentcap.Code) {
	if err == nil {
		return 0, ""
	}
	var ae *agentcap.Error
	if !errors.As(err, &ae) {
		return -1, agentcap.Code(err.Error())
	}
	return ae.HTTPStatus(), ae.Code
}

// TestVerifierNoFetchForInactive is the pending-agent attack: agents
// registered with JWKS URLs of the attacker's choosing and never
// approved, each named by a token with any signature. No such token makes
// the verifier fetch, nor keep a key set; neither does a token of an
// active agent whose host is not active. An agent whose keys were cached
// while it was active is still told its status when its token verifies
// against them. Before, each token fetched its agent's URL and kept the
// set for good, since the signature was checked before the status.
func TestVerifierNoFetchForInactive(t *testing.T) {
	srv := newKSServer(t, 0)
	w := newKSWorld(t, FetchPolicy{})
	ctx := context.Background()
	const pending = 140
	for i := range pending {
		w.agent(t, fmt.Sprintf("agt_p%d", i), srv.url(fmt.Sprintf("/pending/%d.json", i)), agentcap.StatusPending)
	}
	outcomes := map[string]int{}
	for i := range pending {
		for _, forged := range []bool{true, false} {
			status, code := ksOutcome(func() error { _, err := w.v.Session(ctx, w.token(fmt.Sprintf("agt_p%d", i), forged)); return err }())
			outcomes[fmt.Sprintf("forged %v: %d %s", forged, status, code)]++
		}
	}
	want := map[string]int{"forged true: 401 invalid_jwt": pending, "forged false: 401 invalid_jwt": pending}
	if diff := cmp.Diff(want, outcomes); diff != "" {
		t.Errorf("tokens of pending agents (-want +got):\n%s", diff)
	}
	if got := srv.total.Load(); got != 0 {
		t.Errorf("tokens of pending agents made %d fetches", got)
	}
	if n, bytes := w.v.keys.stats(); n != 0 {
		t.Errorf("tokens of pending agents left %d key sets (%d bytes)", n, bytes)
	}

	// An active agent under a host that is not active: no fetch either.
	if err := w.dir.PutHost(&Host{ID: "hst_2", JWKSURL: srv.url("/host2.json"), Status: agentcap.StatusPending}); err != nil {
		t.Fatal(err)
	}
	if err := w.dir.PutAgent(&Agent{ID: "agt_h2", HostID: "hst_2", Mode: agentcap.ModeAutonomous, Status: agentcap.StatusActive, JWKSURL: srv.url("/h2agent.json"), KID: "k1"}); err != nil {
		t.Fatal(err)
	}
	if status, code := ksOutcome(func() error { _, err := w.v.Session(ctx, w.token("agt_h2", false)); return err }()); status != 401 || code != agentcap.CodeInvalidJWT {
		t.Errorf("agent of a pending host: %d %s", status, code)
	}
	if got := srv.total.Load(); got != 0 {
		t.Errorf("the token of an agent of a pending host made %d fetches", got)
	}

	// Keys cached while the agent was active still tell it its status,
	// and still refuse a forged token, without a fetch.
	w.agent(t, "agt_a", srv.url("/active.json"), agentcap.StatusActive)
	if _, err := w.v.Session(ctx, w.token("agt_a", false)); err != nil {
		t.Fatal(err)
	}
	w.agent(t, "agt_a", srv.url("/active.json"), agentcap.StatusRevoked)
	if status, code := ksOutcome(func() error { _, err := w.v.Session(ctx, w.token("agt_a", false)); return err }()); status != 403 || code != agentcap.CodeAgentRevoked {
		t.Errorf("revoked agent with cached keys: %d %s", status, code)
	}
	if status, code := ksOutcome(func() error { _, err := w.v.Session(ctx, w.token("agt_a", true)); return err }()); status != 401 || code != agentcap.CodeInvalidJWT {
		t.Errorf("forged token of a revoked agent: %d %s", status, code)
	}
	if got := srv.fetches("/active.json"); got != 1 {
		t.Errorf("the active agent's URL was fetched %d times, want 1", got)
	}
}

// TestHostVerifierNoFetchForRevoked: the JWKS of a revoked or rejected
// host is never fetched, whatever its tokens; a pending host, which
// VerifyHost admits, still is.
func TestHostVerifierNoFetchForRevoked(t *testing.T) {
	srv := newKSServer(t, 0)
	clock := &ksClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	dir := NewMemoryDirectory()
	for _, h := range []struct{ id, status string }{{"hst_r", agentcap.StatusRevoked}, {"hst_x", agentcap.StatusRejected}, {"hst_p", agentcap.StatusPending}} {
		if err := dir.PutHost(&Host{ID: h.id, JWKSURL: srv.url("/" + h.id), Status: h.status}); err != nil {
			t.Fatal(err)
		}
	}
	hv, err := NewHostVerifier(HostVerifierConfig{Directory: dir, Audiences: []string{ksAudience}, KeyFetch: FetchPolicy{AllowLoopback: true}, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	token := func(iss string) string {
		now := clock.now().Unix()
		payload := fmt.Sprintf(`{"iss":%q,"aud":%q,"iat":%d,"exp":%d,"jti":"j%d"}`, iss, ksAudience, now, now+60, ksJTI.Add(1))
		return fuzzToken(`{"alg":"EdDSA","typ":"host+jwt","kid":"k1"}`, payload, 0)
	}
	for _, id := range []string{"hst_r", "hst_x"} {
		if status, code := ksOutcome(func() error { _, err := hv.VerifyHost(context.Background(), token(id)); return err }()); status != 401 || code != agentcap.CodeInvalidJWT {
			t.Errorf("%s: %d %s", id, status, code)
		}
	}
	if got := srv.total.Load(); got != 0 {
		t.Errorf("tokens of revoked and rejected hosts made %d fetches", got)
	}
	h, err := hv.VerifyHost(context.Background(), token("hst_p"))
	if err != nil || h.ID != "hst_p" || srv.fetches("/hst_p") != 1 {
		t.Errorf("pending host: %v, %v, %d fetches", h, err, srv.fetches("/hst_p"))
	}
}

// TestKeySetsRememberFailures: a URL whose fetch failed is not fetched
// again for jwksFailureMemory, by any key set, past the refresh floor
// and after its set was dropped; a remembered failure is not charged to
// beforeFetch; a refusal of beforeFetch fetches nothing and is not
// remembered.
func TestKeySetsRememberFailures(t *testing.T) {
	srv := newKSServer(t, 0)
	srv.set("/fail", []byte("<html>"))
	clock := &ksClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	// A bound of a byte keeps only the set last used.
	ks := newKeySets(FetchPolicy{AllowLoopback: true, CacheBytes: 1}, clock.now)
	charged := 0
	budget := func() error { charged++; return nil }
	fail := srv.url("/fail")
	attempt := func(when string) {
		t.Helper()
		if _, err := ks.Key(fail, "k1", budget); err == nil {
			t.Fatalf("%s: a key from a failing URL", when)
		}
	}
	attempt("first")
	clock.add(jwksMinRefresh + time.Second)
	attempt("past the floor")
	if _, err := ks.Key(srv.url("/other"), "k1", nil); err != nil {
		t.Fatal(err)
	}
	if n, _ := ks.stats(); n != 1 {
		t.Fatalf("%d key sets kept under a bound of one byte", n)
	}
	attempt("with a new key set")
	if got := srv.fetches("/fail"); got != 1 || charged != 1 {
		t.Errorf("within a minute of a failure: %d fetches, %d charged; want 1, 1", got, charged)
	}
	clock.add(jwksFailureMemory)
	attempt("a minute later")
	if got := srv.fetches("/fail"); got != 2 || charged != 2 {
		t.Errorf("after a minute: %d fetches, %d charged; want 2, 2", got, charged)
	}

	// A refused budget fetches nothing and leaves no failure behind.
	refusal := errors.New("over budget")
	if _, err := ks.Key(srv.url("/later"), "k1", func() error { return refusal }); err != refusal {
		t.Fatalf("refused budget: %v", err)
	}
	if _, err := ks.Key(srv.url("/later"), "k1", nil); err != nil || srv.fetches("/later") != 1 {
		t.Errorf("after a refused budget: %v, %d fetches", err, srv.fetches("/later"))
	}

	// Agent tokens (through go-oidc) are held to the same memory.
	w := newKSWorld(t, FetchPolicy{})
	w.agent(t, "agt_f", srv.url("/fail-agent"), agentcap.StatusActive)
	srv.set("/fail-agent", []byte("<html>"))
	for range 3 {
		if status, code := ksOutcome(func() error { _, err := w.v.Session(context.Background(), w.token("agt_f", false)); return err }()); status != 401 || code != agentcap.CodeInvalidJWT {
			t.Fatalf("token of an agent whose JWKS fails: %d %s", status, code)
		}
		w.clock.add(jwksMinRefresh + time.Second)
	}
	if got := srv.fetches("/fail-agent"); got != 1 {
		t.Errorf("3 tokens 11 s apart fetched a failing URL %d times, want 1", got)
	}
}

func (s *ksServer) setCacheControl(path, cc string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.header[path] = cc
}

// TestKeySetMaxAge is the withdrawn-key attack: an agent's key leaks
// (fuzzKey here), its owner replaces it in its JWK Set, and tokens signed
// with the leaked key keep coming. A cached key set is trusted for its max age only (the
// response's Cache-Control max-age, within the 10 s refresh floor and an
// hour; five minutes without one), then fetched again before it is used,
// so the leaked key stops verifying then, and stays refused an hour and a
// day later. Before, a cached set was fetched again only when a
// signature failed against it, so the leaked key verified for the life
// of the process.
func TestKeySetMaxAge(t *testing.T) {
	replacement := ed25519.NewKeyFromSeed([]byte("agentauth: the replacement key.."))
	tests := []struct {
		cacheControl string
		maxAge       time.Duration
	}{
		{"", 5 * time.Minute},
		{"public, max-age=60", time.Minute},
		{"max-age=600", 10 * time.Minute},
		{"max-age=86400", time.Hour},
		{"max-age=0", 10 * time.Second},
		{"no-store", 10 * time.Second},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("Cache-Control %q", tt.cacheControl), func(t *testing.T) {
			srv := newKSServer(t, 0)
			path := fmt.Sprintf("/agent%d.json", i)
			srv.setCacheControl(path, tt.cacheControl)
			w := newKSWorld(t, FetchPolicy{})
			w.agent(t, "agt_1", srv.url(path), agentcap.StatusActive)
			ctx := context.Background()
			if _, err := w.v.Session(ctx, w.token("agt_1", false)); err != nil {
				t.Fatal(err)
			}
			srv.set(path, ksJWKS(t, 0, jose.JSONWebKey{Key: replacement.Public(), KeyID: "k1"}))
			start := w.clock.now()
			at := func(d time.Duration) (int, agentcap.Code) {
				w.clock.add(start.Add(d).Sub(w.clock.now()))
				_, err := w.v.Session(ctx, w.token("agt_1", false))
				return ksOutcome(err)
			}
			if status, code := at(tt.maxAge - time.Second); status != 0 {
				t.Errorf("within the max age: %d %s", status, code)
			}
			for _, d := range []time.Duration{tt.maxAge, time.Hour, 24 * time.Hour} {
				if status, code := at(d); status != 401 || code != agentcap.CodeInvalidJWT {
					t.Errorf("leaked key at +%v: %d %s", d, status, code)
				}
			}
			if got := srv.fetches(path); got < 2 {
				t.Errorf("%d fetches, want the set fetched again", got)
			}
		})
	}
}

// TestKeySetKeyMaxAge: the keys the provider reads (Key, CachedKey) are
// held to the same max age.
func TestKeySetKeyMaxAge(t *testing.T) {
	srv := newKSServer(t, 0)
	srv.setCacheControl("/host.json", "max-age=120")
	clock := &ksClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	ks := newKeySets(FetchPolicy{AllowLoopback: true}, clock.now)
	url := srv.url("/host.json")
	pub, err := ks.Key(url, "k1", nil)
	if err != nil || !pub.Equal(fuzzKey.Public()) {
		t.Fatalf("Key = %x, %v", pub, err)
	}
	replacement := ed25519.NewKeyFromSeed([]byte("agentauth: the replacement key.."))
	srv.set("/host.json", ksJWKS(t, 0, jose.JSONWebKey{Key: replacement.Public(), KeyID: "k1"}))
	clock.add(119 * time.Second)
	if pub, err := ks.CachedKey(url, "k1"); err != nil || !pub.Equal(fuzzKey.Public()) {
		t.Errorf("CachedKey within the max age = %x, %v", pub, err)
	}
	clock.add(time.Second)
	if _, err := ks.CachedKey(url, "k1"); err == nil {
		t.Error("CachedKey gave a key past the max age")
	}
	if pub, err := ks.Key(url, "k1", nil); err != nil || !pub.Equal(replacement.Public()) {
		t.Errorf("Key past the max age = %x, %v; want the replacement", pub, err)
	}
}

// TestKeySetMaxAgeFailsClosed: a key set past its max age whose URL then
// fails is not used: the tokens it would verify are refused until a
// fetch succeeds again.
func TestKeySetMaxAgeFailsClosed(t *testing.T) {
	srv := newKSServer(t, 0)
	w := newKSWorld(t, FetchPolicy{})
	w.agent(t, "agt_1", srv.url("/agent.json"), agentcap.StatusActive)
	ctx := context.Background()
	if _, err := w.v.Session(ctx, w.token("agt_1", false)); err != nil {
		t.Fatal(err)
	}
	srv.set("/agent.json", []byte("<html>"))
	w.clock.add(jwksDefaultMaxAge)
	for range 2 {
		if status, code := ksOutcome(func() error { _, err := w.v.Session(ctx, w.token("agt_1", false)); return err }()); status != 401 || code != agentcap.CodeInvalidJWT {
			t.Errorf("past the max age, the URL failing: %d %s", status, code)
		}
	}
	srv.set("/agent.json", ksJWKS(t, 0, jose.JSONWebKey{Key: fuzzKey.Public(), KeyID: "k1"}))
	w.clock.add(jwksFailureMemory)
	if _, err := w.v.Session(ctx, w.token("agt_1", false)); err != nil {
		t.Errorf("once the URL answers again: %v", err)
	}
}
