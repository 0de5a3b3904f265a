package loadgen

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/client"
)

func TestParseMix(t *testing.T) {
	tests := []struct {
		in   string
		want Mix
		ok   bool
	}{
		{"read=60,transfer=15,batch=10,invalid=10,replay=5", DefaultMix, true},
		{" read=1 ", Mix{Read: 1}, true},
		{"transfer=2,read=0", Mix{Transfer: 2}, true},
		{"read=0", Mix{}, false},
		{"read=-1", Mix{}, false},
		{"read", Mix{}, false},
		{"write=1", Mix{}, false},
		{"", Mix{}, false},
	}
	for _, tt := range tests {
		got, err := ParseMix(tt.in)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("ParseMix(%q) = %+v, %v", tt.in, got, err)
		}
	}
}

func TestBreakSignature(t *testing.T) {
	for _, tok := range []string{"a.b.c", "a.b.A", "a.b.", "abc"} {
		if got := breakSignature(tok); got == tok || strings.Count(got, ".") != strings.Count(tok, ".") {
			t.Errorf("breakSignature(%q) = %q", tok, got)
		}
	}
}

func TestErrorCode(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":"invalid_jwt","message":"x"}`:                 "invalid_jwt",
		`{"error":{"code":"insufficient_funds","message":"x"}}`: "insufficient_funds",
		`{"data":{"transfer_id":"tr_1"}}`:                       "",
		`not json`:                                              "",
	} {
		if got := errorCode([]byte(body)); got != want {
			t.Errorf("errorCode(%s) = %q, want %q", body, got, want)
		}
	}
}

func TestRetryable(t *testing.T) {
	for _, tt := range []struct {
		status int
		code   string
		want   bool
	}{
		{0, "", true}, {502, "", true}, {503, "temporarily_unavailable", true}, {429, "rate_limited", true},
		{409, "idempotency_in_progress", true}, {409, "confirmation_used", false}, {409, "insufficient_funds", false},
		{401, "invalid_jwt", false}, {200, "", false},
	} {
		if got := retryable(tt.status, tt.code); got != tt.want {
			t.Errorf("retryable(%d, %q) = %v", tt.status, tt.code, got)
		}
	}
}

// testAgents makes n agents with fresh keys, known to no provider, and
// returns them with their public keys by agent id.
func testAgents(t *testing.T, target string, n int) ([]*Agent, map[string]ed25519.PublicKey) {
	t.Helper()
	ks := client.NewMemoryKeyStore()
	c, err := client.New(client.Config{AllowInsecureLoopback: true, Keys: ks})
	if err != nil {
		t.Fatal(err)
	}
	var out []*Agent
	keys := map[string]ed25519.PublicKey{}
	for i := range n {
		pub, key, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("k%d", i)
		if err := ks.Save(context.Background(), name, key); err != nil {
			t.Fatal(err)
		}
		a, err := c.Resume(context.Background(), client.Connection{Provider: target, Issuer: target,
			AgentID: fmt.Sprintf("agt_%d", i), HostKey: name, AgentKey: name})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &Agent{ID: a.ID(), User: "u", Source: "acc_1", Destination: "acc_2", agent: a})
		keys[a.ID()] = pub
	}
	return out, keys
}

// verify checks an agent JWT's signature and audience as a location
// would, less the clock.
func verify(keys map[string]ed25519.PublicKey, aud, tok string) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return false
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err2 := base64.RawURLEncoding.DecodeString(parts[2])
	var claims struct {
		Sub string `json:"sub"`
		Aud string `json:"aud"`
	}
	if err1 != nil || err2 != nil || json.Unmarshal(payload, &claims) != nil || claims.Aud != aud {
		return false
	}
	pub, ok := keys[claims.Sub]
	return ok && ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig)
}

// fakeBank answers as the bank does, without checking tokens, except
// that it fails the first execute of every Idempotency-Key as fail says,
// and records what each key and token did.
type fakeBank struct {
	fail func(w http.ResponseWriter) // nil: no failure
	keys map[string]ed25519.PublicKey
	aud  string

	mu       sync.Mutex
	seen     map[string]int    // executes by key
	ran      map[string]string // transfer id by key
	used     map[string]bool   // confirmation tokens consumed
	tokens   map[string]bool   // agent JWTs seen
	replayed int
	next     int
}

func newFakeBank(fail func(http.ResponseWriter)) *fakeBank {
	return &fakeBank{fail: fail, seen: map[string]int{}, ran: map[string]string{}, used: map[string]bool{}, tokens: map[string]bool{}}
}

func (f *fakeBank) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.mu.Lock()
	defer f.mu.Unlock()
	if !verify(f.keys, f.aud, tok) || f.tokens[tok] {
		if f.tokens[tok] {
			f.replayed++
		}
		w.WriteHeader(401)
		fmt.Fprint(w, `{"error":"invalid_jwt","message":"x"}`)
		return
	}
	f.tokens[tok] = true
	switch r.URL.Path {
	case "/capability/preview":
		f.next++
		fmt.Fprintf(w, `{"preview":{},"confirmation":{"token":"cfm_%d","expires_at":"2030-01-01T00:00:00Z"}}`, f.next)
	case "/capability/execute":
		var in struct {
			Token string `json:"confirmation_token"`
		}
		_ = json.Unmarshal(body, &in)
		if in.Token == "" {
			fmt.Fprint(w, `{"data":[]}`)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		f.seen[key]++
		if id, ok := f.ran[key]; ok {
			fmt.Fprintf(w, `{"data":{"transfer_id":%q}}`, id)
			return
		}
		if f.used[in.Token] {
			w.WriteHeader(409)
			fmt.Fprint(w, `{"error":"confirmation_used","message":"x"}`)
			return
		}
		f.used[in.Token] = true
		f.ran[key] = fmt.Sprintf("tr_%d", len(f.ran)+1)
		if f.seen[key] == 1 && f.fail != nil {
			f.fail(w)
			return
		}
		fmt.Fprintf(w, `{"data":{"transfer_id":%q}}`, f.ran[key])
	default:
		fmt.Fprint(w, `{"results":[]}`)
	}
}

// TestRetries: a transfer whose first answer is lost is sent again with
// the same key and token, and the stored answer acknowledges it once.
func TestRetries(t *testing.T) {
	for name, fail := range map[string]func(http.ResponseWriter){
		"none": nil,
		// The transfer ran, but its answer never arrived.
		"connection dropped": func(w http.ResponseWriter) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		},
		"503": func(w http.ResponseWriter) { w.WriteHeader(503); fmt.Fprint(w, `{"error":"temporarily_unavailable"}`) },
	} {
		t.Run(name, func(t *testing.T) {
			fb := newFakeBank(fail)
			srv := httptest.NewServer(fb)
			defer srv.Close()
			agents, keys := testAgents(t, srv.URL, 3)
			fb.keys, fb.aud = keys, srv.URL+"/capability/execute"
			var mu sync.Mutex
			observed := map[string]int{}
			s, err := Run(context.Background(), Options{
				Target: srv.URL, Agents: agents, Mix: Mix{Read: 2, Transfer: 3, Invalid: 1, Replay: 1},
				// Long enough for a replay to follow an accepted read on
				// a loaded machine, where a run of 700 ms once had none.
				Concurrency: 4, Duration: 2 * time.Second, Seed: 1, ResolveFor: 5 * time.Second,
				Observe: func(o Observation) {
					mu.Lock()
					observed[o.Kind]++
					mu.Unlock()
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			tr := s.Transfers
			if tr.Acknowledged == 0 || tr.Uncertain != 0 || len(tr.Refused) != 0 || tr.Acknowledged+tr.Abandoned != tr.Started {
				t.Fatalf("transfers %+v", tr)
			}
			fb.mu.Lock()
			defer fb.mu.Unlock()
			acked := map[string]string{}
			for _, a := range tr.Acks {
				acked[a.Key] = a.TransferID
			}
			if diff := cmp.Diff(fb.ran, acked); diff != "" {
				t.Errorf("transfers run (-) and acknowledged (+):\n%s", diff)
			}
			if retried := fail != nil; retried != (tr.Retries > 0) {
				t.Errorf("%d retries", tr.Retries)
			}
			for k, ks := range s.Kinds {
				if ks.Unexpected != 0 && !(fail != nil && k == KindTransfer) {
					t.Errorf("%s: %d unexpected: %v", k, ks.Unexpected, ks.Samples)
				}
				if observed[k] != ks.Requests {
					t.Errorf("%s: %d observed, %d counted", k, observed[k], ks.Requests)
				}
			}
			if s.Kinds[KindReplay] == nil || fb.replayed != s.Kinds[KindReplay].Requests {
				t.Errorf("%d replays refused, summary %+v", fb.replayed, s.Kinds[KindReplay])
			}
		})
	}
}

// TestUncertain: a transfer whose token was consumed by an attempt
// without a stored answer is uncertain, not refused.
func TestUncertain(t *testing.T) {
	fb := newFakeBank(nil)
	fb.fail = func(w http.ResponseWriter) {
		// The attempt consumed the token and the answer was lost and
		// not kept under the key.
		for k, n := range fb.seen {
			if n == 1 {
				delete(fb.ran, k)
			}
		}
		w.WriteHeader(502)
	}
	srv := httptest.NewServer(fb)
	defer srv.Close()
	agents, keys := testAgents(t, srv.URL, 1)
	fb.keys, fb.aud = keys, srv.URL+"/capability/execute"
	s, err := Run(context.Background(), Options{Target: srv.URL, Agents: agents, Mix: Mix{Transfer: 1},
		Concurrency: 1, Duration: 300 * time.Millisecond, ResolveFor: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tr := s.Transfers
	if tr.Uncertain == 0 || tr.Acknowledged != 0 || len(tr.UncertainKeys) != tr.Uncertain || tr.Uncertain+tr.Abandoned != tr.Started {
		t.Fatalf("transfers %+v", tr)
	}
}
