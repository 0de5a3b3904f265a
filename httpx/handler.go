package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

// Config configures a [Handler]. Only Verifier is required; every other
// field has a usable zero value.
type Config struct {
	// Verifier verifies the credentials of every request (package auth):
	// agentauth's for Agent Auth agents, auth/oidcauth's for OpenID
	// Connect tokens, or the application's own. Its refusals are
	// answered in its own words, with its challenge (auth.Challenger) on
	// 401; an identity's Authorizer decides each call, and adds
	// "grant_status" to list and describe entries. A verifier that admits
	// anonymous callers of list and describe lets them see the
	// capabilities whose visibility admits a nil identity; execution
	// always needs an identity.
	Verifier auth.Verifier

	// MaxBodyBytes bounds a request body, on the wire and after decoding.
	// Zero means 1 MiB.
	MaxBodyBytes int64

	// ListCacheControl is the Cache-Control of successful list and
	// describe answers. Empty means "private, max-age=300".
	ListCacheControl string

	// DefaultListLimit is the page size of a list without limit (default
	// 50); MaxListLimit is the largest limit a caller may ask for (default
	// 100, or DefaultListLimit if that is larger and MaxListLimit is 0).
	DefaultListLimit, MaxListLimit int

	// Logger receives internal errors with their hidden causes, which are
	// never sent to a caller. Nil discards them.
	Logger *slog.Logger

	// LongRunning configures streams, async jobs and idempotency keys
	// (see LongRunning). Its zero value streams with the defaults and
	// serves neither jobs nor idempotency keys.
	LongRunning LongRunning

	// ClientIP returns the caller's address for the executor's audit
	// records. Nil means the host of Request.RemoteAddr; behind a trusted
	// reverse proxy, read the address it reports (the last
	// X-Forwarded-For entry, say) here. See agentcap.HeaderRequestID for the
	// request id the records carry.
	ClientIP func(req *Request) string
}

// Defaults of Config.
const (
	defaultMaxBodyBytes     = 1 << 20
	defaultListCacheControl = "private, max-age=300"
	defaultListLimit        = 50
	defaultMaxListLimit     = 100
)

// Handler serves a core executor over HTTP. It is an [http.Handler] for
// net/http and exposes [Handler.Serve] for routers that are not. It is safe
// for concurrent use.
type Handler struct {
	handlerBase
	// src yields the executor; exec is it when it was built before the
	// handler, so that the hot path skips the interface call.
	src      core.Source
	exec     *core.Executor
	reg      *core.Registry
	ordered  []*core.Definition
	verifier auth.Verifier
	long     longRunning
	// previews is set when a capability has a preview.
	previews bool
}

// handlerBase is the part of a Handler that the router mounts and the
// error answers share.
type handlerBase struct {
	logger    *slog.Logger
	challenge []string
	maxBody   int64
	listCache []string
	defLimit  int
	maxLimit  int
	defs      map[*core.Definition]*defInfo
	clientIP  func(req *Request) string
}

// defInfo holds the parts of list and describe answers that never change,
// rendered once at construction.
type defInfo struct {
	listEntry []byte // without the closing brace
	describe  []byte // without the closing brace
	lowerName string
	lowerDesc string
}

// New builds a handler over src: a built *core.Executor, or a
// *core.LazyExecutor whose executor is built on first use. List and
// describe are served from the registry alone and never start a lazy
// build; the first execute or batch builds the executor, concurrent first
// calls share that build, and a failed build is answered 503
// temporarily_unavailable with Retry-After and tried again by the next
// call. New fails on an incomplete or inconsistent configuration.
func New(src core.Source, cfg Config) (*Handler, error) {
	if src == nil {
		return nil, errors.New("httpx: nil executor source")
	}
	reg := src.Registry()
	if reg == nil {
		return nil, errors.New("httpx: the executor source has no registry")
	}
	if cfg.Verifier == nil {
		return nil, errors.New("httpx: Config.Verifier is required")
	}
	if cfg.MaxBodyBytes < 0 || cfg.DefaultListLimit < 0 || cfg.MaxListLimit < 0 {
		return nil, errors.New("httpx: negative limit in Config")
	}
	h := &Handler{
		handlerBase: handlerBase{
			logger:   cfg.Logger,
			maxBody:  cfg.MaxBodyBytes,
			defLimit: cfg.DefaultListLimit,
			maxLimit: cfg.MaxListLimit,
			clientIP: cfg.ClientIP,
		},
		src:      src,
		reg:      reg,
		verifier: cfg.Verifier,
	}
	if h.logger == nil {
		h.logger = slog.New(slog.DiscardHandler)
	}
	if h.maxBody == 0 {
		h.maxBody = defaultMaxBodyBytes
	}
	if h.clientIP == nil {
		h.clientIP = remoteIP
	}
	// Header values are built once and shared by every answer: assigning
	// a prebuilt []string costs nothing per request, where Header.Set
	// allocates one.
	listCache := cfg.ListCacheControl
	if listCache == "" {
		listCache = defaultListCacheControl
	}
	h.listCache = []string{listCache}
	if c := auth.ChallengeOf(cfg.Verifier); c != "" {
		h.challenge = []string{c}
	}
	switch {
	case h.defLimit == 0 && h.maxLimit == 0:
		h.defLimit, h.maxLimit = defaultListLimit, defaultMaxListLimit
	case h.maxLimit == 0:
		h.maxLimit = max(defaultMaxListLimit, h.defLimit)
	case h.defLimit == 0:
		h.defLimit = min(defaultListLimit, h.maxLimit)
	}
	if h.defLimit > h.maxLimit {
		return nil, fmt.Errorf("httpx: DefaultListLimit %d exceeds MaxListLimit %d", h.defLimit, h.maxLimit)
	}
	if err := h.long.configure(cfg.LongRunning, reg); err != nil {
		return nil, err
	}
	if e, ok := src.(*core.Executor); ok {
		h.exec = e
	}
	all := reg.All()
	h.ordered = all
	h.defs = make(map[*core.Definition]*defInfo, len(all))
	for _, d := range all {
		h.previews = h.previews || d.SupportsPreview()
		info, err := renderDefinition(d)
		if err != nil {
			return nil, err
		}
		h.defs[d] = info
	}
	return h, nil
}

// renderDefinition pre-renders the static members of d's list entry and
// describe answer.
func renderDefinition(d *core.Definition) (*defInfo, error) {
	var in, out bytes.Buffer
	if err := json.Compact(&in, d.InputSchema()); err != nil {
		return nil, fmt.Errorf("httpx: capability %q: input schema: %w", d.Name(), err)
	}
	if err := json.Compact(&out, d.OutputSchema()); err != nil {
		return nil, fmt.Errorf("httpx: capability %q: output schema: %w", d.Name(), err)
	}
	head := func() []byte {
		b := append([]byte(`{"name":`), appendString(nil, d.Name())...)
		b = append(b, `,"description":`...)
		b = appendString(b, d.Description())
		// The title and read-only declaration, for clients that present
		// capabilities as tools (an MCP bridge titles and annotates them
		// as mcpx does).
		if t := d.Title(); t != "" {
			b = append(b, `,"title":`...)
			b = appendString(b, t)
		}
		if d.ReadOnly() {
			b = append(b, `,"read_only":true`...)
		}
		return b
	}
	list := head()
	list = append(list, `,"approval_strength":`...)
	list = appendString(list, string(d.Approval()))
	if rc := d.RequiredConstraints(); len(rc) > 0 {
		list = append(list, `,"required_constraints":`...)
		list = appendStrings(list, rc)
	}
	// A list entry carries the capability's location too (§5.2 entries
	// use the §2.12 fields), so that a client routes execution without
	// describing every capability first.
	if l := d.Location(); l != "" {
		list = append(list, `,"location":`...)
		list = appendString(list, l)
	}
	list = append(list, `,"risk":`...)
	list = appendString(list, string(d.Risk()))
	list = appendBool(list, "supports_preview", d.SupportsPreview())

	desc := head()
	desc = append(desc, `,"input":`...)
	desc = append(desc, in.Bytes()...)
	desc = append(desc, `,"output":`...)
	desc = append(desc, out.Bytes()...)
	desc = append(desc, `,"approval_strength":`...)
	desc = appendString(desc, string(d.Approval()))
	desc = append(desc, `,"required_constraints":`...)
	desc = appendStrings(desc, d.RequiredConstraints())
	desc = append(desc, `,"risk":`...)
	desc = appendString(desc, string(d.Risk()))
	if s := d.Scope(); s != "" {
		desc = append(desc, `,"scope":`...)
		desc = appendString(desc, s)
	}
	if t := d.Tags(); len(t) > 0 {
		desc = append(desc, `,"tags":`...)
		desc = appendStrings(desc, t)
	}
	if l := d.Location(); l != "" {
		desc = append(desc, `,"location":`...)
		desc = appendString(desc, l)
	}
	if chunk := d.ChunkSchema(); chunk != nil {
		var c bytes.Buffer
		if err := json.Compact(&c, chunk); err != nil {
			return nil, fmt.Errorf("httpx: capability %q: chunk schema: %w", d.Name(), err)
		}
		desc = append(desc, `,"streaming":true,"chunk":`...)
		desc = append(desc, c.Bytes()...)
	}
	if d.Async() {
		desc = append(desc, `,"async":true`...)
	}
	desc = appendBool(desc, "supports_preview", d.SupportsPreview())
	if ps := d.PreviewSchema(); ps != nil {
		var p bytes.Buffer
		if err := json.Compact(&p, ps); err != nil {
			return nil, fmt.Errorf("httpx: capability %q: preview schema: %w", d.Name(), err)
		}
		desc = append(desc, `,"preview_schema":`...)
		desc = append(desc, p.Bytes()...)
	}
	return &defInfo{
		listEntry: list,
		describe:  desc,
		lowerName: strings.ToLower(d.Name()),
		lowerDesc: strings.ToLower(d.Description()),
	}, nil
}

// Routes returns the routes relative to the mount point, for mounts that
// register each one on a router: list, describe, execute and
// batch-execute, and the job status route when jobs are configured.
func (h *Handler) Routes() []string {
	routes := []string{agentcap.RouteList, agentcap.RouteDescribe, agentcap.RouteExecute, agentcap.RouteBatch}
	if h.long.jobs != nil {
		routes = append(routes, agentcap.RouteStatus)
	}
	if h.previews {
		routes = append(routes, agentcap.RoutePreview)
	}
	return routes
}

// MaxBodyBytes returns the body limit, for mounts that read bodies
// themselves.
func (h *Handler) MaxBodyBytes() int64 { return h.maxBody }

// ServeHTTP serves r. Paths are relative to the mount point, so mount the
// handler with http.StripPrefix; "capability/list" and "/capability/list"
// both work. The request's context reaches the executor: a client that
// goes away cancels the execution.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := NewRequest(w, r, r.URL.Path)
	buf := getBuffer()
	meta := h.handle(req, buf)
	req.releaseBody()
	if meta.stream != nil {
		putBuffer(buf)
		meta.setRequestID(w.Header())
		meta.stream.serveHTTP(w)
		return
	}
	meta.setHeaders(w.Header())
	w.WriteHeader(meta.status)
	// A write error means the client is gone; there is nobody to tell.
	_, _ = w.Write(buf.b)
	putBuffer(buf)
}

// Serve answers one transport-neutral request. It never returns nil. A
// body that Serve read itself (a request made by [NewRequest]) is
// released before Serve returns; a Body set by the caller is left alone.
// Call [Response.Release] once the answer is written, so that the next
// answer reuses its memory.
func (h *Handler) Serve(req *Request) *Response {
	buf := getBuffer()
	meta := h.handle(req, buf)
	req.releaseBody()
	resp := responsePool.Get().(*Response)
	if meta.stream != nil {
		putBuffer(buf)
		resp.Status, resp.stream = meta.status, meta.stream
		meta.stream.setHeaders(resp.Header)
		meta.setRequestID(resp.Header)
		return resp
	}
	resp.Status, resp.Body, resp.buf = meta.status, buf.b, buf
	meta.setHeaders(resp.Header)
	return resp
}

var responsePool = sync.Pool{New: func() any { return &Response{Header: make(http.Header, 4)} }}

// Release hands the response's memory back for reuse by later answers.
// Call it at most once, after the body has been written, and use neither
// the Response nor its Body or Header afterwards. A response that is never
// released is simply collected as garbage.
func (r *Response) Release() {
	if r.stream != nil {
		// The stream's memory is its own; the Response goes back only
		// once the stream has been written (or is never written).
		r.stream.abandon()
		r.stream = nil
		clear(r.Header)
		responsePool.Put(r)
		return
	}
	buf := r.buf
	if buf == nil {
		return
	}
	r.buf, r.Body = nil, nil
	putBuffer(buf)
	clear(r.Header)
	responsePool.Put(r)
}

// replyMeta is everything about an answer except its body. Its header
// values are shared by many answers and must not be modified.
type replyMeta struct {
	status     int
	allow      []string
	challenge  []string
	cache      []string
	retryAfter []string
	// stream is set for an answer that is an event stream.
	stream *eventStream
	// replayed marks an answer replayed for an idempotency key.
	replayed bool
	// unkept marks an answer an idempotency key must not keep.
	unkept bool
	// requestID is sent as X-Request-Id when set.
	requestID string
}

// Header values that never change. A header map that receives them owns
// the map entry, not the slice: Header.Add appends past the slice's
// length, which is its capacity, so it copies rather than writes into
// the shared array.
var (
	hdrJSON      = []string{"application/json"}
	hdrNoSniff   = []string{"nosniff"}
	cacheNoStore = []string{"no-store"}
	allowGet     = []string{http.MethodGet}
	allowPost    = []string{http.MethodPost}
	allowStatus  = []string{http.MethodGet + ", " + http.MethodDelete}
	hdrTrue      = []string{"true"}
)

// setHeaders assigns the answer's headers. The keys are in canonical
// form, so assigning is what Header.Set would do.
func (m replyMeta) setHeaders(hd http.Header) {
	hd["Content-Type"] = hdrJSON
	hd["X-Content-Type-Options"] = hdrNoSniff
	hd["Cache-Control"] = m.cache
	if m.allow != nil {
		hd["Allow"] = m.allow
	}
	if m.challenge != nil {
		hd["Www-Authenticate"] = m.challenge
	}
	if m.retryAfter != nil {
		hd["Retry-After"] = m.retryAfter
	}
	if m.replayed {
		hd["Idempotent-Replayed"] = hdrTrue
	}
	m.setRequestID(hd)
}

// setRequestID sends the request id, when the request has one, also with
// an event stream.
func (m replyMeta) setRequestID(hd http.Header) {
	if m.requestID != "" {
		hd[agentcap.HeaderRequestID] = []string{m.requestID}
	}
}

type route uint8

const (
	routeNone route = iota
	routeList
	routeDescribe
	routeExecute
	routeBatch
	routeStatus
	routePreview
)

func matchRoute(path string) route {
	switch strings.TrimPrefix(path, "/") {
	case agentcap.RouteList:
		return routeList
	case agentcap.RouteDescribe:
		return routeDescribe
	case agentcap.RouteExecute:
		return routeExecute
	case agentcap.RouteBatch:
		return routeBatch
	case agentcap.RouteStatus:
		return routeStatus
	case agentcap.RoutePreview:
		return routePreview
	}
	return routeNone
}

// fail renders an error answer into buf. A refusal of the confirmation
// stage judges the token a call carried, not the call, so an idempotency
// key never keeps it: the same key may be retried with a token.
func (h *handlerBase) fail(ctx context.Context, buf *buffer, e *agentcap.Error) replyMeta {
	buf.b = h.appendError(ctx, buf.b[:0], e, agentcap.KeyError)
	buf.b = append(buf.b, '\n')
	status := e.HTTPStatus()
	m := replyMeta{status: status, cache: cacheNoStore, unkept: e.Stage == agentcap.StageConfirmation}
	if status == http.StatusUnauthorized {
		m.challenge = h.challenge
	}
	if e.RetryAfter > 0 {
		m.retryAfter = []string{agentcap.RetryAfterHeader(e.RetryAfter)}
	}
	return m
}

// handle runs the checks in their fixed order and dispatches to a route.
func (h *Handler) handle(req *Request, buf *buffer) (meta replyMeta) {
	// The executor recovers panics of handlers and resolvers; this covers
	// the application's other callbacks (verifier, authorizer,
	// visibility, grant status), which under routers without a recovery
	// middleware of their own would otherwise take the server down.
	defer func() {
		if r := recover(); r != nil {
			h.logger.LogAttrs(context.Background(), slog.LevelError, "httpx: panic while serving a request",
				slog.String("path", req.Path), slog.String("panic", fmt.Sprint(r)), slog.String("stack", string(debug.Stack())))
			meta = h.fail(context.Background(), buf, errInternal)
		}
	}()
	ctx := req.Context
	if ctx == nil {
		ctx = context.Background()
		req.Context = ctx
	}
	rt := matchRoute(req.Path)
	if rt == routeStatus && h.long.jobs == nil || rt == routePreview && !h.previews {
		rt = routeNone
	}
	if rt == routeNone {
		return h.fail(ctx, buf, errNoRoute)
	}
	method := http.MethodPost
	if rt == routeList || rt == routeDescribe {
		method = http.MethodGet
	}
	if rt == routeStatus {
		if req.Method != http.MethodGet && req.Method != http.MethodDelete {
			m := h.fail(ctx, buf, errUseGetOrDelete)
			m.allow = allowStatus
			return m
		}
		method = req.Method
	}
	if req.Method != method {
		if method == http.MethodGet {
			m := h.fail(ctx, buf, errUseGet)
			m.allow = allowGet
			return m
		}
		m := h.fail(ctx, buf, errUsePost)
		m.allow = allowPost
		return m
	}

	discovery := rt == routeList || rt == routeDescribe
	req.auth = auth.Request{Authorization: req.header("Authorization"), Discovery: discovery,
		RemoteAddr: req.RemoteAddr, Header: req.Header}
	id, err := h.verifier.Verify(ctx, &req.auth)
	if err == nil && id == nil && !discovery {
		// A verifier admits an anonymous caller to listings only.
		err = auth.ErrNoCredentials
	}
	if err != nil {
		e, internal := authError(err)
		if internal {
			h.logger.LogAttrs(ctx, slog.LevelError, "agentcap: authentication failed",
				slog.String("error", err.Error()))
		}
		return h.fail(ctx, buf, e)
	}

	switch rt {
	case routeList:
		return h.list(ctx, req, id, buf)
	case routeDescribe:
		return h.describe(ctx, req, id, buf)
	case routeStatus:
		return h.status(ctx, req, id, buf)
	}

	if !isJSONContentType(req.header("Content-Type")) {
		return h.fail(ctx, buf, errNotJSON)
	}
	req.loadBody(h.maxBody)
	if req.BodyTooLarge || int64(len(req.Body)) > h.maxBody {
		return h.fail(ctx, buf, agentcap.NewError(agentcap.CodeRequestTooLarge, fmt.Sprintf("the body exceeds %d bytes", h.maxBody)))
	}
	if req.BodyError != nil {
		return h.fail(ctx, buf, errUnreadable)
	}
	// The executor's audit records name the request; an executor built
	// before the handler tells whether it keeps any.
	if h.exec == nil || h.exec.Audits() {
		var id string
		ctx, id = h.withRequestInfo(ctx, req)
		defer func() { meta.requestID = id }()
	}
	if rt == routeExecute {
		return h.execute(ctx, req, id, buf)
	}
	if rt == routePreview {
		return h.preview(ctx, req, id, buf)
	}
	if req.header("Idempotency-Key") != "" && h.long.idem != nil {
		return h.fail(ctx, buf, errBatchIdempotencyKey)
	}
	return h.batch(ctx, req.Body, id, buf)
}

// isJSONContentType accepts application/json and application/*+json, with
// any parameters.
func isJSONContentType(v string) bool {
	if i := strings.IndexByte(v, ';'); i >= 0 {
		v = v[:i]
	}
	v = strings.TrimSpace(v)
	const app = "application/"
	if len(v) <= len(app) || !strings.EqualFold(v[:len(app)], app) {
		return false
	}
	sub := v[len(app):]
	if strings.EqualFold(sub, "json") {
		return true
	}
	return len(sub) > len("+json") && strings.EqualFold(sub[len(sub)-len("+json"):], "+json")
}

// Refusals of methods and of keys the handler does not take.
var (
	errUseGet              = agentcap.NewError(agentcap.CodeMethodNotAllowed, "use GET for this endpoint")
	errUsePost             = agentcap.NewError(agentcap.CodeMethodNotAllowed, "use POST for this endpoint")
	errUseGetOrDelete      = agentcap.NewError(agentcap.CodeMethodNotAllowed, "use GET or DELETE for this endpoint")
	errBatchIdempotencyKey = &agentcap.Error{Code: agentcap.CodeInvalidIdempotencyKey, Stage: agentcap.StageInput,
		Message: "batch-execute takes no Idempotency-Key: the batch shape has no place for one per item; execute calls that must run once on their own"}
)

// asError returns the *agentcap.Error of an executor's failure. The
// executor returns nothing else; anything else is a redacted internal
// error.
func asError(err error) *agentcap.Error {
	if e := agentcap.As(err); e != nil {
		return e
	}
	return errInternal
}

func (h *Handler) execute(ctx context.Context, req *Request, id *auth.Identity, buf *buffer) replyMeta {
	name, args, token, perr := parseExecute(req.Body)
	if perr != nil {
		return h.fail(ctx, buf, perr)
	}
	// The token rides on the context, into jobs and streams too; the
	// executor consumes it only for a capability that needs one.
	ctx = core.WithConfirmationToken(ctx, token)
	exec, eerr := h.executor(ctx)
	if eerr != nil {
		return h.fail(ctx, buf, eerr)
	}
	if h.long.applies(req, name) {
		return h.executeLong(ctx, exec, req, name, args, id, buf)
	}
	data, err := exec.Execute(ctx, name, id, args)
	return h.answer(ctx, name, data, err, buf)
}

// preview answers {"preview": ..., "confirmation"?: {"token", "expires_at"},
// "requires_human_confirmation"?: true} for the execute body, after the
// same checks as execute.
func (h *Handler) preview(ctx context.Context, req *Request, id *auth.Identity, buf *buffer) replyMeta {
	name, args, _, perr := parseExecute(req.Body)
	if perr != nil {
		return h.fail(ctx, buf, perr)
	}
	exec, eerr := h.executor(ctx)
	if eerr != nil {
		return h.fail(ctx, buf, eerr)
	}
	res, err := exec.Preview(ctx, name, id, args)
	if err != nil {
		return h.answer(ctx, name, nil, err, buf)
	}
	b := append(buf.b[:0], `{"preview":`...)
	b = append(b, res.Data...)
	if c := res.Confirmation; c != nil {
		b = append(b, `,"confirmation":{"token":`...)
		b = appendString(b, c.Token)
		b = append(b, `,"expires_at":`...)
		b = appendString(b, core.ConfirmationJSON(*c)["expires_at"])
		b = append(b, '}')
	}
	if res.HumanConfirmation {
		b = append(b, `,"requires_human_confirmation":true`...)
	}
	buf.b = append(b, '}', '\n')
	return replyMeta{status: http.StatusOK, cache: cacheNoStore}
}

// answer renders the outcome of a synchronous execution.
func (h *Handler) answer(ctx context.Context, name string, data []byte, err error, buf *buffer) replyMeta {
	if err != nil {
		ce := asError(err)
		if ce.Code == agentcap.CodeConfirmationPending {
			return h.confirmationPending(buf, ce)
		}
		h.logFailure(ctx, name, ce)
		return h.fail(ctx, buf, ce)
	}
	b := append(buf.b[:0], `{"data":`...)
	b = append(b, data...)
	buf.b = append(b, '}', '\n')
	return replyMeta{status: http.StatusOK, cache: cacheNoStore}
}

func (h *Handler) batch(ctx context.Context, body []byte, id *auth.Identity, buf *buffer) replyMeta {
	exec, eerr := h.executor(ctx)
	if eerr != nil {
		return h.fail(ctx, buf, eerr)
	}
	calls, perr := parseBatch(body, exec.MaxBatch())
	if perr != nil {
		return h.fail(ctx, buf, perr)
	}
	results, err := exec.ExecuteBatch(ctx, id, calls)
	if err != nil {
		return h.fail(ctx, buf, asError(err))
	}
	b := append(buf.b[:0], `{"responses":[`...)
	for i, c := range calls {
		if i > 0 {
			b = append(b, ',')
		}
		res := results[i]
		b = append(b, `{"id":`...)
		b = appendString(b, c.ID)
		if res.Err == nil {
			b = append(b, `,"status":"completed","data":`...)
			b = append(b, res.Data...)
		} else {
			h.logFailure(ctx, c.Capability, res.Err)
			b = append(b, `,"status":"failed","error":`...)
			b = h.appendError(ctx, b, res.Err, agentcap.KeyCode)
		}
		b = append(b, '}')
	}
	buf.b = append(b, ']', '}', '\n')
	return replyMeta{status: http.StatusOK, cache: cacheNoStore}
}
