package agentauth_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/internal/benchcpu"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// The benchmarked call: a transfer under one grant that constrains the
// destination (the capability's required constraint) and the amount.
const benchBody = `{"capability":"transfer","arguments":{"source_account":"acc_123","destination_account":"acc_456","amount":250.75,"currency":"EUR"}}`

type benchTransferIn struct {
	SourceAccount      string  `json:"source_account"`
	DestinationAccount string  `json:"destination_account"`
	Amount             float64 `json:"amount" exclusiveMinimum:"0"`
	Currency           string  `json:"currency" enum:"USD,EUR,GBP"`
}

type benchTransferOut struct {
	TransferID string  `json:"transfer_id"`
	Status     string  `json:"status"`
	Amount     float64 `json:"amount"`
	Currency   string  `json:"currency"`
}

// benchRequest is the envelope the floor decodes by hand.
type benchRequest struct {
	Capability string          `json:"capability"`
	Arguments  benchTransferIn `json:"arguments"`
}

type benchResponse struct {
	Data benchTransferOut `json:"data"`
}

func benchTransfer(_ context.Context, user string, in benchTransferIn) (benchTransferOut, error) {
	return benchTransferOut{TransferID: "tr_" + user, Status: "completed", Amount: in.Amount, Currency: in.Currency}, nil
}

type benchWorld struct {
	agent   *agentauthtest.Agent
	handler *httpx.Handler
	exec    *core.Executor
	v       *agentauth.Verifier
	// location is the verifier the handler authenticates with.
	location auth.Verifier
}

func newBenchWorld(b *testing.B, mods ...func(*httpx.Config)) *benchWorld {
	b.Helper()
	return newBenchWorldConfirming(b, core.ConfirmationConfig{}, mods...)
}

// benchContext is the application context of the benchmarked transfer:
// the user the agent acts for.
func benchContext(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (string, error) {
	return id.UserID, nil
}

// newBenchWorldConfirming is newBenchWorld whose executor confirms calls
// as conf says.
func newBenchWorldConfirming(b *testing.B, conf core.ConfirmationConfig, mods ...func(*httpx.Config)) *benchWorld {
	b.Helper()
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_bench", UserID: "user_alice", Rand: rand.NewChaCha8([32]byte{42}), Clock: htClock})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agt_bench"}).Grant("transfer", map[string]any{
		"destination_account": "acc_456",
		"amount":              map[string]any{"max": 1000},
	})
	dir, err := agentauthtest.NewDirectory([]*agentauthtest.Host{host}, []*agentauthtest.Agent{agent})
	if err != nil {
		b.Fatal(err)
	}
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{htAudience}, Now: htClock})
	if err != nil {
		b.Fatal(err)
	}
	transfer := core.MustDefine("transfer", "Transfer money.", benchTransfer,
		core.WithRequiredConstraints("destination_account"))
	exec := core.MustExecutor(core.MustRegistry(transfer), benchContext, core.Config{Confirmation: conf})
	location, err := agentauth.New(agentauth.Config{
		Sessions: v,
		Issuer:   htIssuer,
		Now:      htClock,
	})
	if err != nil {
		b.Fatal(err)
	}
	cfg := httpx.Config{Verifier: location}
	for _, m := range mods {
		m(&cfg)
	}
	h, err := httpx.New(exec, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return &benchWorld{agent: agent, handler: h, exec: exec, v: v, location: location}
}

// tokens mints n tokens with distinct ids before the timer starts: a
// token is good for one request.
func (w *benchWorld) tokens(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = w.agent.Token(agentauthtest.Token{Audience: htAudience, JTI: fmt.Sprintf("jti-%d", i)})
	}
	return out
}

// BenchmarkVerifiedExecute is the whole location: bearer parsing, agent
// JWT verification with replay check, the grant and its constraints, the
// executor (strict decoding, schema validation, handler, output
// validation) and httpx's envelope, through ServeHTTP.
//
// The harness does no per-request work of its own inside the timed loop:
// the Authorization values are built beforehand and the response writer
// is reused (an httptest.ResponseRecorder would allocate and clone its
// headers on every request, which measures the recorder, not the
// location). The request's header map is the one a server would hand
// over.
func BenchmarkVerifiedExecute(b *testing.B) {
	runVerified(b, newBenchWorld(b), nil, nil)
}

// runVerified runs b.N verified executes through w, the i-th with
// Idempotency-Key keys[i] when keys is not nil and with the body
// bodies[i] when bodies is not nil (benchBody otherwise).
func runVerified(b *testing.B, w *benchWorld, keys []string, bodies [][]byte) {
	tokens := w.tokens(b.N)
	bearer := make([]string, len(tokens))
	for i, t := range tokens {
		bearer[i] = "Bearer " + t
	}
	auth, key := []string{""}, []string{""}
	body := []byte(benchBody)
	rd := bytes.NewReader(body)
	req := httptest.NewRequest(http.MethodPost, "/capability/execute", nil)
	req.Header.Set("Content-Type", "application/json")
	rw := &benchWriter{header: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	defer benchcpu.Report(b)()
	for i := range b.N {
		if bodies != nil {
			body = bodies[i]
		}
		rd.Reset(body)
		req.Body = io.NopCloser(rd)
		auth[0] = bearer[i]
		req.Header["Authorization"] = auth
		if keys != nil {
			key[0] = keys[i]
			req.Header["Idempotency-Key"] = key
		}
		rw.reset()
		w.handler.ServeHTTP(rw, req)
		if rw.code != http.StatusOK {
			b.Fatalf("status %d: %s", rw.code, rw.body.Bytes())
		}
	}
}

// benchWriter is a reusable http.ResponseWriter for benchmarks.
type benchWriter struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (w *benchWriter) reset() {
	clear(w.header)
	w.code = 0
	w.body.Reset()
}

func (w *benchWriter) Header() http.Header { return w.header }

func (w *benchWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.body.Write(p)
}

// BenchmarkVerifiedExecuteFloor is the least any verified execute must
// do: one Ed25519 verification of the token's signature, and decoding the
// request and encoding the response with encoding/json.
func BenchmarkVerifiedExecuteFloor(b *testing.B) {
	w := newBenchWorld(b)
	tokens := w.tokens(b.N)
	pub := w.agent.Key.Public().(ed25519.PublicKey)
	body := []byte(benchBody)
	var out bytes.Buffer
	b.ReportAllocs()
	b.ResetTimer()
	defer benchcpu.Report(b)()
	for i := range b.N {
		tok := tokens[i]
		dot := strings.LastIndexByte(tok, '.')
		var sig [ed25519.SignatureSize]byte
		if n, err := base64.RawURLEncoding.Decode(sig[:], []byte(tok[dot+1:])); err != nil || n != len(sig) {
			b.Fatal("signature", err)
		}
		if !ed25519.Verify(pub, []byte(tok[:dot]), sig[:]) {
			b.Fatal("bad signature")
		}
		var req benchRequest
		if err := json.Unmarshal(body, &req); err != nil {
			b.Fatal(err)
		}
		in := req.Arguments
		resp := benchResponse{Data: benchTransferOut{TransferID: "tr_user_alice", Status: "completed", Amount: in.Amount, Currency: in.Currency}}
		out.Reset()
		if err := json.NewEncoder(&out).Encode(resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifiedExecuteStages splits the verified execute, to show
// where the time goes.
func BenchmarkVerifiedExecuteStages(b *testing.B) {
	b.Run("ed25519", func(b *testing.B) {
		w := newBenchWorld(b)
		tok := w.tokens(1)[0]
		dot := strings.LastIndexByte(tok, '.')
		sig, _ := base64.RawURLEncoding.DecodeString(tok[dot+1:])
		pub := w.agent.Key.Public().(ed25519.PublicKey)
		msg := []byte(tok[:dot])
		b.ReportAllocs()
		defer benchcpu.Report(b)()
		for b.Loop() {
			if !ed25519.Verify(pub, msg, sig) {
				b.Fatal("bad signature")
			}
		}
	})
	b.Run("session", func(b *testing.B) {
		w := newBenchWorld(b)
		tokens := w.tokens(b.N)
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		defer benchcpu.Report(b)()
		for i := range b.N {
			if _, err := w.v.Session(ctx, tokens[i]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("execute_authorized", func(b *testing.B) {
		w := newBenchWorld(b)
		// The identity the location builds for the agent: its Authorizer
		// runs AuthorizeCall with the call's arguments and decoded input.
		id, err := w.location.Verify(context.Background(), &auth.Request{Authorization: "Bearer " + w.tokens(1)[0]})
		if err != nil {
			b.Fatal(err)
		}
		args := []byte(`{"source_account":"acc_123","destination_account":"acc_456","amount":250.75,"currency":"EUR"}`)
		ctx := context.Background()
		b.ReportAllocs()
		defer benchcpu.Report(b)()
		for b.Loop() {
			if _, err := w.exec.Execute(ctx, "transfer", id, args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("authorize_call", func(b *testing.B) {
		w := newBenchWorld(b)
		s, err := w.v.Session(context.Background(), w.tokens(1)[0])
		if err != nil {
			b.Fatal(err)
		}
		call := &auth.Call{
			Capability:          "transfer",
			RequiredConstraints: []string{"destination_account"},
			Arguments: map[string]json.RawMessage{
				"source_account":      json.RawMessage(`"acc_123"`),
				"destination_account": json.RawMessage(`"acc_456"`),
				"amount":              json.RawMessage(`250.75`),
				"currency":            json.RawMessage(`"EUR"`),
			},
		}
		b.ReportAllocs()
		defer benchcpu.Report(b)()
		for b.Loop() {
			if err := agentauth.AuthorizeCall(s, call, htNow); err != nil {
				b.Fatal(err)
			}
		}
	})
}
