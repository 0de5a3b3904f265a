package main_test

// This file checks the bank against its written contract from the outside:
// it builds and runs the command, writes the directory file and every key
// as JSON by hand, and mints every agent JWT itself from raw Ed25519 keys
// (and, to forge, ECDSA and HMAC). It shares no code with the project's
// token handling, so a misreading of the protocol shared by the bank and
// the project's own test helpers cannot hide here.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// b64 is the unpadded base64url encoding of JWS and JWK.
func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// outsideKey is an Ed25519 key pair.
type outsideKey struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

func newOutsideKey(t *testing.T) outsideKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return outsideKey{priv: priv, pub: pub}
}

// jwk is the public key as an RFC 8037 JWK.
func (k outsideKey) jwk() map[string]any {
	return map[string]any{"kty": "OKP", "crv": "Ed25519", "x": b64(k.pub)}
}

// thumbprint is the RFC 7638 thumbprint of the public key: SHA-256 of
// the required members in lexicographic order, without whitespace.
func (k outsideKey) thumbprint() string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + b64(k.pub) + `"}`))
	return b64(sum[:])
}

// outsideToken is a JWT under construction.
type outsideToken struct {
	header map[string]any
	claims map[string]any
	// sign returns the signature of the JWS signing input.
	sign func(input []byte) []byte
}

func (tk *outsideToken) compact(t *testing.T) string {
	t.Helper()
	h, err := json.Marshal(tk.header)
	if err != nil {
		t.Fatal(err)
	}
	c, err := json.Marshal(tk.claims)
	if err != nil {
		t.Fatal(err)
	}
	input := b64(h) + "." + b64(c)
	return input + "." + b64(tk.sign([]byte(input)))
}

// tokenEdit changes a token before it is signed.
type tokenEdit func(*outsideToken)

func setClaim(name string, v any) tokenEdit {
	return func(tk *outsideToken) { tk.claims[name] = v }
}

func dropClaim(name string) tokenEdit {
	return func(tk *outsideToken) { delete(tk.claims, name) }
}

func setHeader(name string, v any) tokenEdit {
	return func(tk *outsideToken) { tk.header[name] = v }
}

func dropHeader(name string) tokenEdit {
	return func(tk *outsideToken) { delete(tk.header, name) }
}

// issued sets iat to now+offset and exp to iat+lifetime.
func issued(offset, lifetime time.Duration) tokenEdit {
	return func(tk *outsideToken) {
		iat := time.Now().Add(offset)
		tk.claims["iat"] = iat.Unix()
		tk.claims["exp"] = iat.Add(lifetime).Unix()
	}
}

func signedBy(priv ed25519.PrivateKey) tokenEdit {
	return func(tk *outsideToken) {
		tk.sign = func(in []byte) []byte { return ed25519.Sign(priv, in) }
	}
}

func signedWith(sign func([]byte) []byte) tokenEdit {
	return func(tk *outsideToken) { tk.sign = sign }
}

// newJTI returns a fresh random token id.
func newJTI(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// outsideAgent is an agent of the directory file with its private key.
type outsideAgent struct {
	id   string
	host string
	key  outsideKey
	// kid goes into the JWT header: the thumbprint for an inline key, as
	// the published client sends it, or the directory's kid for a JWKS.
	kid string
}

// outsideWorld is the directory the bank runs with, and the keys behind it.
type outsideWorld struct {
	file   string
	hosts  map[string]outsideKey
	agents map[string]*outsideAgent
	// stranger is a key in the agents' JWKS under another kid, and a key
	// of no one.
	stranger outsideKey
	jwks     *httptest.Server
}

// grant is one agent_capability_grants entry.
func grant(capability string, constraints map[string]any) map[string]any {
	g := map[string]any{"capability": capability, "status": "active"}
	if constraints != nil {
		g["constraints"] = constraints
	}
	return g
}

// constraintsJSON reads constraints written as JSON.
func constraintsJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("constraints %s: %v", s, err)
	}
	return m
}

func newOutsideWorld(t *testing.T) *outsideWorld {
	t.Helper()
	w := &outsideWorld{
		hosts:    map[string]outsideKey{},
		agents:   map[string]*outsideAgent{},
		stranger: newOutsideKey(t),
	}
	jwksAgentKey := newOutsideKey(t)
	jwksHostKey := newOutsideKey(t)
	w.jwks = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var keys []map[string]any
		switch r.URL.Path {
		case "/agents.json":
			a, s := jwksAgentKey.jwk(), w.stranger.jwk()
			a["kid"], s["kid"] = "agent-key-1", "agent-key-2"
			a["use"], a["alg"] = "sig", "EdDSA"
			keys = []map[string]any{s, a}
		case "/host.json":
			h := jwksHostKey.jwk()
			h["kid"] = "host-key-1"
			keys = []map[string]any{h}
		default:
			http.NotFound(rw, r)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(map[string]any{"keys": keys})
	}))
	t.Cleanup(w.jwks.Close)

	var hosts []map[string]any
	host := func(id, user, status string, extra map[string]any) {
		k := newOutsideKey(t)
		w.hosts[id] = k
		h := map[string]any{"id": id, "public_key": k.jwk(), "status": status}
		if user != "" {
			h["user_id"] = user
		}
		for name, v := range extra {
			h[name] = v
		}
		hosts = append(hosts, h)
	}
	host("hst_alice", "user_alice", "active", nil)
	host("hst_bob", "user_bob", "active", map[string]any{"default_capabilities": []string{"exchange_rate"}})
	host("hst_robots", "", "active", nil)
	host("hst_revoked", "user_alice", "revoked", nil)
	host("hst_pending", "user_alice", "pending", nil)
	hosts = append(hosts, map[string]any{"id": "hst_jwks", "jwks_url": w.jwks.URL + "/host.json", "user_id": "user_alice", "status": "active"})

	var agents []map[string]any
	agent := func(id, hostID, mode, status string, grants ...map[string]any) {
		k := newOutsideKey(t)
		w.agents[id] = &outsideAgent{id: id, host: hostID, key: k, kid: k.thumbprint()}
		if grants == nil {
			grants = []map[string]any{}
		}
		agents = append(agents, map[string]any{
			"id": id, "host_id": hostID, "mode": mode, "status": status,
			"public_key": k.jwk(), "agent_capability_grants": grants,
		})
	}
	everyday := []map[string]any{grant("list_accounts", nil), grant("check_balance", nil), grant("exchange_rate", nil)}

	agent("agt_alice", "hst_alice", "delegated", "active", append(slices.Clone(everyday),
		grant("transfer_money", constraintsJSON(t, `{"destination_account":{"not_in":["acc_666"]},"amount":{"max":1000},"currency":"USD"}`)))...)
	// Any amount in any currency but to acc_666: no bound, so no
	// currency.
	agent("agt_alice_any", "hst_alice", "delegated", "active",
		grant("transfer_money", constraintsJSON(t, `{"destination_account":{"not_in":["acc_666"]}}`)))
	agent("agt_bob", "hst_bob", "delegated", "active",
		grant("list_accounts", nil), grant("check_balance", nil),
		grant("transfer_money", constraintsJSON(t, `{"destination_account":"acc_123"}`)))
	agent("agt_robot", "hst_robots", "autonomous", "active", append(slices.Clone(everyday),
		grant("transfer_money", constraintsJSON(t, `{"destination_account":"acc_123"}`)))...)
	agent("agt_alice_robot", "hst_alice", "autonomous", "active", everyday...)
	agent("agt_on_jwks_host", "hst_jwks", "delegated", "active", everyday...)

	// Constraints.
	agent("agt_eur", "hst_alice", "delegated", "active",
		grant("transfer_money", constraintsJSON(t, `{"destination_account":"acc_456","currency":"eur"}`)))
	agent("agt_badop", "hst_alice", "delegated", "active",
		grant("transfer_money", constraintsJSON(t, `{"destination_account":"acc_456","amount":{"between":[1,10]}}`)))
	agent("agt_amount_only", "hst_alice", "delegated", "active",
		grant("transfer_money", constraintsJSON(t, `{"amount":{"max":10}}`)))
	agent("agt_bare", "hst_alice", "delegated", "active", grant("transfer_money", nil))
	agent("agt_two", "hst_alice", "delegated", "active",
		grant("transfer_money", constraintsJSON(t, `{"destination_account":"acc_456","amount":{"max":10},"currency":"USD"}`)),
		grant("transfer_money", constraintsJSON(t, `{"destination_account":"acc_124","amount":{"min":100,"max":1000},"currency":"USD"}`)))
	agent("agt_unitless", "hst_alice", "delegated", "active",
		grant("transfer_money", constraintsJSON(t, `{"destination_account":"acc_456","amount":{"max":500}}`)))
	agent("agt_ops", "hst_alice", "delegated", "active",
		grant("transfer_money", constraintsJSON(t, `{"destination_account":{"eq":"acc_456"},"amount":{"min":1,"max":50},"currency":{"in":["USD"]},"source_account":{"not_in":["acc_124"]}}`)))
	agent("agt_exact_number", "hst_alice", "delegated", "active",
		grant("check_balance", constraintsJSON(t, `{"account_id":123}`)))
	agent("agt_in_mixed", "hst_alice", "delegated", "active",
		grant("check_balance", constraintsJSON(t, `{"account_id":{"in":[123,"acc_124"]}}`)))
	agent("agt_max_on_text", "hst_alice", "delegated", "active",
		grant("check_balance", constraintsJSON(t, `{"account_id":{"max":1000}}`)))
	agent("agt_missing", "hst_alice", "delegated", "active",
		grant("list_accounts", constraintsJSON(t, `{"a":"x","b":{"eq":"x"},"c":{"min":1},"d":{"max":1},"e":{"in":["x"]}}`)))

	// Grant states.
	agent("agt_grants", "hst_alice", "delegated", "active",
		map[string]any{"capability": "list_accounts", "status": "active", "expires_at": "2020-01-01T00:00:00Z"},
		map[string]any{"capability": "check_balance", "status": "pending"},
		map[string]any{"capability": "transfer_money", "status": "denied", "constraints": map[string]any{"destination_account": "acc_456"}},
		map[string]any{"capability": "exchange_rate", "status": "active", "expires_at": "2999-01-01T00:00:00Z"})

	// Agent and host states.
	for _, s := range []string{"revoked", "expired", "pending", "rejected", "claimed"} {
		agent("agt_"+s, "hst_alice", "delegated", s, everyday...)
	}
	agent("agt_of_revoked_host", "hst_revoked", "delegated", "active", everyday...)
	agent("agt_of_pending_host", "hst_pending", "delegated", "active", everyday...)

	// The agent whose key is found in a JWKS by kid.
	w.agents["agt_jwks"] = &outsideAgent{id: "agt_jwks", host: "hst_alice", key: jwksAgentKey, kid: "agent-key-1"}
	agents = append(agents, map[string]any{
		"id": "agt_jwks", "host_id": "hst_alice", "mode": "delegated", "status": "active",
		"jwks_url": w.jwks.URL + "/agents.json", "kid": "agent-key-1",
		"agent_capability_grants": everyday,
	})

	data, err := json.MarshalIndent(map[string]any{"hosts": hosts, "agents": agents}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	w.file = filepath.Join(t.TempDir(), "directory.json")
	if err := os.WriteFile(w.file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

// outsideLog collects a process's output while it runs.
type outsideLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *outsideLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *outsideLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// outsideBank is a running bank.
type outsideBank struct {
	url    string
	cmd    *exec.Cmd
	out    *outsideLog
	done   chan struct{}
	client *http.Client
	world  *outsideWorld
}

func outsideBuild(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command builds the bank: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "bank")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func outsideFreeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// outsideStart runs the bank as the contract starts it, on a free
// loopback port, and waits for its discovery document. A port taken by
// someone else between the probe and the bank's listen makes it retry.
func outsideStart(t *testing.T, bin string, w *outsideWorld, extra ...string) *outsideBank {
	t.Helper()
	var last string
	for range 3 {
		addr := outsideFreeAddr(t)
		b := &outsideBank{
			url:    "http://" + addr,
			out:    &outsideLog{},
			done:   make(chan struct{}),
			client: &http.Client{Timeout: 10 * time.Second},
			world:  w,
		}
		b.cmd = exec.Command(bin, append([]string{"-addr", addr, "-issuer", b.url, "-directory", w.file}, extra...)...)
		b.cmd.Stdout, b.cmd.Stderr = b.out, b.out
		if err := b.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			_ = b.cmd.Wait()
			close(b.done)
		}()
		if b.ready() {
			t.Cleanup(func() { b.stop(t) })
			return b
		}
		last = b.out.String()
	}
	t.Fatalf("the bank did not start:\n%s", last)
	return nil
}

func (b *outsideBank) ready() bool {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-b.done:
			return false
		default:
		}
		if resp, err := b.client.Get(b.url + "/.well-known/agent-configuration"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
	}
	_ = b.cmd.Process.Kill()
	<-b.done
	return false
}

// stop ends the bank with SIGTERM, or kills it if it lingers.
func (b *outsideBank) stop(t *testing.T) {
	select {
	case <-b.done:
		return
	default:
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(15 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
		t.Errorf("the bank ignored SIGTERM")
	}
}

// token mints an agent JWT as the published client does, with edits.
func (b *outsideBank) token(t *testing.T, agentID string, edits ...tokenEdit) string {
	t.Helper()
	a, ok := b.world.agents[agentID]
	if !ok {
		t.Fatalf("no agent %q", agentID)
	}
	now := time.Now()
	tk := &outsideToken{
		header: map[string]any{"alg": "EdDSA", "typ": "agent+jwt", "kid": a.kid},
		claims: map[string]any{
			"sub": a.id, "aud": b.url + "/capability/execute",
			"iat": now.Unix(), "exp": now.Add(60 * time.Second).Unix(), "jti": newJTI(t),
		},
	}
	signedBy(a.key.priv)(tk)
	for _, e := range edits {
		e(tk)
	}
	return tk.compact(t)
}

// answer is one HTTP answer of the bank.
type answer struct {
	status int
	header http.Header
	body   []byte
	obj    map[string]any // the body as an object; numbers are json.Number
}

func (a answer) code() string {
	s, _ := a.obj["error"].(string)
	return s
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.status, a.body) }

// decodeJSON reads JSON with its numbers as written.
func decodeJSON(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data")
	}
	return nil
}

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := decodeJSON([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

// do sends one request through the same plain HTTP round trip as the
// black-box test (no token code is shared) and decodes the answer strictly.
func (b *outsideBank) do(t *testing.T, method, path, token, body string) answer {
	t.Helper()
	status, header, data := roundTrip(t, b.client, b.url, method, path, token, body)
	a := answer{status: status, header: header, body: data}
	if err := decodeJSON(data, &a.obj); err != nil {
		t.Fatalf("%s %s: %d, the body is not a JSON object (%v): %s", method, path, status, err, data)
	}
	return a
}

func (b *outsideBank) execute(t *testing.T, token, capability, args string) answer {
	t.Helper()
	body := `{"capability":` + quote(capability)
	if args != "" {
		body += `,"arguments":` + args
	}
	return b.do(t, http.MethodPost, "/capability/execute", token, body+"}")
}

// executeConfirmed executes as agentID, an agent that confirms what it
// is asked to: a 428 confirmation_required is answered by executing
// again, with a fresh JWT, carrying the confirmation token that came
// with the refusal.
func (b *outsideBank) executeConfirmed(t *testing.T, agentID, capability, args string) answer {
	t.Helper()
	r := b.execute(t, b.token(t, agentID), capability, args)
	if r.status != http.StatusPreconditionRequired || r.code() != "confirmation_required" {
		return r
	}
	c, _ := r.obj["confirmation"].(map[string]any)
	tok, _ := c["token"].(string)
	if tok == "" {
		t.Fatalf("428 without a confirmation token: %s", r.body)
	}
	return b.do(t, http.MethodPost, "/capability/execute", b.token(t, agentID),
		`{"capability":`+quote(capability)+`,"arguments":`+args+`,"confirmation_token":`+quote(tok)+`}`)
}

func quote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// rat reads a JSON number exactly.
func rat(t *testing.T, v any) *big.Rat {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v (%T) is not a number", v, v)
	}
	r, ok := new(big.Rat).SetString(n.String())
	if !ok {
		t.Fatalf("%q is not a number", n)
	}
	return r
}

func ratOf(s string) *big.Rat {
	r, _ := new(big.Rat).SetString(s)
	return r
}

// secretsOfTheLedger are pieces of the hidden cause of the ledger outage,
// a database error quoting its connection string.
var secretsOfTheLedger = []string{"://", "postgres", "s3cret", "ledger", "5432", "dial", "refused"}

func TestOutsideContract(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the bank")
	}
	bin := outsideBuild(t)
	t.Run("directory file refused at start", func(t *testing.T) { outsideBadDirectories(t, bin) })

	w := newOutsideWorld(t)
	b := outsideStart(t, bin, w, "-dev-allow-loopback-jwks")

	t.Run("discovery", func(t *testing.T) { outsideDiscovery(t, b) })
	t.Run("list and describe", func(t *testing.T) { outsideListing(t, b) })
	t.Run("data", func(t *testing.T) { outsideData(t, b) })
	t.Run("transfer_money", func(t *testing.T) { outsideTransfers(t, b) })
	t.Run("exchange_rate", func(t *testing.T) { outsideRates(t, b) })
	t.Run("autonomous agents", func(t *testing.T) { outsideAutonomous(t, b) })
	t.Run("agent JWT", func(t *testing.T) { outsideJWT(t, b) })
	t.Run("grants", func(t *testing.T) { outsideGrants(t, b) })
	t.Run("constraints", func(t *testing.T) { outsideConstraints(t, b) })
	t.Run("agent and host states", func(t *testing.T) { outsideStates(t, b) })
	t.Run("batch", func(t *testing.T) { outsideBatch(t, b) })
	t.Run("loopback JWKS refused without the flag", func(t *testing.T) {
		strict := outsideStart(t, bin, w)
		r := strict.execute(t, strict.token(t, "agt_jwks"), "list_accounts", "")
		if r.status != 401 || r.code() != "invalid_jwt" {
			t.Errorf("got %v, want 401 invalid_jwt", r)
		}
	})
	t.Run("execution log", func(t *testing.T) { outsideLogLines(t, bin, w) })
}

func outsideBadDirectories(t *testing.T, bin string) {
	good := func() map[string]any {
		k := newOutsideKey(t)
		return map[string]any{
			"hosts": []any{map[string]any{"id": "hst_a", "public_key": k.jwk(), "user_id": "user_alice", "status": "active"}},
			"agents": []any{map[string]any{
				"id": "agt_a", "host_id": "hst_a", "mode": "delegated", "status": "active", "public_key": k.jwk(),
				"agent_capability_grants": []any{map[string]any{"capability": "check_balance", "status": "active"}},
			}},
		}
	}
	edited := func(edit func(m map[string]any)) string {
		m := good()
		edit(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	first := func(m map[string]any, list string) map[string]any { return m[list].([]any)[0].(map[string]any) }
	cases := []struct {
		name, content string
		// want are all to be found in the output.
		want []string
	}{
		{"unknown top-level member", edited(func(m map[string]any) { m["users"] = []any{} }), []string{"users"}},
		{"host member in camel case", edited(func(m map[string]any) {
			h := first(m, "hosts")
			h["publicKey"] = h["public_key"]
			delete(h, "public_key")
		}), []string{"publicKey"}},
		{"unknown agent member", edited(func(m map[string]any) { first(m, "agents")["hostId"] = "hst_a" }), []string{"hostId"}},
		{"unknown grant member", edited(func(m map[string]any) {
			first(m, "agents")["agent_capability_grants"].([]any)[0].(map[string]any)["expiresAt"] = "2030-01-01T00:00:00Z"
		}), []string{"expiresAt"}},
		{"truncated JSON", `{"hosts": [`, nil},
		{"not an object", `[]`, nil},
		{"wrong member type", edited(func(m map[string]any) { first(m, "agents")["agent_capability_grants"] = "check_balance" }), []string{"agent_capability_grants"}},
	}
	dir := t.TempDir()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, fmt.Sprintf("dir%d.json", i))
			if err := os.WriteFile(file, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			addr := outsideFreeAddr(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, "-addr", addr, "-issuer", "http://"+addr, "-directory", file).CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("the bank started and served with this file:\n%s", out)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() == 0 {
				t.Fatalf("exit %v, want a failure:\n%s", err, out)
			}
			// A clear message names the file and what is wrong in it.
			for _, want := range append([]string{filepath.Base(file)}, c.want...) {
				if !strings.Contains(string(out), want) {
					t.Errorf("the message lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

func outsideDiscovery(t *testing.T, b *outsideBank) {
	r := b.do(t, http.MethodGet, "/.well-known/agent-configuration", "", "")
	if r.status != 200 {
		t.Fatalf("got %v", r)
	}
	if got := r.obj["issuer"]; got != b.url {
		t.Errorf("issuer %v, want %s", got, b.url)
	}
	if got, want := r.obj["default_location"], b.url+"/capability/execute"; got != want {
		t.Errorf("default_location %v, want %s", got, want)
	}
}

// outsideListed is one capability of a listing, as far as the contract says.
type outsideListed struct {
	Name        string `json:"name"`
	GrantStatus string `json:"grant_status,omitempty"`
}

func outsideListing(t *testing.T, b *outsideBank) {
	list := func(t *testing.T, token string) []outsideListed {
		r := b.do(t, http.MethodGet, "/capability/list", token, "")
		if r.status != 200 {
			t.Fatalf("got %v", r)
		}
		var body struct {
			Capabilities []outsideListed `json:"capabilities"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(body.Capabilities, func(x, y outsideListed) int { return strings.Compare(x.Name, y.Name) })
		return body.Capabilities
	}
	t.Run("without authentication only the public capability", func(t *testing.T) {
		if diff := cmp.Diff([]outsideListed{{Name: "exchange_rate"}}, list(t, "")); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("with an agent JWT", func(t *testing.T) {
		want := []outsideListed{
			{"check_balance", "granted"}, {"exchange_rate", "granted"},
			{"list_accounts", "granted"}, {"statement_export", "not_granted"}, {"transfer_money", "granted"},
		}
		if diff := cmp.Diff(want, list(t, b.token(t, "agt_alice"))); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		want = []outsideListed{
			{"check_balance", "not_granted"}, {"exchange_rate", "not_granted"},
			{"list_accounts", "not_granted"}, {"statement_export", "not_granted"}, {"transfer_money", "granted"},
		}
		if diff := cmp.Diff(want, list(t, b.token(t, "agt_bare"))); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("describe transfer_money", func(t *testing.T) {
		r := b.do(t, http.MethodGet, "/capability/describe?name=transfer_money", b.token(t, "agt_alice"), "")
		if r.status != 200 {
			t.Fatalf("got %v", r)
		}
		got := map[string]any{
			"name": r.obj["name"], "risk": r.obj["risk"], "approval_strength": r.obj["approval_strength"],
			"required_constraints": r.obj["required_constraints"],
		}
		want := map[string]any{
			"name": "transfer_money", "risk": "high", "approval_strength": "webauthn",
			"required_constraints": []any{"destination_account"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if _, ok := r.obj["input"].(map[string]any); !ok {
			t.Errorf("no input schema: %s", r.body)
		}
	})
	t.Run("describe the public capability without authentication", func(t *testing.T) {
		r := b.do(t, http.MethodGet, "/capability/describe?name=exchange_rate", "", "")
		if r.status != 200 || r.obj["name"] != "exchange_rate" {
			t.Errorf("got %v", r)
		}
	})
	t.Run("describe an unknown capability", func(t *testing.T) {
		r := b.do(t, http.MethodGet, "/capability/describe?name=close_account", b.token(t, "agt_alice"), "")
		if r.status != 404 || r.code() != "capability_not_found" {
			t.Errorf("got %v, want 404 capability_not_found", r)
		}
	})
}

// balance reads an account's balance through check_balance.
func (b *outsideBank) balance(t *testing.T, agentID, account string) *big.Rat {
	t.Helper()
	r := b.execute(t, b.token(t, agentID), "check_balance", `{"account_id":`+quote(account)+`}`)
	if r.status != 200 {
		t.Fatalf("balance of %s: %v", account, r)
	}
	data, _ := r.obj["data"].(map[string]any)
	return rat(t, data["balance"])
}

func outsideData(t *testing.T, b *outsideBank) {
	t.Run("list_accounts", func(t *testing.T) {
		for _, c := range []struct {
			agent string
			want  []any
		}{
			{"agt_alice", []any{
				map[string]any{"account_id": "acc_123", "type": "checking", "currency": "USD"},
				map[string]any{"account_id": "acc_124", "type": "savings", "currency": "EUR"},
			}},
			{"agt_bob", []any{map[string]any{"account_id": "acc_456", "type": "checking", "currency": "USD"}}},
		} {
			r := b.execute(t, b.token(t, c.agent), "list_accounts", "")
			if r.status != 200 {
				t.Fatalf("%s: got %v", c.agent, r)
			}
			accounts, ok := r.obj["data"].([]any)
			if !ok {
				t.Errorf("%s: data is not a JSON array of accounts: %s", c.agent, r.body)
				continue
			}
			// Names are the bank's to choose; they must be there.
			var got []any
			for _, a := range accounts {
				m, _ := a.(map[string]any)
				if name, _ := m["name"].(string); name == "" {
					t.Errorf("%s: account without a name: %v", c.agent, a)
				}
				got = append(got, map[string]any{"account_id": m["account_id"], "type": m["type"], "currency": m["currency"]})
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c.agent, diff)
			}
		}
	})
	t.Run("check_balance", func(t *testing.T) {
		for _, c := range []struct{ agent, account, balance, currency string }{
			{"agt_alice", "acc_123", "5000.00", "USD"},
			{"agt_alice", "acc_124", "1200.00", "EUR"},
			{"agt_bob", "acc_456", "300.00", "USD"},
		} {
			r := b.execute(t, b.token(t, c.agent), "check_balance", `{"account_id":`+quote(c.account)+`}`)
			if r.status != 200 {
				t.Fatalf("%s: got %v", c.account, r)
			}
			data, _ := r.obj["data"].(map[string]any)
			if data["account_id"] != c.account || data["currency"] != c.currency || rat(t, data["balance"]).Cmp(ratOf(c.balance)) != 0 {
				t.Errorf("got %s, want %s %s %s", r.body, c.account, c.balance, c.currency)
			}
		}
	})
	t.Run("check_balance errors", func(t *testing.T) {
		for _, c := range []struct {
			name, agent, account string
			status               int
			code                 string
		}{
			{"another user's account", "agt_alice", "acc_456", 404, "account_not_found"},
			{"another user's account, from bob", "agt_bob", "acc_123", 404, "account_not_found"},
			{"no such account", "agt_alice", "acc_000", 404, "account_not_found"},
			{"ledger outage", "agt_alice", "acc_999", 500, "internal_error"},
		} {
			r := b.execute(t, b.token(t, c.agent), "check_balance", `{"account_id":`+quote(c.account)+`}`)
			if r.status != c.status || r.code() != c.code {
				t.Errorf("%s: got %v, want %d %s", c.name, r, c.status, c.code)
			}
			for _, s := range secretsOfTheLedger {
				if bytes.Contains(r.body, []byte(s)) {
					t.Errorf("%s: the answer holds %q: %s", c.name, s, r.body)
				}
			}
		}
	})
}

func outsideTransfers(t *testing.T, b *outsideBank) {
	transfer := func(agent, source, destination, amount, currency string) answer {
		t.Helper()
		return b.executeConfirmed(t, agent, "transfer_money", fmt.Sprintf(
			`{"source_account":%q,"destination_account":%q,"amount":%s,"currency":%q}`, source, destination, amount, currency))
	}
	t.Run("completed", func(t *testing.T) {
		for _, c := range []struct {
			agent, source, destination, amount, currency, want string
		}{
			{"agt_alice", "acc_123", "acc_456", "100", "USD", "USD"},
			{"agt_alice_any", "acc_124", "acc_456", "10.5", "eur", "EUR"},
			{"agt_alice_any", "acc_123", "acc_456", "1", "gBp", "GBP"},
			{"agt_bob", "acc_456", "acc_123", "5", "Usd", "USD"},
		} {
			r := transfer(c.agent, c.source, c.destination, c.amount, c.currency)
			if r.status != 200 {
				t.Errorf("%s %s %s: got %v", c.agent, c.amount, c.currency, r)
				continue
			}
			data, _ := r.obj["data"].(map[string]any)
			if id, _ := data["transfer_id"].(string); id == "" {
				t.Errorf("no transfer_id: %s", r.body)
			}
			if data["status"] != "completed" || data["currency"] != c.want || rat(t, data["amount"]).Cmp(ratOf(c.amount)) != 0 {
				t.Errorf("got %s, want completed %s %s", r.body, c.amount, c.want)
			}
		}
	})
	t.Run("money moves", func(t *testing.T) {
		src, dst := b.balance(t, "agt_alice", "acc_123"), b.balance(t, "agt_bob", "acc_456")
		if r := transfer("agt_alice", "acc_123", "acc_456", "12.34", "USD"); r.status != 200 {
			t.Fatalf("got %v", r)
		}
		amount := ratOf("12.34")
		if got, want := b.balance(t, "agt_alice", "acc_123"), new(big.Rat).Sub(src, amount); got.Cmp(want) != 0 {
			t.Errorf("acc_123 holds %s, want %s", got.FloatString(2), want.FloatString(2))
		}
		if got, want := b.balance(t, "agt_bob", "acc_456"), new(big.Rat).Add(dst, amount); got.Cmp(want) != 0 {
			t.Errorf("acc_456 holds %s, want %s", got.FloatString(2), want.FloatString(2))
		}
	})
	t.Run("refused", func(t *testing.T) {
		for _, c := range []struct {
			name, agent, source, destination, amount, currency string
			status                                             int
			code                                               string
		}{
			{"zero amount", "agt_alice", "acc_123", "acc_456", "0", "USD", 400, "invalid_request"},
			{"negative amount", "agt_alice", "acc_123", "acc_456", "-5", "USD", 400, "invalid_request"},
			{"unsupported currency", "agt_alice", "acc_123", "acc_456", "1", "JPY", 400, "invalid_request"},
			{"insufficient funds", "agt_bob", "acc_456", "acc_123", "100000", "USD", 409, "insufficient_funds"},
			{"source not owned", "agt_bob", "acc_124", "acc_123", "1", "USD", 404, "account_not_found"},
			{"source of no one", "agt_bob", "acc_000", "acc_123", "1", "USD", 404, "account_not_found"},
		} {
			if r := transfer(c.agent, c.source, c.destination, c.amount, c.currency); r.status != c.status || r.code() != c.code {
				t.Errorf("%s: got %v, want %d %s", c.name, r, c.status, c.code)
			}
		}
	})
	t.Run("confirmation", func(t *testing.T) {
		args := `{"source_account":"acc_123","destination_account":"acc_456","amount":7,"currency":"USD"}`
		before := b.balance(t, "agt_alice", "acc_123")
		// The preview shows the balance the transfer leaves and moves
		// nothing; its token confirms this call, once.
		p := b.do(t, http.MethodPost, "/capability/preview", b.token(t, "agt_alice"), `{"capability":"transfer_money","arguments":`+args+`}`)
		preview, _ := p.obj["preview"].(map[string]any)
		conf, _ := p.obj["confirmation"].(map[string]any)
		token, _ := conf["token"].(string)
		if p.status != 200 || token == "" || rat(t, preview["source_balance_after"]).Cmp(new(big.Rat).Sub(before, ratOf("7"))) != 0 {
			t.Fatalf("preview: %v", p)
		}
		if _, ok := preview["destination_balance_after"]; ok {
			t.Errorf("the preview shows the balance of another user's account: %s", p.body)
		}
		if got := b.balance(t, "agt_alice", "acc_123"); got.Cmp(before) != 0 {
			t.Errorf("the preview moved money: %s, was %s", got.FloatString(2), before.FloatString(2))
		}
		send := func(agent, args, token string) answer {
			return b.do(t, http.MethodPost, "/capability/execute", b.token(t, agent),
				`{"capability":"transfer_money","arguments":`+args+`,"confirmation_token":`+quote(token)+`}`)
		}
		if r := b.execute(t, b.token(t, "agt_alice"), "transfer_money", args); r.status != 428 || r.code() != "confirmation_required" || r.obj["preview"] == nil {
			t.Errorf("without a token: %v", r)
		}
		if r := send("agt_alice", strings.Replace(args, `"amount":7`, `"amount":8`, 1), token); r.status != 409 || r.code() != "confirmation_mismatch" {
			t.Errorf("another amount: %v", r)
		}
		if r := send("agt_two", args, token); r.status != 403 || r.code() != "invalid_confirmation" {
			t.Errorf("another agent's token: %v", r)
		}
		if r := send("agt_alice", args, token); r.status != 200 {
			t.Errorf("confirmed: %v", r)
		}
		if r := send("agt_alice", args, token); r.status != 409 || r.code() != "confirmation_used" {
			t.Errorf("the token again: %v", r)
		}
	})
}

func outsideRates(t *testing.T, b *outsideBank) {
	currencies := []string{"USD", "EUR", "GBP"}
	rate := func(agent, from, to string) answer {
		t.Helper()
		return b.execute(t, b.token(t, agent), "exchange_rate", fmt.Sprintf(`{"from":%q,"to":%q}`, from, to))
	}
	for _, from := range currencies {
		for _, to := range currencies {
			r := rate("agt_alice", from, to)
			if r.status != 200 {
				t.Errorf("%s to %s: got %v", from, to, r)
				continue
			}
			data, _ := r.obj["data"].(map[string]any)
			if data["from"] != from || data["to"] != to || rat(t, data["rate"]).Sign() <= 0 {
				t.Errorf("%s to %s: got %s", from, to, r.body)
				continue
			}
			// Fixed: the same for anyone, every time.
			again := rate("agt_robot", from, to)
			if again.status != 200 {
				t.Errorf("%s to %s again: got %v", from, to, again)
				continue
			}
			data2, _ := again.obj["data"].(map[string]any)
			if rat(t, data2["rate"]).Cmp(rat(t, data["rate"])) != 0 {
				t.Errorf("%s to %s: rate %v, then %v", from, to, data["rate"], data2["rate"])
			}
		}
	}
	for _, c := range [][2]string{{"USD", "JPY"}, {"CHF", "EUR"}} {
		if r := rate("agt_alice", c[0], c[1]); r.status != 400 || r.code() != "invalid_request" {
			t.Errorf("%s to %s: got %v, want 400 invalid_request", c[0], c[1], r)
		}
	}
}

func outsideAutonomous(t *testing.T, b *outsideBank) {
	for _, c := range []struct {
		agent, capability, args string
	}{
		{"agt_robot", "list_accounts", ""},
		{"agt_robot", "check_balance", `{"account_id":"acc_123"}`},
		{"agt_robot", "transfer_money", `{"source_account":"acc_123","destination_account":"acc_123","amount":1,"currency":"USD"}`},
		// An autonomous agent acts for no user, even under a host linked to one.
		{"agt_alice_robot", "list_accounts", ""},
		{"agt_alice_robot", "check_balance", `{"account_id":"acc_123"}`},
	} {
		r := b.execute(t, b.token(t, c.agent), c.capability, c.args)
		if r.status != 403 {
			t.Errorf("%s %s: got %v, want 403", c.agent, c.capability, r)
		}
		if bytes.Contains(r.body, []byte("5000")) || bytes.Contains(r.body, []byte("checking")) {
			t.Errorf("%s %s: the answer shows account data: %s", c.agent, c.capability, r.body)
		}
	}
	if r := b.execute(t, b.token(t, "agt_robot"), "exchange_rate", `{"from":"EUR","to":"USD"}`); r.status != 200 {
		t.Errorf("exchange_rate: got %v", r)
	}
}

// outsideJWT checks the agent JWT rules, one change to a good token at a
// time, on exchange_rate (granted to agt_alice, never refused for its
// arguments).
func outsideJWT(t *testing.T, b *outsideBank) {
	const args = `{"from":"USD","to":"EUR"}`
	execute := b.url + "/capability/execute"
	alice := b.world.agents["agt_alice"]
	hmacKey := func(key []byte) func([]byte) []byte {
		return func(in []byte) []byte {
			m := hmac.New(sha256.New, key)
			m.Write(in)
			return m.Sum(nil)
		}
	}
	p256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	es256 := func(in []byte) []byte {
		sum := sha256.Sum256(in)
		r, s, err := ecdsa.Sign(rand.Reader, p256, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		sig := make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
		return sig
	}
	tamper := func(tok string) string {
		// Flip one bit of the first signature byte.
		parts := strings.Split(tok, ".")
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		sig[0] ^= 1
		return parts[0] + "." + parts[1] + "." + b64(sig)
	}
	swapClaims := func(tok string, claims map[string]any) string {
		parts := strings.Split(tok, ".")
		c, _ := json.Marshal(claims)
		return parts[0] + "." + b64(c) + "." + parts[2]
	}

	cases := []struct {
		name  string
		token string
		ok    bool
	}{
		{"as the published client signs it", b.token(t, "agt_alice"), true},
		{"without kid", b.token(t, "agt_alice", dropHeader("kid")), true},
		{"key found in a JWKS by kid", b.token(t, "agt_jwks"), true},
		{"JWKS key under another kid", b.token(t, "agt_jwks", signedBy(b.world.stranger.priv), setHeader("kid", "agent-key-2")), false},
		{"JWKS key under another kid, kid claimed", b.token(t, "agt_jwks", signedBy(b.world.stranger.priv)), false},

		{"aud the issuer", b.token(t, "agt_alice", setClaim("aud", b.url)), true},
		{"aud an array with one match", b.token(t, "agt_alice", setClaim("aud", []string{"https://elsewhere.example/capability/execute", execute})), true},
		{"aud an array holding the issuer", b.token(t, "agt_alice", setClaim("aud", []string{b.url})), true},
		{"aud an array without a match", b.token(t, "agt_alice", setClaim("aud", []string{"https://elsewhere.example", b.url + "/"})), false},
		{"aud with a trailing slash", b.token(t, "agt_alice", setClaim("aud", execute+"/")), false},
		{"aud the issuer with a trailing slash", b.token(t, "agt_alice", setClaim("aud", b.url+"/")), false},
		{"aud another endpoint", b.token(t, "agt_alice", setClaim("aud", b.url+"/capability/list")), false},
		{"aud another host name", b.token(t, "agt_alice", setClaim("aud", strings.Replace(execute, "127.0.0.1", "localhost", 1))), false},
		{"aud an empty array", b.token(t, "agt_alice", setClaim("aud", []string{})), false},
		{"no aud", b.token(t, "agt_alice", dropClaim("aud")), false},

		{"typ missing", b.token(t, "agt_alice", dropHeader("typ")), false},
		{"typ JWT", b.token(t, "agt_alice", setHeader("typ", "JWT")), false},
		{"typ host+jwt", b.token(t, "agt_alice", setHeader("typ", "host+jwt")), false},
		{"alg none, no signature", b.token(t, "agt_alice", setHeader("alg", "none"), signedWith(func([]byte) []byte { return nil })), false},
		{"alg none, signature kept", b.token(t, "agt_alice", setHeader("alg", "none")), false},
		{"alg HS256 keyed with the public key", b.token(t, "agt_alice", setHeader("alg", "HS256"), signedWith(hmacKey(alice.key.pub))), false},
		{"alg HS256 keyed with x", b.token(t, "agt_alice", setHeader("alg", "HS256"), signedWith(hmacKey([]byte(b64(alice.key.pub))))), false},
		{"alg ES256 over an Ed25519 signature", b.token(t, "agt_alice", setHeader("alg", "ES256")), false},
		{"alg ES256 with a P-256 signature", b.token(t, "agt_alice", setHeader("alg", "ES256"), signedWith(es256)), false},
		{"alg missing", b.token(t, "agt_alice", dropHeader("alg")), false},
		{"signed by another agent's key", b.token(t, "agt_alice", signedBy(b.world.agents["agt_bob"].key.priv)), false},
		{"signed by the host's key", b.token(t, "agt_alice", signedBy(b.world.hosts["hst_alice"].priv)), false},
		{"signature altered", tamper(b.token(t, "agt_alice")), false},
		{"claims altered after signing", swapClaims(b.token(t, "agt_alice"), map[string]any{
			"sub": "agt_bob", "aud": execute, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Minute).Unix(), "jti": newJTI(t),
		}), false},
		{"unknown agent", b.token(t, "agt_alice", setClaim("sub", "agt_nobody")), false},
		{"no sub", b.token(t, "agt_alice", dropClaim("sub")), false},

		{"iss the host id", b.token(t, "agt_alice", setClaim("iss", "hst_alice")), true},
		{"iss the host key thumbprint", b.token(t, "agt_alice", setClaim("iss", b.world.hosts["hst_alice"].thumbprint())), true},
		{"iss the host id of a JWKS host", b.token(t, "agt_on_jwks_host", setClaim("iss", "hst_jwks")), true},
		{"iss another host", b.token(t, "agt_alice", setClaim("iss", "hst_bob")), false},
		{"iss another host's thumbprint", b.token(t, "agt_alice", setClaim("iss", b.world.hosts["hst_bob"].thumbprint())), false},
		{"iss the agent's own thumbprint", b.token(t, "agt_alice", setClaim("iss", alice.key.thumbprint())), false},
		{"iss the agent id", b.token(t, "agt_alice", setClaim("iss", "agt_alice")), false},
		{"iss the bank", b.token(t, "agt_alice", setClaim("iss", b.url)), false},
		{"iss empty", b.token(t, "agt_alice", setClaim("iss", "")), false},

		{"iat 3 s ahead", b.token(t, "agt_alice", issued(3*time.Second, 50*time.Second)), true},
		{"iat 10 s ahead", b.token(t, "agt_alice", issued(10*time.Second, 50*time.Second)), false},
		{"58 s old", b.token(t, "agt_alice", issued(-58*time.Second, 60*time.Second)), true},
		{"90 s old, exp ahead", b.token(t, "agt_alice", issued(-90*time.Second, 100*time.Second)), false},
		{"90 s old, no exp", b.token(t, "agt_alice", issued(-90*time.Second, 0), dropClaim("exp")), false},
		{"exp passed", b.token(t, "agt_alice", issued(-40*time.Second, 20*time.Second)), false},
		{"no exp", b.token(t, "agt_alice", dropClaim("exp")), false},
		{"no iat", b.token(t, "agt_alice", dropClaim("iat")), false},
		{"no jti", b.token(t, "agt_alice", dropClaim("jti")), false},
		{"empty jti", b.token(t, "agt_alice", setClaim("jti", "")), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := b.execute(t, c.token, "exchange_rate", args)
			if c.ok && r.status != 200 {
				t.Errorf("got %v, want 200", r)
			}
			if !c.ok && (r.status != 401 || r.code() != "invalid_jwt") {
				t.Errorf("got %v, want 401 invalid_jwt", r)
			}
		})
	}

	t.Run("jti single-use per agent", func(t *testing.T) {
		jti := newJTI(t)
		if r := b.execute(t, b.token(t, "agt_alice", setClaim("jti", jti)), "exchange_rate", args); r.status != 200 {
			t.Fatalf("first use: got %v", r)
		}
		// A new token (new iat) with the same jti is a replay too.
		if r := b.execute(t, b.token(t, "agt_alice", setClaim("jti", jti), issued(-1*time.Second, 60*time.Second)), "exchange_rate", args); r.status != 401 || r.code() != "invalid_jwt" {
			t.Errorf("same jti again: got %v, want 401 invalid_jwt", r)
		}
		if r := b.execute(t, b.token(t, "agt_bob", setClaim("jti", jti)), "check_balance", `{"account_id":"acc_456"}`); r.status != 200 {
			t.Errorf("same jti, another agent: got %v, want 200", r)
		}
		tok := b.token(t, "agt_alice")
		if r := b.execute(t, tok, "exchange_rate", args); r.status != 200 {
			t.Fatalf("first use: got %v", r)
		}
		if r := b.execute(t, tok, "exchange_rate", args); r.status != 401 || r.code() != "invalid_jwt" {
			t.Errorf("the same token again: got %v, want 401 invalid_jwt", r)
		}
	})

	t.Run("capabilities claim", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			claim  []string
			agent  string
			status int
			code   string
		}{
			{"holding the capability", []string{"check_balance", "exchange_rate"}, "agt_alice", 200, ""},
			{"not holding it", []string{"check_balance"}, "agt_alice", 403, "capability_not_granted"},
			{"empty", []string{}, "agt_alice", 403, "capability_not_granted"},
			// exchange_rate is among hst_bob's default capabilities; the
			// claim still decides.
			{"host default capability outside the claim", []string{"check_balance"}, "agt_bob", 403, "capability_not_granted"},
		} {
			r := b.execute(t, b.token(t, c.agent, setClaim("capabilities", c.claim)), "exchange_rate", args)
			if r.status != c.status || r.code() != c.code {
				t.Errorf("%s: got %v, want %d %s", c.name, r, c.status, c.code)
			}
		}
	})

	t.Run("missing token", func(t *testing.T) {
		want := `AgentAuth discovery="` + b.url + `/.well-known/agent-configuration"`
		for _, path := range []string{"/capability/execute", "/capability/batch-execute"} {
			body := `{"capability":"exchange_rate","arguments":` + args + `}`
			if strings.HasSuffix(path, "batch-execute") {
				body = `{"requests":[` + body + `]}`
			}
			r := b.do(t, http.MethodPost, path, "", body)
			if r.status != 401 || r.code() != "authentication_required" {
				t.Errorf("%s: got %v, want 401 authentication_required", path, r)
			}
			if got := r.header.Get("WWW-Authenticate"); got != want {
				t.Errorf("%s: WWW-Authenticate %q, want %q", path, got, want)
			}
		}
	})
}

func outsideGrants(t *testing.T, b *outsideBank) {
	for _, c := range []struct {
		name, capability, args string
		status                 int
		code                   string
	}{
		{"grant expired", "list_accounts", "", 403, "capability_not_granted"},
		{"grant pending", "check_balance", `{"account_id":"acc_123"}`, 403, "capability_not_granted"},
		{"grant denied", "transfer_money", `{"source_account":"acc_123","destination_account":"acc_456","amount":1,"currency":"USD"}`, 403, "capability_not_granted"},
		{"grant active until later", "exchange_rate", `{"from":"USD","to":"GBP"}`, 200, ""},
	} {
		r := b.execute(t, b.token(t, "agt_grants"), c.capability, c.args)
		if r.status != c.status || r.code() != c.code {
			t.Errorf("%s: got %v, want %d %s", c.name, r, c.status, c.code)
		}
	}
}

// violation is one entry of constraint_violated's violations.
type violation struct {
	Field      string `json:"field"`
	Constraint any    `json:"constraint"`
	Actual     any    `json:"actual"`
}

func outsideConstraints(t *testing.T, b *outsideBank) {
	transferArgs := func(source, destination, amount, currency string) string {
		return fmt.Sprintf(`{"source_account":%q,"destination_account":%q,"amount":%s,"currency":%q}`, source, destination, amount, currency)
	}
	type vio struct{ field, constraint, actual string }
	cases := []struct {
		name, agent, capability, args string
		status                        int
		code                          string
		// violations, when the code is constraint_violated and they are
		// fully known; the actual of a missing field is not compared.
		violations []vio
		members    map[string]string // member -> exact JSON
	}{
		{name: "operators satisfied", agent: "agt_ops", capability: "transfer_money",
			args: transferArgs("acc_123", "acc_456", "1", "USD"), status: 200},
		{name: "min and max are inclusive", agent: "agt_ops", capability: "transfer_money",
			args: transferArgs("acc_123", "acc_456", "50", "USD"), status: 200},
		{name: "every operator violated, every violation outsideListed", agent: "agt_ops", capability: "transfer_money",
			args: transferArgs("acc_124", "acc_123", "0.5", "EUR"), status: 403, code: "constraint_violated",
			violations: []vio{
				{"amount", `{"min":1}`, `0.5`},
				{"currency", `{"in":["USD"]}`, `"EUR"`},
				{"destination_account", `{"eq":"acc_456"}`, `"acc_123"`},
				{"source_account", `{"not_in":["acc_124"]}`, `"acc_124"`},
			}},
		{name: "max", agent: "agt_ops", capability: "transfer_money",
			args: transferArgs("acc_123", "acc_456", "50.01", "USD"), status: 403, code: "constraint_violated",
			violations: []vio{{"amount", `{"max":50}`, `50.01`}}},
		{name: "exact number against a string", agent: "agt_exact_number", capability: "check_balance",
			args: `{"account_id":"123"}`, status: 403, code: "constraint_violated",
			violations: []vio{{"account_id", `123`, `"123"`}}},
		{name: "in with a number against a string", agent: "agt_in_mixed", capability: "check_balance",
			args: `{"account_id":"123"}`, status: 403, code: "constraint_violated",
			violations: []vio{{"account_id", `{"in":[123,"acc_124"]}`, `"123"`}}},
		{name: "in satisfied", agent: "agt_in_mixed", capability: "check_balance",
			args: `{"account_id":"acc_124"}`, status: 200},
		{name: "max against a numeric string", agent: "agt_max_on_text", capability: "check_balance",
			args: `{"account_id":"5"}`, status: 403, code: "constraint_violated",
			violations: []vio{{"account_id", `{"max":1000}`, `"5"`}}},
		{name: "missing fields fail exact, eq, min, max and in", agent: "agt_missing", capability: "list_accounts",
			status: 403, code: "constraint_violated",
			violations: []vio{{"a", `"x"`, ""}, {"b", `{"eq":"x"}`, ""}, {"c", `{"min":1}`, ""}, {"d", `{"max":1}`, ""}, {"e", `{"in":["x"]}`, ""}}},
		{name: "first of two grants", agent: "agt_two", capability: "transfer_money",
			args: transferArgs("acc_123", "acc_456", "5", "USD"), status: 200},
		{name: "second of two grants", agent: "agt_two", capability: "transfer_money",
			args: transferArgs("acc_123", "acc_124", "500", "USD"), status: 200},
		{name: "neither of two grants", agent: "agt_two", capability: "transfer_money",
			args: transferArgs("acc_123", "acc_456", "500", "USD"), status: 403, code: "constraint_violated"},
		{name: "unknown operator", agent: "agt_badop", capability: "transfer_money",
			args: transferArgs("acc_123", "acc_456", "5", "USD"), status: 400, code: "unknown_constraint_operator",
			members: map[string]string{"unknown_operators": `["between"]`, "operators": `["between"]`}},
		{name: "constrained field changed by normalisation", agent: "agt_eur", capability: "transfer_money",
			args: transferArgs("acc_124", "acc_456", "1", "eur"), status: 400, code: "invalid_request",
			members: map[string]string{"transformed_fields": `["currency"]`}},
		{name: "constrained lower case, sent upper case", agent: "agt_eur", capability: "transfer_money",
			args: transferArgs("acc_124", "acc_456", "1", "EUR"), status: 403, code: "constraint_violated",
			violations: []vio{{"currency", `"eur"`, `"EUR"`}}},
		{name: "grant without destination_account, amount only", agent: "agt_amount_only", capability: "transfer_money",
			args: transferArgs("acc_123", "acc_456", "1", "USD"), status: 403, code: "capability_not_granted",
			members: map[string]string{"missing_constraints": `["currency","destination_account"]`}},
		{name: "amount bounded without its currency", agent: "agt_unitless", capability: "transfer_money",
			args: transferArgs("acc_123", "acc_456", "500", "GBP"), status: 403, code: "capability_not_granted",
			members: map[string]string{"missing_constraints": `["currency"]`}},
		{name: "another currency than the bound's", agent: "agt_alice", capability: "transfer_money",
			args: transferArgs("acc_123", "acc_456", "500", "GBP"), status: 403, code: "constraint_violated",
			violations: []vio{{"currency", `"USD"`, `"GBP"`}}},
		{name: "grant without constraints", agent: "agt_bare", capability: "transfer_money",
			args: transferArgs("acc_123", "acc_456", "1", "USD"), status: 403, code: "capability_not_granted",
			members: map[string]string{"missing_constraints": `["destination_account"]`}},
		{name: "exact destination", agent: "agt_bob", capability: "transfer_money",
			args: transferArgs("acc_456", "acc_124", "1", "USD"), status: 403, code: "constraint_violated",
			violations: []vio{{"destination_account", `"acc_123"`, `"acc_124"`}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := b.executeConfirmed(t, c.agent, c.capability, c.args)
			if r.status != c.status || r.code() != c.code {
				t.Fatalf("got %v, want %d %s", r, c.status, c.code)
			}
			for name, want := range c.members {
				if diff := cmp.Diff(mustJSON(t, want), r.obj[name]); diff != "" {
					t.Errorf("%s (-want +got):\n%s\n%s", name, diff, r.body)
				}
			}
			if c.violations == nil {
				return
			}
			var body struct {
				Violations []violation `json:"violations"`
			}
			if err := decodeJSON(r.body, &body); err != nil {
				t.Fatal(err)
			}
			got := body.Violations
			slices.SortFunc(got, func(x, y violation) int { return strings.Compare(x.Field, y.Field) })
			var want []violation
			for i, v := range c.violations {
				w := violation{Field: v.field, Constraint: mustJSON(t, v.constraint)}
				if v.actual != "" {
					w.Actual = mustJSON(t, v.actual)
				} else if i < len(got) {
					w.Actual = got[i].Actual
				}
				want = append(want, w)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s\n%s", diff, r.body)
			}
		})
	}
}

func outsideStates(t *testing.T, b *outsideBank) {
	for _, c := range []struct{ agent, code string }{
		{"agt_revoked", "agent_revoked"},
		{"agt_expired", "agent_expired"},
		{"agt_pending", "agent_pending"},
		{"agt_rejected", "agent_rejected"},
		{"agt_claimed", "agent_claimed"},
		{"agt_of_revoked_host", "host_revoked"},
		{"agt_of_pending_host", "host_pending"},
	} {
		r := b.execute(t, b.token(t, c.agent), "exchange_rate", `{"from":"USD","to":"EUR"}`)
		if r.status != 403 || r.code() != c.code {
			t.Errorf("%s: got %v, want 403 %s", c.agent, r, c.code)
		}
		if msg, _ := r.obj["message"].(string); msg == "" {
			t.Errorf("%s: no message: %s", c.agent, r.body)
		}
	}
}

// batchItem is one answer of batch-execute.
type batchItem struct {
	ID     string          `json:"id"`
	Status string          `json:"status"`
	Data   json.RawMessage `json:"data,omitempty"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func (b *outsideBank) batch(t *testing.T, token, body string) (answer, []batchItem) {
	t.Helper()
	r := b.do(t, http.MethodPost, "/capability/batch-execute", token, body)
	if r.status != 200 {
		return r, nil
	}
	var out struct {
		Responses []batchItem `json:"responses"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	return r, out.Responses
}

func outsideBatch(t *testing.T, b *outsideBank) {
	// brief is what the contract fixes of an item: id, status and code.
	type brief struct{ ID, Status, Code string }
	briefs := func(items []batchItem) []brief {
		var out []brief
		for _, it := range items {
			x := brief{ID: it.ID, Status: it.Status}
			if it.Error != nil {
				x.Code = it.Error.Code
			}
			out = append(out, x)
		}
		return out
	}
	t.Run("per-item outcomes under one JWT", func(t *testing.T) {
		tok := b.token(t, "agt_alice")
		r, items := b.batch(t, tok, `{"requests":[
			{"id":"a","capability":"check_balance","arguments":{"account_id":"acc_124"}},
			{"id":"b","capability":"check_balance","arguments":{"account_id":"acc_456"}},
			{"capability":"exchange_rate","arguments":{"from":"GBP","to":"USD"}},
			{"id":"d","capability":"transfer_money","arguments":{"source_account":"acc_123","destination_account":"acc_666","amount":1,"currency":"USD"}},
			{"id":"e","capability":"check_balance","arguments":{"account_id":"acc_999"}},
			{"id":"f","capability":"close_account"},
			{"id":"g","capability":"transfer_money","arguments":{"source_account":"acc_123","destination_account":"acc_456","amount":0,"currency":"USD"}}]}`)
		if r.status != 200 {
			t.Fatalf("got %v", r)
		}
		want := []brief{
			{"a", "completed", ""},
			{"b", "failed", "account_not_found"},
			{"2", "completed", ""},
			{"d", "failed", "constraint_violated"},
			{"e", "failed", "internal_error"},
			{"f", "failed", "capability_not_found"},
			{"g", "failed", "invalid_request"},
		}
		if diff := cmp.Diff(want, briefs(items)); diff != "" {
			t.Errorf("(-want +got):\n%s\n%s", diff, r.body)
		}
		if len(items) > 2 && !bytes.Contains(items[2].Data, []byte(`"rate"`)) {
			t.Errorf("the rate item holds no rate: %s", items[2].Data)
		}
		for _, s := range secretsOfTheLedger {
			if bytes.Contains(r.body, []byte(s)) {
				t.Errorf("the answer holds %q: %s", s, r.body)
			}
		}
		// The batch used the token.
		if r := b.execute(t, tok, "exchange_rate", `{"from":"USD","to":"EUR"}`); r.status != 401 || r.code() != "invalid_jwt" {
			t.Errorf("the batch's token reused: got %v, want 401 invalid_jwt", r)
		}
	})
	t.Run("capabilities claim per item", func(t *testing.T) {
		r, items := b.batch(t, b.token(t, "agt_alice", setClaim("capabilities", []string{"check_balance"})), `{"requests":[
			{"id":"in","capability":"check_balance","arguments":{"account_id":"acc_123"}},
			{"id":"out","capability":"exchange_rate","arguments":{"from":"GBP","to":"USD"}}]}`)
		want := []brief{{"in", "completed", ""}, {"out", "failed", "capability_not_granted"}}
		if diff := cmp.Diff(want, briefs(items)); diff != "" {
			t.Errorf("(-want +got):\n%s\n%s", diff, r.body)
		}
	})
	t.Run("autonomous agent", func(t *testing.T) {
		r, items := b.batch(t, b.token(t, "agt_robot"), `{"requests":[
			{"id":"rate","capability":"exchange_rate","arguments":{"from":"GBP","to":"USD"}},
			{"id":"balance","capability":"check_balance","arguments":{"account_id":"acc_123"}}]}`)
		got := briefs(items)
		if len(got) != 2 || got[0] != (brief{"rate", "completed", ""}) || got[1].Status != "failed" {
			t.Errorf("got %s", r.body)
		}
	})
	t.Run("a bad token fails the whole batch", func(t *testing.T) {
		r, _ := b.batch(t, b.token(t, "agt_alice", setClaim("aud", "https://elsewhere.example")), `{"requests":[
			{"id":"a","capability":"exchange_rate","arguments":{"from":"GBP","to":"USD"}}]}`)
		if r.status != 401 || r.code() != "invalid_jwt" {
			t.Errorf("got %v, want 401 invalid_jwt", r)
		}
	})
}

// goDuration is a duration as Go prints it; count is a bare number, a
// duration when a member named for one holds it.
var (
	goDuration = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`)
	count      = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
)

// outsideLogLines runs a known set of executions against a fresh bank and
// reads its whole output: one line per execution naming the agent, the
// capability, the outcome and the duration, and no argument value.
func outsideLogLines(t *testing.T, bin string, w *outsideWorld) {
	b := outsideStart(t, bin, w)
	type step struct {
		agent, capability, args string
		status                  int
		outcome                 string
	}
	steps := []step{
		{"agt_alice", "check_balance", `{"account_id":"acc_123"}`, 200, "completed"},
		{"agt_alice", "check_balance", `{"account_id":"acc_999"}`, 500, "internal_error"},
		{"agt_alice", "exchange_rate", `{"from":"GBP","to":"EUR"}`, 200, "completed"},
		{"agt_bob", "transfer_money", `{"source_account":"acc_456","destination_account":"acc_123","amount":777.77,"currency":"USD"}`, 409, "insufficient_funds"},
		{"agt_bob", "check_balance", `{"account_id":"acc_124"}`, 404, "account_not_found"},
	}
	for _, s := range steps {
		if r := b.execute(t, b.token(t, s.agent), s.capability, s.args); r.status != s.status {
			t.Fatalf("%s %s: got %v, want %d", s.agent, s.capability, r, s.status)
		}
	}
	r, items := b.batch(t, b.token(t, "agt_bob"), `{"requests":[
		{"id":"x","capability":"list_accounts"},
		{"id":"y","capability":"check_balance","arguments":{"account_id":"acc_456"}}]}`)
	if len(items) != 2 || items[0].Status != "completed" || items[1].Status != "completed" {
		t.Fatalf("batch: %v", r)
	}
	steps = append(steps,
		step{agent: "agt_bob", capability: "list_accounts", outcome: "completed"},
		step{agent: "agt_bob", capability: "check_balance", outcome: "completed"})

	// Stop the bank so that its whole output is in.
	b.stop(t)
	logs := b.out.String()
	words := regexp.MustCompile(`[^\s="]+`)
	for _, s := range steps {
		var matching []string
		for _, line := range strings.Split(logs, "\n") {
			tokens := words.FindAllString(line, -1)
			if slices.Contains(tokens, s.agent) && slices.Contains(tokens, s.capability) && slices.Contains(tokens, s.outcome) {
				matching = append(matching, line)
			}
		}
		if len(matching) != 1 {
			t.Errorf("%d lines for %s %s %s, want 1:\n%s", len(matching), s.agent, s.capability, s.outcome, logs)
			continue
		}
		hasDuration := false
		tokens := words.FindAllString(matching[0], -1)
		for i, tok := range tokens {
			named := strings.Contains(strings.ToLower(tok), "duration") && i+1 < len(tokens) && count.MatchString(tokens[i+1])
			if named || goDuration.MatchString(tok) {
				hasDuration = true
			}
		}
		if !hasDuration {
			t.Errorf("no duration in %q", matching[0])
		}
	}
	// Argument values: account ids, the amount, the currencies asked about.
	for _, leak := range []string{"acc_", "777.77", "GBP"} {
		if strings.Contains(logs, leak) {
			t.Errorf("the log holds the argument value %q:\n%s", leak, logs)
		}
	}
}
