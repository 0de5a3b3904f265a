package agentauthtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/jobs"
)

// TB is the part of testing.TB that Server and Execute use, so that they
// also work outside tests (in Example functions, for instance).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// requestTimeout bounds every request a Server's client sends, so that a
// test against a stuck capability fails instead of hanging.
const requestTimeout = 30 * time.Second

// Server is an Agent Auth location for tests, in the manner of
// httptest.Server: an executor served by httpx on a loopback port,
// verified by agentauth.New over a Verifier of an in-memory Directory.
// Its URL is the issuer; it serves the capability routes at the root and
// the discovery document at agentcap.DiscoveryPath, and accepts tokens
// whose aud is Audience() or URL.
type Server struct {
	// URL is the base URL, http://127.0.0.1:port, with no trailing slash.
	// It is the issuer.
	URL string
	// Directory holds the hosts and agents the server knows. Add puts
	// test agents in it; tests may also change it directly.
	Directory *agentauth.MemoryDirectory
	// Handler is the httpx handler behind the capability routes.
	Handler *httpx.Handler

	srv    *httptest.Server
	client *http.Client
}

// Options are the parts of a Server that are not the application's own
// Agent Auth wiring. The zero value serves a location with a fresh
// in-memory replay cache, no idempotency keys, and the jobs of async
// capabilities run in memory.
type Options struct {
	// LongRunning serves jobs, idempotency keys and streams as httpx
	// does; its BaseURL is the server's own URL unless set. Without Jobs,
	// a server whose registry has async capabilities runs their jobs in a
	// manager of its own, closed when the test ends.
	LongRunning httpx.LongRunning
	// Replay is the Verifier's replay cache. Nil means a fresh in-memory
	// one; share one cache between servers to see a token used on one
	// refused by the other, as instances of one location would.
	Replay agentauth.ReplayCache
}

// NewServer starts a Server for exec and stops it when the test ends.
// cfg is the application's own Agent Auth wiring (Authorize,
// AllowAnonymousDiscovery, Logger, ...): the server fills in Sessions with
// its Verifier and Issuer with its URL when they are unset, and its
// Verifier runs on cfg.Now (give the hosts the same Clock, so that their
// tokens are current). opts, at most one, adds the server's own settings.
func NewServer(t TB, exec *core.Executor, cfg agentauth.Config, opts ...Options) *Server {
	t.Helper()
	var o Options
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		t.Fatalf("agentauthtest: NewServer takes at most one Options, got %d", len(opts))
		return nil
	}
	s := &Server{Directory: agentauth.NewMemoryDirectory()}
	mux := http.NewServeMux()
	s.srv = httptest.NewUnstartedServer(mux)
	s.URL = "http://" + s.srv.Listener.Addr().String()
	fail := func(format string, args ...any) *Server {
		t.Helper()
		s.srv.Close()
		t.Fatalf(format, args...)
		return nil
	}

	if cfg.Sessions == nil {
		v, err := agentauth.NewVerifier(agentauth.VerifierConfig{
			Directory: s.Directory,
			Audiences: []string{s.Audience(), s.URL},
			Replay:    o.Replay,
			Now:       cfg.Now,
		})
		if err != nil {
			return fail("agentauthtest: verifier: %v", err)
		}
		cfg.Sessions = v
	}
	if cfg.Issuer == "" {
		cfg.Issuer = s.URL
	}
	verifier, err := agentauth.New(cfg)
	if err != nil {
		return fail("agentauthtest: %v", err)
	}
	lr := o.LongRunning
	if lr.Jobs == nil && hasAsync(exec.Registry()) {
		// Async capabilities need a job runner; one in memory serves a
		// test.
		m, err := jobs.New(jobs.Config{})
		if err != nil {
			return fail("agentauthtest: %v", err)
		}
		t.Cleanup(func() { _ = m.Close() })
		lr.Jobs = m
	}
	if lr.BaseURL == "" {
		lr.BaseURL = s.URL + "/"
	}
	if s.Handler, err = httpx.New(exec, httpx.Config{Verifier: verifier, Logger: cfg.Logger, LongRunning: lr}); err != nil {
		return fail("agentauthtest: %v", err)
	}
	disc, err := agentauth.NewDiscoveryEndpoint(agentcap.Discovery{
		ProviderName:    "agentauthtest",
		Issuer:          s.URL,
		DefaultLocation: s.Audience(),
		Endpoints:       agentauth.LocationEndpoints(""),
	})
	if err != nil {
		return fail("agentauthtest: %v", err)
	}
	mux.Handle(agentcap.DiscoveryPath, disc)
	mux.Handle("/", s.Handler)

	s.srv.Start()
	s.client = s.srv.Client()
	s.client.Timeout = requestTimeout
	t.Cleanup(s.Close)
	return s
}

func hasAsync(reg *core.Registry) bool {
	for _, d := range reg.All() {
		if d.Async() {
			return true
		}
	}
	return false
}

// Close stops the server. It may be called more than once.
func (s *Server) Close() { s.srv.Close() }

// Audience returns the server's default location, URL +
// "/capability/execute": the aud of the tokens Token mints.
func (s *Server) Audience() string { return s.URL + "/" + agentcap.RouteExecute }

// Add puts the records of agents and of their hosts in the directory,
// replacing earlier records with the same ids. Change an agent (a grant,
// its status) and Add it again to update the server's view.
func (s *Server) Add(t TB, agents ...*Agent) {
	t.Helper()
	for _, a := range agents {
		if err := s.Directory.PutHost(a.Host.Record()); err != nil {
			t.Fatalf("agentauthtest: %v", err)
			return
		}
		if err := s.Directory.PutAgent(a.Record()); err != nil {
			t.Fatalf("agentauthtest: %v", err)
			return
		}
	}
}

// Token mints an agent JWT of a for the server's default location. Mint
// any other token with a.Token(agentauthtest.Token{Audience:
// s.Audience(), ...}).
func (s *Server) Token(a *Agent) string {
	return a.Token(Token{Audience: s.Audience()})
}

// Execute posts {capability, arguments} to capability/execute with token
// as its bearer token (none when it is empty): s.Token(agent) for a fresh
// one. args is nil for no arguments, JSON text as a string, []byte or
// json.RawMessage (sent as is, so malformed arguments can be tested), or
// any other value, encoded with encoding/json.
func (s *Server) Execute(t TB, token, capability string, args any) Response {
	t.Helper()
	body := appendCall([]byte{'{'}, t, "", capability, args)
	body = append(body, '}')
	return s.Do(t, http.MethodPost, agentcap.RouteExecute, token, body)
}

// BatchRequest is one request of a batch. An empty ID is left out, so the
// server numbers the request by its index.
type BatchRequest struct {
	ID         string
	Capability string
	// Arguments are as for Server.Execute.
	Arguments any
}

// BatchExecute posts the requests to capability/batch-execute with token
// as its bearer token, as Execute does.
func (s *Server) BatchExecute(t TB, token string, requests []BatchRequest) Response {
	t.Helper()
	body := []byte(`{"requests":[`)
	for i, r := range requests {
		if i > 0 {
			body = append(body, ',')
		}
		body = appendCall(append(body, '{'), t, r.ID, r.Capability, r.Arguments)
		body = append(body, '}')
	}
	body = append(body, ']', '}')
	return s.Do(t, http.MethodPost, agentcap.RouteBatch, token, body)
}

// appendCall appends the members of one call. The arguments are copied
// as they are, not re-encoded, so that malformed JSON reaches the server.
func appendCall(dst []byte, t TB, id, capability string, args any) []byte {
	t.Helper()
	if id != "" {
		dst = append(dst, `"id":`...)
		dst = append(dst, encodeJSON(t, id)...)
		dst = append(dst, ',')
	}
	dst = append(dst, `"capability":`...)
	dst = append(dst, encodeJSON(t, capability)...)
	if raw := encodeArgs(t, args); raw != nil {
		dst = append(dst, `,"arguments":`...)
		dst = append(dst, raw...)
	}
	return dst
}

// Do sends one request to path, relative to URL, with token as its
// bearer token unless it is empty, and body as JSON unless it is nil.
func (s *Server) Do(t TB, method, path, token string, body []byte) Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+"/"+strings.TrimPrefix(path, "/"), rd)
	if err != nil {
		t.Fatalf("agentauthtest: %v", err)
		return Response{}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("agentauthtest: %s %s: %v", method, path, err)
		return Response{}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("agentauthtest: %s %s: reading the body: %v", method, path, err)
		return Response{}
	}
	return newResponse(resp.StatusCode, resp.Header, data)
}

// Response is an answer of a Server, with the members of the Agent Auth
// wire format picked out.
type Response struct {
	// Status is the HTTP status.
	Status int
	// Header holds the response headers.
	Header http.Header
	// Body is the raw body.
	Body []byte
	// Code and Message are the "error" and "message" of an error
	// envelope; both are empty for a successful answer.
	Code    string
	Message string
	// Data is the "data" member of a successful execute.
	Data json.RawMessage
	// Items are the "responses" of a batch.
	Items []BatchItem
}

// BatchItem is one response of a batch.
type BatchItem struct {
	ID string
	// Status is "completed" or "failed".
	Status string
	// Data is the result of a completed request.
	Data json.RawMessage
	// Code and Message come from the error of a failed request.
	Code    string
	Message string
	// Error is the whole error object of a failed request.
	Error json.RawMessage
}

func newResponse(status int, header http.Header, body []byte) Response {
	r := Response{Status: status, Header: header, Body: body}
	var env struct {
		Error     *string         `json:"error"`
		Message   string          `json:"message"`
		Data      json.RawMessage `json:"data"`
		Responses []struct {
			ID     string          `json:"id"`
			Status string          `json:"status"`
			Data   json.RawMessage `json:"data"`
			Error  json.RawMessage `json:"error"`
		} `json:"responses"`
	}
	// A body that is not JSON keeps only Status, Header and Body; the
	// test sees that Code and Data are empty.
	if json.Unmarshal(body, &env) != nil {
		return r
	}
	if env.Error != nil {
		r.Code, r.Message = *env.Error, env.Message
	}
	r.Data = env.Data
	for _, it := range env.Responses {
		item := BatchItem{ID: it.ID, Status: it.Status, Data: it.Data, Error: it.Error}
		var e struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		if len(it.Error) > 0 && json.Unmarshal(it.Error, &e) == nil {
			item.Code, item.Message = e.Code, e.Message
		}
		r.Items = append(r.Items, item)
	}
	return r
}

// Decode unmarshals Data into v, failing the test if the call failed.
func (r Response) Decode(t TB, v any) {
	t.Helper()
	if r.Code != "" || r.Data == nil {
		t.Fatalf("agentauthtest: no data: status %d, error %q: %s", r.Status, r.Code, r.Body)
		return
	}
	if err := json.Unmarshal(r.Data, v); err != nil {
		t.Fatalf("agentauthtest: decoding data %s: %v", r.Data, err)
	}
}

// Member returns a top-level member of the body, such as "violations"
// or "missing_constraints" of an error, or nil when there is none.
func (r Response) Member(name string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(r.Body, &m) != nil {
		return nil
	}
	return m[name]
}

// Call is one call of Execute: the capability and its arguments, the
// constraints of the agent's grant, and what differs from the fresh
// identities and token Execute makes.
type Call struct {
	// Capability is the capability called, and granted.
	Capability string
	// Arguments are as for Server.Execute.
	Arguments any
	// Constraints are those of the agent's grant of Capability, as for
	// Agent.Grant; nil for an unconstrained grant.
	Constraints map[string]any
	// Host describes the fresh host, for NewHost. Its ID defaults to
	// "host_test", its UserID to "user_test" and its Clock to the
	// server's (cfg.Now).
	Host Host
	// Agent describes the fresh agent, for Host.NewAgent. Its ID defaults
	// to "agent_test"; the grant of Capability is added to its Grants.
	Agent Agent
	// Token describes the token sent. Its Audience defaults to the
	// server's default location.
	Token Token
}

// Execute runs the whole Agent Auth execute path once: it starts a
// Server for exec with the application's wiring cfg, puts in its
// directory a fresh host and its agent holding one active grant of
// call.Capability with call.Constraints, mints a token and posts the
// call. The server stops when the test ends.
//
//	r := agentauthtest.Execute(t, exec, cfg, agentauthtest.Call{
//		Capability:  "pay",
//		Arguments:   map[string]any{"to": "bob", "amount": 12.5},
//		Constraints: map[string]any{"to": "bob"},
//		Agent:       agentauthtest.Agent{Mode: agentcap.ModeAutonomous},
//	})
func Execute(t TB, exec *core.Executor, cfg agentauth.Config, call Call) Response {
	t.Helper()
	s := NewServer(t, exec, cfg)
	if s == nil {
		return Response{}
	}
	hs := call.Host
	if hs.ID == "" {
		hs.ID = "host_test"
	}
	if hs.UserID == "" {
		hs.UserID = "user_test"
	}
	if hs.Clock == nil {
		hs.Clock = cfg.Now
	}
	as := call.Agent
	if as.ID == "" {
		as.ID = "agent_test"
	}
	a := NewHost(hs).NewAgent(as).Grant(call.Capability, call.Constraints)
	s.Add(t, a)
	tok := call.Token
	if tok.Audience == "" {
		tok.Audience = s.Audience()
	}
	return s.Execute(t, a.Token(tok), call.Capability, call.Arguments)
}

func encodeArgs(t TB, args any) json.RawMessage {
	t.Helper()
	switch v := args.(type) {
	case nil:
		return nil
	case string:
		return json.RawMessage(v)
	case []byte:
		return json.RawMessage(v)
	case json.RawMessage:
		return v
	default:
		return encodeJSON(t, v)
	}
}

func encodeJSON(t TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("agentauthtest: encoding %T: %v", v, err)
		return nil
	}
	return b
}
