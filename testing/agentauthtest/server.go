package agentauthtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/jobs"
)

// TB is the part of testing.TB that Server and Execute use, so that they
// also work outside tests (in Example functions, for instance).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// RequestTimeout bounds every request a Server's client sends, so that a
// test against a stuck capability fails instead of hanging.
const RequestTimeout = 30 * time.Second

// Server is an Agent Auth location for tests, in the manner of
// httptest.Server: an executor served by httpx on a loopback port, behind
// agentauth's HTTP wiring, with a Verifier over an in-memory Directory.
// Its URL is the issuer; it serves the capability routes at the root and
// the discovery document at agentauth.DiscoveryPath, and accepts tokens
// whose aud is Audience() or URL.
type Server[C, P any] struct {
	// URL is the base URL, http://127.0.0.1:port, with no trailing slash.
	// It is the issuer.
	URL string
	// Directory holds the hosts and agents the server knows. Add puts
	// test agents in it; tests may also change it directly.
	Directory *agentauth.MemoryDirectory
	// Handler is the httpx handler behind the capability routes.
	Handler *httpx.Handler[C, agentauth.Caller[P]]

	srv    *httptest.Server
	client *http.Client
}

// ServerOption configures NewServer.
type ServerOption func(*serverConfig)

type serverConfig struct {
	now    func() time.Time
	replay agentauth.ReplayCache
	long   *LongRunning
}

// WithServerClock sets the clock of the server's Verifier, and of grant
// expiry unless the HTTPOptions given to NewServer have their own. Give
// the hosts the same clock (WithClock) so their tokens are current.
func WithServerClock(now func() time.Time) ServerOption {
	return func(c *serverConfig) { c.now = now }
}

func hasAsync(reg *core.Registry) bool {
	for _, d := range reg.All() {
		if d.Async() {
			return true
		}
	}
	return false
}

// LongRunning is what WithLongRunning serves.
type LongRunning struct {
	// Jobs runs async capabilities; their status_url is on the server.
	Jobs *jobs.Manager
	// Idempotency honours Idempotency-Key on execute.
	Idempotency *idempotency.Guard
	// AsyncAfter turns calls running longer into jobs.
	AsyncAfter time.Duration
}

// WithLongRunning serves async jobs and idempotency keys (streams need
// nothing): the server's handler gets them in its httpx.LongRunning, with
// the server's own URL as the base of status URLs. Without it, a server
// whose registry has async capabilities runs their jobs in memory.
func WithLongRunning(l LongRunning) ServerOption {
	return func(c *serverConfig) { c.long = &l }
}

// WithReplayCache sets the Verifier's replay cache, instead of a fresh
// in-memory one.
func WithReplayCache(cache agentauth.ReplayCache) ServerOption {
	return func(c *serverConfig) { c.replay = cache }
}

// NewServer starts a Server for exec and stops it when the test ends.
// o is the application's own Agent Auth wiring (Principal, Authorize,
// AllowAnonymousDiscovery, Logger, ...); the server fills in Sessions
// with its Verifier and Issuer with its URL when they are unset.
func NewServer[C, P any](t TB, exec *core.Executor[C, agentauth.Caller[P]], o agentauth.HTTPOptions[P], opts ...ServerOption) *Server[C, P] {
	t.Helper()
	var cfg serverConfig
	for _, opt := range opts {
		opt(&cfg)
	}
	s := &Server[C, P]{Directory: agentauth.NewMemoryDirectory()}
	mux := http.NewServeMux()
	s.srv = httptest.NewUnstartedServer(mux)
	s.URL = "http://" + s.srv.Listener.Addr().String()

	if o.Sessions == nil {
		v, err := agentauth.NewVerifier(agentauth.VerifierConfig{
			Directory: s.Directory,
			Audiences: []string{s.Audience(), s.URL},
			Replay:    cfg.replay,
			Now:       cfg.now,
		})
		if err != nil {
			s.srv.Close()
			t.Fatalf("agentauthtest: verifier: %v", err)
			return nil
		}
		o.Sessions = v
	}
	if o.Issuer == "" {
		o.Issuer = s.URL
	}
	if o.Now == nil {
		o.Now = cfg.now
	}
	hc, err := agentauth.HTTPConfig(o)
	if err != nil {
		s.srv.Close()
		t.Fatalf("agentauthtest: %v", err)
		return nil
	}
	if cfg.long == nil && hasAsync(exec.Registry()) {
		// Async capabilities need a job runner; one in memory serves a
		// test.
		m, err := jobs.New(jobs.Config{})
		if err != nil {
			s.srv.Close()
			t.Fatalf("agentauthtest: %v", err)
			return nil
		}
		t.Cleanup(func() { _ = m.Close() })
		cfg.long = &LongRunning{Jobs: m}
	}
	if cfg.long != nil {
		hc.LongRunning.Jobs = cfg.long.Jobs
		hc.LongRunning.Idempotency = cfg.long.Idempotency
		hc.LongRunning.AsyncAfter = cfg.long.AsyncAfter
		hc.LongRunning.BaseURL = s.URL + "/"
	}
	if s.Handler, err = httpx.New(exec, hc); err != nil {
		s.srv.Close()
		t.Fatalf("agentauthtest: %v", err)
		return nil
	}
	disc, err := agentauth.NewDiscoveryEndpoint(agentauth.Discovery{
		ProviderName:    "agentauthtest",
		Issuer:          s.URL,
		DefaultLocation: s.Audience(),
		Endpoints:       agentauth.LocationEndpoints(""),
	})
	if err != nil {
		s.srv.Close()
		t.Fatalf("agentauthtest: %v", err)
		return nil
	}
	mux.Handle(agentauth.DiscoveryPath, disc)
	mux.Handle("/", s.Handler)

	s.srv.Start()
	s.client = s.srv.Client()
	s.client.Timeout = RequestTimeout
	t.Cleanup(s.Close)
	return s
}

// Close stops the server. It may be called more than once.
func (s *Server[C, P]) Close() { s.srv.Close() }

// Audience returns the server's default location, URL +
// "/capability/execute": the aud of the tokens Token mints.
func (s *Server[C, P]) Audience() string { return s.URL + "/" + httpx.RouteExecute }

// Add puts the records of agents and of their hosts in the directory,
// replacing earlier records with the same ids. Change an agent (a grant,
// its status) and Add it again to update the server's view.
func (s *Server[C, P]) Add(t TB, agents ...*Agent) {
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

// Token mints an agent JWT of a for the server's default location.
func (s *Server[C, P]) Token(a *Agent, opts ...TokenOption) string {
	return a.Token(s.Audience(), opts...)
}

// Execute mints a fresh token of a and posts {capability, arguments} to
// capability/execute. args is nil for no arguments, JSON text as a
// string, []byte or json.RawMessage (sent as is, so malformed arguments
// can be tested), or any other value, encoded with encoding/json.
func (s *Server[C, P]) Execute(t TB, a *Agent, capability string, args any, opts ...TokenOption) Response {
	t.Helper()
	body := appendCall([]byte{'{'}, t, "", capability, args)
	body = append(body, '}')
	return s.Do(t, http.MethodPost, httpx.RouteExecute, s.Token(a, opts...), body)
}

// BatchRequest is one request of a batch. An empty ID is left out, so the
// server numbers the request by its index.
type BatchRequest struct {
	ID         string
	Capability string
	// Arguments are as for Server.Execute.
	Arguments any
}

// BatchExecute mints one token of a and posts the requests to
// capability/batch-execute.
func (s *Server[C, P]) BatchExecute(t TB, a *Agent, requests []BatchRequest, opts ...TokenOption) Response {
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
	return s.Do(t, http.MethodPost, httpx.RouteBatch, s.Token(a, opts...), body)
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
func (s *Server[C, P]) Do(t TB, method, path, token string, body []byte) Response {
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

// ExecuteOption configures Execute.
type ExecuteOption func(*executeConfig)

type executeConfig struct {
	host   []HostOption
	agent  []AgentOption
	token  []TokenOption
	server []ServerOption
}

// WithHostOptions configures the fresh host of Execute, for example
// WithUser("user_alice") or WithStatus(agentauth.StatusPending).
func WithHostOptions(opts ...HostOption) ExecuteOption {
	return func(c *executeConfig) { c.host = append(c.host, opts...) }
}

// WithAgentOptions configures the fresh agent of Execute, for example
// WithMode(agentauth.ModeAutonomous).
func WithAgentOptions(opts ...AgentOption) ExecuteOption {
	return func(c *executeConfig) { c.agent = append(c.agent, opts...) }
}

// WithTokenOptions changes the token Execute sends, for example
// WithCapabilities("other").
func WithTokenOptions(opts ...TokenOption) ExecuteOption {
	return func(c *executeConfig) { c.token = append(c.token, opts...) }
}

// WithServerOptions configures the server Execute starts.
func WithServerOptions(opts ...ServerOption) ExecuteOption {
	return func(c *executeConfig) { c.server = append(c.server, opts...) }
}

// Execute runs the whole Agent Auth execute path once: it starts a
// Server for exec with the application's wiring o, puts in its directory
// a fresh active host "host_test" (linked to "user_test" unless
// WithHostOptions says otherwise) and its delegated agent "agent_test"
// holding one active grant of capability with constraints (nil for an
// unconstrained grant), mints a token and posts the call. args are as for
// Server.Execute. The server stops when the test ends.
func Execute[C, P any](t TB, exec *core.Executor[C, agentauth.Caller[P]], o agentauth.HTTPOptions[P], capability string, args any, constraints map[string]any, opts ...ExecuteOption) Response {
	t.Helper()
	var cfg executeConfig
	for _, opt := range opts {
		opt(&cfg)
	}
	s := NewServer(t, exec, o, cfg.server...)
	h := NewHost("host_test", append([]HostOption{WithUser("user_test")}, cfg.host...)...)
	a := h.NewAgent("agent_test", cfg.agent...)
	a.Grant(capability, constraints)
	s.Add(t, a)
	return s.Execute(t, a, capability, args, cfg.token...)
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
