package mcpx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// ownerOf is implemented by principals that name their session owner
// themselves (agentauth.Caller).
type ownerOf interface{ SessionOwner() string }

// setupHTTP checks the HTTP part of cfg and builds the Streamable HTTP
// handler of the SDK behind authentication.
func (s *Server[C, P]) setupHTTP(cfg Config[P]) error {
	if s.owner == nil {
		var zero P
		if _, ok := any(zero).(ownerOf); !ok {
			return errors.New("mcpx: Config.SessionOwner is required with Authenticate: sessions must be bound to who opened them")
		}
		s.owner = func(p P) string { return any(p).(ownerOf).SessionOwner() }
	}
	var err error
	if s.metadataURL, s.metadataPath, err = checkResource(cfg.Resource); err != nil {
		return err
	}
	if strings.ContainsAny(cfg.Challenge, "\r\n") {
		return errors.New("mcpx: Config.Challenge must be one header line")
	}
	s.metadata = auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               cfg.Resource,
		AuthorizationServers:   cfg.AuthorizationServers,
		ScopesSupported:        cfg.ScopesSupported,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           cfg.ResourceName,
	})
	s.origins = http.NewCrossOriginProtection()
	s.trusted = make(map[string]bool, len(cfg.TrustedOrigins))
	for _, o := range cfg.TrustedOrigins {
		if err := s.origins.AddTrustedOrigin(o); err != nil {
			return fmt.Errorf("mcpx: Config.TrustedOrigins: %w", err)
		}
		s.trusted[o] = true
	}
	maxBody := cfg.MaxBodyBytes
	if maxBody == 0 {
		maxBody = httpx.DefaultMaxBodyBytes
	}
	s.maxBody = maxBody
	timeout := cfg.SessionTimeout
	switch {
	case timeout == 0:
		timeout = DefaultSessionTimeout
	case timeout < 0:
		timeout = 0
	}
	limit := func(v, def int) int {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	idle := cfg.StreamlessTimeout
	switch {
	case idle == 0:
		idle = DefaultStreamlessTimeout
	case idle < 0:
		idle = 0
	}
	s.sessions = newSessionTable(limit(cfg.MaxSessions, DefaultMaxSessions),
		limit(cfg.MaxSessionsPerOwner, DefaultMaxSessionsPerOwner), idle)
	srv := s.newMCPServer(nil)
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Logger:              s.logger,
		MaxRequestBodyBytes: maxBody,
		SessionTimeout:      timeout,
	})
	// The SDK reads token information only from a context its own bearer
	// middleware filled; this verifier hands it what ServeHTTP verified.
	verify := func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		ti, ok := ctx.Value(verifiedKey{}).(*auth.TokenInfo)
		if !ok {
			return nil, fmt.Errorf("%w: the request was not authenticated", auth.ErrInvalidToken)
		}
		return ti, nil
	}
	s.streamable = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: s.metadataURL,
		// Expiry is the authenticator's business; tokens such as agent
		// JWTs are checked there, not by the SDK.
		AllowMissingExpiration: true,
	})(streamable)
	return nil
}

// verifiedKey carries the token information of an authenticated request
// from ServeHTTP to the SDK.
type verifiedKey struct{}

// ServeHTTP serves the Streamable HTTP transport: POST for messages, GET
// for the server's stream, DELETE to end a session. Every request is
// checked, in order, for its Origin (403), authenticated (401 with a
// Bearer challenge naming the resource metadata, or the authenticator's
// refusal), refused when it would open a session beyond
// Config.MaxSessions (503, see the package's session limits), its body
// read within Config.MaxBodyBytes (413) and checked as strict JSON (400
// with a JSON-RPC parse error), and then handed to the SDK, which checks
// sessions, their owner, content types and the protocol version. Mount
// it at the path of Config.Resource.
func (s *Server[C, P]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.streamable == nil {
		s.logger.LogAttrs(r.Context(), slog.LevelError, "mcpx: an HTTP request reached a server without Config.Authenticate")
		writeEnvelope(w, httpx.ErrorAnswer{Status: http.StatusInternalServerError,
			Body: []byte(`{"error":"internal_error","message":"internal error"}`)}, nil)
		return
	}
	if !s.originAllowed(r) {
		writeEnvelope(w, httpx.ErrorAnswer{Status: http.StatusForbidden,
			Body: []byte(`{"error":"forbidden_origin","message":"requests from this origin are not accepted"}`)}, nil)
		return
	}
	principal, err := s.authenticate(r.Context(), httpx.NewRequest(w, r, ""))
	if err != nil {
		s.refuseAuth(w, r, err)
		return
	}
	owner := s.owner(principal)
	if owner == "" {
		s.refuseAuth(w, r, fmt.Errorf("mcpx: the principal names no session owner: %w", httpx.ErrNotAllowed))
		return
	}
	end, ok := s.trackSession(w, r, owner)
	if !ok {
		return
	}
	defer end()
	if !s.readMessage(w, r) {
		return
	}
	ctx := context.WithValue(r.Context(), verifiedKey{}, tokenInfo(owner, principal))
	s.streamable.ServeHTTP(w, r.WithContext(ctx))
}

// readMessage reads the body of a POST within the limit and refuses JSON
// that two readers could take for different messages: a member named
// twice in one object at any depth (the SDK's decoder keeps the last, a
// gateway or an audit tap may keep the first, so that they would see
// another tool, other arguments or another method than the one that
// runs), invalid UTF-8, lone surrogate escapes. The check is httpx's own
// reader (internal/jsonvalue), so the MCP endpoint and execute bodies
// read JSON alike. It answers the request itself and returns false when
// it refuses; otherwise r's body is the bytes read, for the SDK.
func (s *Server[C, P]) readMessage(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		return true
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeEnvelope(w, httpx.ErrorAnswer{Status: http.StatusRequestEntityTooLarge,
				Body: []byte(`{"error":"request_too_large","message":"the request body is larger than the server accepts"}`)}, nil)
			return false
		}
		writeEnvelope(w, httpx.ErrorAnswer{Status: http.StatusBadRequest,
			Body: []byte(`{"error":"invalid_request","message":"the request body could not be read"}`)}, nil)
		return false
	}
	var rd jsonvalue.Reader
	rd.Reset(body)
	if err = rd.Skip(); err == nil {
		err = rd.Finish()
	}
	if err != nil {
		msg := "the message is not valid JSON: " + err.Error()
		var dup *jsonvalue.DuplicateKeyError
		if errors.As(err, &dup) {
			// The reader does not know where the object is, so the
			// message names the key alone.
			msg = fmt.Sprintf("the message names the member %.40q twice in one object", dup.Key)
		}
		writeParseError(w, msg)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return true
}

// writeParseError answers a body that is not one message with the
// JSON-RPC parse error, as the SDK answers one it cannot decode, but in
// JSON.
func writeParseError(w http.ResponseWriter, msg string) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": jsonrpc.CodeParseError, "message": msg}})
	if err != nil {
		body = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(append(body, '\n'))
}

// originAllowed refuses browser requests from other origins: the
// cross-origin protection of net/http for state-changing methods, and for
// every method an Origin header that names neither the endpoint's own
// host nor a trusted origin (the MCP transport asks for both, against DNS
// rebinding).
func (s *Server[C, P]) originAllowed(r *http.Request) bool {
	if s.origins.Check(r) != nil {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" || s.trusted[origin] {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && u.Host == r.Host
}

// refuseAuth answers an authentication failure as httpx would, with the
// Bearer challenge of the MCP authorization specification on 401.
func (s *Server[C, P]) refuseAuth(w http.ResponseWriter, r *http.Request, err error) {
	ans := httpx.AnswerAuthError(err, s.logger)
	if ans.Internal {
		s.logger.LogAttrs(r.Context(), slog.LevelError, "mcpx: authentication failed unexpectedly",
			slog.String("error", err.Error()))
	}
	var challenges []string
	if ans.Status == http.StatusUnauthorized {
		c := `Bearer resource_metadata="` + s.metadataURL + `"`
		if !errors.Is(err, httpx.ErrNoCredentials) {
			c = `Bearer error="invalid_token", resource_metadata="` + s.metadataURL + `"`
		}
		challenges = append(challenges, c)
		if s.challenge != "" {
			challenges = append(challenges, s.challenge)
		}
	}
	writeEnvelope(w, ans, challenges)
}

// writeEnvelope writes an error answer outside the protocol: a JSON
// envelope as httpx writes it.
func writeEnvelope(w http.ResponseWriter, ans httpx.ErrorAnswer, challenges []string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	for _, c := range challenges {
		h.Add("WWW-Authenticate", c)
	}
	if ans.RetryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((ans.RetryAfter+time.Second-1)/time.Second), 10))
	}
	w.WriteHeader(ans.Status)
	// A write error means the client is gone; there is nobody to tell.
	_, _ = w.Write(append(ans.Body, '\n'))
}

// Resource returns the canonical URL of the endpoint (Config.Resource).
func (s *Server[C, P]) Resource() string { return s.resource }

// MetadataURL returns where the protected resource metadata of the
// endpoint is served: the path-suffixed well-known URL (RFC 9728 §3.1),
// which 401 challenges name.
func (s *Server[C, P]) MetadataURL() string { return s.metadataURL }

// MetadataPaths returns the paths, at the origin's root, where Metadata
// must be mounted: WellKnownPath and, for an endpoint with a path, the
// path-suffixed form (/.well-known/oauth-protected-resource/mcp for
// https://host/mcp). Nil without Config.Authenticate.
func (s *Server[C, P]) MetadataPaths() []string { return s.metadataPath }

// Metadata returns the handler of the protected resource metadata
// document (RFC 9728): the resource, its authorization servers, scopes
// and bearer methods. Nil without Config.Authenticate.
func (s *Server[C, P]) Metadata() http.Handler { return s.metadata }

// Handle registers the endpoint at path on mux, and its metadata at
// MetadataPaths. mux must be the root of the origin's routes.
func (s *Server[C, P]) Handle(mux *http.ServeMux, path string) {
	mux.Handle(path, s)
	for _, p := range s.metadataPath {
		mux.Handle(p, s.metadata)
	}
}
