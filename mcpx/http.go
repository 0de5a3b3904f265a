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
	"strings"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// setupHTTP checks the HTTP part of cfg and builds the Streamable HTTP
// handler of the SDK behind authentication.
func (s *Server) setupHTTP(cfg Config) error {
	var err error
	if s.metadataURL, s.metadataPath, err = checkResource(cfg.Resource); err != nil {
		return err
	}
	s.challenge = auth.ChallengeOf(cfg.Verifier)
	if strings.ContainsAny(s.challenge, "\r\n") {
		return errors.New("mcpx: the verifier's challenge must be one header line")
	}
	s.metadata = sdkauth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
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
		maxBody = defaultMaxBodyBytes
	}
	s.maxBody = maxBody
	srv := s.newMCPServer(nil)
	// Stateless: every POST is served on its own, by a session that lives
	// as long as the request, so that any instance behind a balancer can
	// answer any request and the 2026-07-28 protocol, which has no
	// sessions, is served beside the older ones. A request that ends
	// (its client went away, or closed the response stream to cancel)
	// cancels what it started: see cancelWithRequest.
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		Logger:                       s.logger,
		MaxRequestBodyBytes:          maxBody,
		PropagateRequestCancellation: true,
	})
	// The SDK reads token information only from a context its own bearer
	// middleware filled; this verifier hands it what ServeHTTP verified.
	verify := func(ctx context.Context, _ string, _ *http.Request) (*sdkauth.TokenInfo, error) {
		ti, ok := ctx.Value(verifiedKey{}).(*sdkauth.TokenInfo)
		if !ok {
			return nil, fmt.Errorf("%w: the request was not authenticated", sdkauth.ErrInvalidToken)
		}
		return ti, nil
	}
	s.streamable = sdkauth.RequireBearerToken(verify, &sdkauth.RequireBearerTokenOptions{
		ResourceMetadataURL: s.metadataURL,
		// Expiry is the verifier's business; tokens such as agent JWTs
		// are checked there, not by the SDK.
		AllowMissingExpiration: true,
	})(streamable)
	return nil
}

// verifiedKey carries the token information of an authenticated request
// from ServeHTTP to the SDK.
type verifiedKey struct{}

// requestCtxKey carries the context of the HTTP request that carries a
// message, from ServeHTTP to the tool handler.
type requestCtxKey struct{}

// cancelWithRequest returns ctx, canceled as well when the HTTP request
// that carried the call ends before the call does. A stateless request's
// session ends with it, so once the client has gone (or closed the
// response stream, which is how a 2026-07-28 client cancels) the result
// can reach nobody; on older protocol versions, where the SDK would let
// the call run on, a notifications/cancelled in another POST cannot find
// the call either, so the end of the request is the one way to cancel
// it. Outside HTTP, ctx is returned as it is.
func cancelWithRequest(ctx context.Context) (context.Context, context.CancelFunc) {
	rc, ok := ctx.Value(requestCtxKey{}).(context.Context)
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(rc, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// ServeHTTP serves the Streamable HTTP transport, statelessly: each POST
// carries messages that are answered on its own response, with no
// session between requests (GET and DELETE are 405). Every request is
// checked, in order, for its Origin (403), verified by Config.Verifier
// (401 with a Bearer challenge naming the resource metadata, or the
// verifier's refusal; 403 for an identity without a Subject, to whom no
// confirmation could belong), its body read within Config.MaxBodyBytes
// (413) and checked as strict JSON (400 with a JSON-RPC parse error),
// and then handed to the SDK, which checks content types and the
// protocol version. Mount it at the path of Config.Resource.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.streamable == nil {
		s.logger.LogAttrs(r.Context(), slog.LevelError, "mcpx: an HTTP request reached a server without Config.Verifier")
		s.writeError(w, r, agentcap.Internal(nil), nil)
		return
	}
	if !s.originAllowed(r) {
		s.writeError(w, r, errForbiddenOrigin, nil)
		return
	}
	id, err := s.verifier.Verify(r.Context(), &auth.Request{
		Authorization: r.Header.Get("Authorization"),
		RemoteAddr:    r.RemoteAddr,
		Header:        r.Header.Get,
	})
	if err == nil && (id == nil || id.Subject == "") {
		err = auth.ErrNoCredentials
		if id != nil {
			// Confirmation tokens belong to somebody.
			err = errNoSubject
		}
	}
	if err != nil {
		s.refuseAuth(w, r, err)
		return
	}
	if !s.readMessage(w, r) {
		return
	}
	ctx := context.WithValue(r.Context(), verifiedKey{}, tokenInfo(id))
	// The SDK serves the request on a context that never ends; the
	// request's own tells a tool call when nobody waits for its result.
	ctx = context.WithValue(ctx, requestCtxKey{}, r.Context())
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
func (s *Server) readMessage(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		return true
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.writeError(w, r, errBodyTooLarge, nil)
			return false
		}
		s.writeError(w, r, errBodyUnreadable, nil)
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

// Refusals of the endpoint's own.
var (
	errForbiddenOrigin = agentcap.NewError(agentcap.CodeForbiddenOrigin, "requests from this origin are not accepted")
	errNoSubject       = agentcap.NewError(agentcap.CodeUnauthorized, "the caller may not use this endpoint")
	errBodyTooLarge    = agentcap.NewError(agentcap.CodeRequestTooLarge, "the request body is larger than the server accepts")
	errBodyUnreadable  = agentcap.NewError(agentcap.CodeInvalidRequest, "the request body could not be read")
)

// originAllowed refuses browser requests from other origins: the
// cross-origin protection of net/http for state-changing methods, and for
// every method an Origin header that names neither the endpoint's own
// host nor a trusted origin (the MCP transport asks for both, against DNS
// rebinding).
func (s *Server) originAllowed(r *http.Request) bool {
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

// refuseAuth answers a verifier's refusal in the kit's error envelope,
// with the Bearer challenge of the MCP authorization specification on
// 401 (naming the resource metadata, and the token as invalid unless
// none was sent) and the verifier's own challenge after it.
func (s *Server) refuseAuth(w http.ResponseWriter, r *http.Request, err error) {
	e := agentcap.Public(err)
	if e.HTTPStatus() >= 500 {
		s.logger.LogAttrs(r.Context(), slog.LevelError, "mcpx: authentication failed",
			slog.String("error", err.Error()))
	}
	var challenges []string
	if e.HTTPStatus() == http.StatusUnauthorized {
		c := `Bearer resource_metadata="` + s.metadataURL + `"`
		if e.Code != agentcap.CodeAuthenticationRequired {
			c = `Bearer error="invalid_token", resource_metadata="` + s.metadataURL + `"`
		}
		challenges = append(challenges, c)
		if s.challenge != "" {
			challenges = append(challenges, s.challenge)
		}
	}
	s.writeError(w, r, e, challenges)
}

// writeError writes an error answer outside the protocol: the kit's JSON
// error envelope.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error, challenges []string) {
	if derr := agentcap.WriteError(w, err, challenges...); derr != nil {
		s.logger.LogAttrs(r.Context(), slog.LevelError, "mcpx: dropping error members that cannot be encoded",
			slog.String("error", derr.Error()))
	}
}

// Resource returns the canonical URL of the endpoint (Config.Resource).
func (s *Server) Resource() string { return s.resource }

// MetadataURL returns where the protected resource metadata of the
// endpoint is served: the path-suffixed well-known URL (RFC 9728 §3.1),
// which 401 challenges name.
func (s *Server) MetadataURL() string { return s.metadataURL }

// MetadataPaths returns the paths, at the origin's root, where Metadata
// must be mounted: /.well-known/oauth-protected-resource and, for an endpoint with a path, the
// path-suffixed form (/.well-known/oauth-protected-resource/mcp for
// https://host/mcp). Nil without Config.Verifier.
func (s *Server) MetadataPaths() []string { return s.metadataPath }

// Metadata returns the handler of the protected resource metadata
// document (RFC 9728): the resource, its authorization servers, scopes
// and bearer methods. Nil without Config.Verifier.
func (s *Server) Metadata() http.Handler { return s.metadata }

// Handle registers the endpoint at path on mux, and its metadata at
// MetadataPaths. mux must be the root of the origin's routes.
func (s *Server) Handle(mux *http.ServeMux, path string) {
	mux.Handle(path, s)
	for _, p := range s.metadataPath {
		mux.Handle(p, s.metadata)
	}
}
