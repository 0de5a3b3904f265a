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
	for _, sc := range cfg.ScopesSupported {
		if !isScopeToken(sc) {
			return fmt.Errorf("mcpx: Config.ScopesSupported: %q is not an OAuth scope (RFC 6749 §3.3: printable ASCII without spaces, quotes or backslashes)", sc)
		}
	}
	s.scope = strings.Join(cfg.ScopesSupported, " ")
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
// for a caller whose scopes are its grants (auth.Identity.ScopeChallenge)
// whether it calls a tool it is not granted (403 with a Bearer
// insufficient_scope challenge naming the tool), and then handed to the
// SDK, which checks content types and the protocol version. Mount it at
// the path of Config.Resource.
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
	body, ok := s.readMessage(w, r)
	if !ok {
		return
	}
	if call, isCall := readToolCall(body); isCall && (s.stepUp(w, r, id, call) || s.directCall(w, r, id, call)) {
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
// it refuses; otherwise it returns the bytes read (nil for a request
// without a body), which are r's body too, for the SDK.
func (s *Server) readMessage(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.writeError(w, r, errBodyTooLarge, nil)
			return nil, false
		}
		s.writeError(w, r, errBodyUnreadable, nil)
		return nil, false
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
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
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
	writeRPCError(w, http.StatusBadRequest, body)
}

// writeRPCError writes body, a JSON-RPC error response, with status.
func writeRPCError(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// stepUp answers a tools/call of a caller whose scopes are its grants
// (auth.Identity.ScopeChallenge) that names a tool the caller may see
// (while executing, as a call sees it) but is not granted: 403, with the
// Bearer insufficient_scope challenge of RFC 6750 §3.1 naming the tool as
// the scope to ask for and the resource metadata, and a JSON-RPC error
// response to the call (invalid params, as for a tool the caller may not
// see, with the kit's capability_not_granted envelope as its data). The
// client can then ask its user for the grant and call again. Anything
// else (another method, a notification, a batch, a name that is not a
// string, an unknown or hidden tool, a granted one) goes on to the SDK,
// and stepUp returns false.
func (s *Server) stepUp(w http.ResponseWriter, r *http.Request, id *auth.Identity, call toolCall) bool {
	if !id.ScopeChallenge || id.Authorizer == nil {
		return false
	}
	rpcID, name := call.id, call.name
	def, known := s.reg.Lookup(name)
	if !known || !def.Visible(r.Context(), id, true) || id.Authorizer.GrantStatus(name) != agentcap.GrantStatusNotGranted {
		return false
	}
	msg := fmt.Sprintf("the access token does not grant the tool %q: authorize the scope %q and call again", name, name)
	envelope, err := agentcap.AppendError(nil, agentcap.NewError(agentcap.CodeCapabilityNotGranted, msg), agentcap.KeyError)
	if err != nil {
		return false
	}
	res, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: rpcID,
		Error: &jsonrpc.Error{Code: codeNotGranted, Message: msg, Data: envelope}})
	if err != nil {
		return false
	}
	w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope=`+quote(name)+
		", resource_metadata="+quote(s.metadataURL)+`, error_description="the access token does not grant this tool"`)
	writeRPCError(w, http.StatusForbidden, res)
	return true
}

// codeNotGranted is the JSON-RPC error code of a tools/call refused by
// stepUp: invalid params, the code of a call of a tool the caller may
// not see.
const codeNotGranted = jsonrpc.CodeInvalidParams

// toolCall is a JSON-RPC request of tools/call, as readToolCall found
// it.
type toolCall struct {
	id   jsonrpc.ID
	name string
	// args are the arguments, nil when absent.
	args json.RawMessage
	// plain reports a call of nothing but its name and, at most, an
	// arguments object: members jsonrpc, id, method and params, and in
	// params name and arguments (see directCall).
	plain bool
}

// readToolCall reads body once for stepUp and directCall: ok when it is
// one JSON-RPC request (not a notification, not a batch) of tools/call
// whose params name a tool; the id is a string or an integer that the
// SDK would answer with unchanged. Member names are matched exactly, as
// the SDK matches them, and any member of another type is ok false: such
// a message is the SDK's to answer.
func readToolCall(body []byte) (c toolCall, ok bool) {
	var msg map[string]json.RawMessage
	if body == nil || json.Unmarshal(body, &msg) != nil {
		return c, false
	}
	if v, ok := jsonString(msg["jsonrpc"]); !ok || v != "2.0" {
		return c, false
	}
	if m, ok := jsonString(msg["method"]); !ok || m != methodCallTool {
		return c, false
	}
	if c.id, ok = rpcID(msg["id"]); !ok {
		return c, false
	}
	var params map[string]json.RawMessage
	if p := bytes.TrimSpace(msg["params"]); len(p) == 0 || p[0] != '{' || json.Unmarshal(p, &params) != nil {
		return c, false
	}
	if c.name, ok = jsonString(params["name"]); !ok {
		return c, false
	}
	c.plain = len(msg) == 4
	for k, v := range params {
		switch {
		case k == "arguments":
			if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '{' {
				c.plain = false
			}
			c.args = v
		case k != "name":
			c.plain = false
		}
	}
	return c, true
}

// jsonString decodes raw when it is a JSON string.
func jsonString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	var v string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	return v, true
}

// rpcID returns a request's id when it is a string, or an integer that a
// float64 holds exactly (the SDK reads numbers so); ok is false for
// anything else, a missing or null id among them.
func rpcID(raw json.RawMessage) (jsonrpc.ID, bool) {
	if v, ok := jsonString(raw); ok {
		id, err := jsonrpc.MakeID(v)
		return id, err == nil
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil || int64(float64(n)) != n {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(float64(n))
	return id, err == nil
}

// isScopeToken reports an OAuth scope token (RFC 6749 §3.3): one or more
// printable ASCII characters other than space, quote and backslash.
func isScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// quote returns s as an HTTP quoted-string (RFC 9110 §5.6.4), for an
// authentication parameter.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
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
// 401 (naming the token as invalid unless none was sent, the scopes of
// Config.ScopesSupported when there are any, and the resource metadata)
// and the verifier's own challenge after it.
func (s *Server) refuseAuth(w http.ResponseWriter, r *http.Request, err error) {
	e := agentcap.Public(err)
	if e.HTTPStatus() >= 500 {
		s.logger.LogAttrs(r.Context(), slog.LevelError, "mcpx: authentication failed",
			slog.String("error", err.Error()))
	}
	var challenges []string
	if e.HTTPStatus() == http.StatusUnauthorized {
		var params []string
		if e.Code != agentcap.CodeAuthenticationRequired {
			params = append(params, `error="invalid_token"`)
		}
		if s.scope != "" {
			params = append(params, "scope="+quote(s.scope))
		}
		params = append(params, "resource_metadata="+quote(s.metadataURL))
		challenges = append(challenges, "Bearer "+strings.Join(params, ", "))
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
