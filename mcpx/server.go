package mcpx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/internal/mcpcancel"
	"github.com/agentcap/agentcap/internal/mcpschema"
)

// Config configures a [Server]. Every field has a usable zero value,
// except that serving HTTP needs Verifier and Resource.
type Config struct {
	// Name and Version identify the server in the initialize handshake.
	// Empty Name means "agentcap".
	Name, Version string
	// Instructions tell the client how to use the server; empty sends none.
	Instructions string

	// PageSize is the number of tools a tools/list page holds; zero means 50.
	PageSize int

	// Logger receives internal errors with their hidden causes, which are
	// never sent to a client. Nil discards them.
	Logger *slog.Logger

	// Verifier verifies the credentials of every HTTP request (package
	// auth), which arrive as Bearer tokens (the MCP authorization
	// specification): agentauth's for Agent Auth agents, who sign a fresh
	// JWT for every request, or any other. A request without credentials
	// is refused even by a verifier that would admit it. Its refusals are
	// answered in its own words, with a Bearer challenge naming the
	// resource metadata on 401 and the verifier's own challenge after it
	// (auth.Challenger). Every request is verified on its own: the HTTP
	// endpoint keeps no sessions, so there is no session id to steal and
	// any instance can serve any request. An identity without a Subject
	// is refused (403): confirmation tokens belong to a Subject. The
	// identity's Authorizer decides each tools/call and gives each listed
	// tool's grant status. An identity whose scopes are its grants
	// (auth.Identity.ScopeChallenge, as for the OAuth access tokens of
	// agentauth/provider) is listed only the tools granted to it, and a call of a
	// tool it may see but is not granted is answered with 403 and a
	// Bearer insufficient_scope challenge naming the tool (see the package
	// documentation). Required to serve HTTP; stdio needs none.
	Verifier auth.Verifier

	// Resource is the canonical URL of the MCP endpoint (RFC 8707), for
	// example "https://bank.example/mcp": the protected resource that
	// tokens must be issued for, and the "resource" of its metadata.
	// Required with Verifier.
	Resource string
	// AuthorizationServers, ScopesSupported and ResourceName are published
	// in the protected resource metadata (RFC 9728). ScopesSupported is
	// also the scope parameter of every 401 challenge, space-separated, as
	// the MCP authorization specification advises, so that a client asks
	// for them; none is sent without them. Each must be an OAuth scope
	// (RFC 6749 §3.3: printable ASCII, no spaces, quotes or backslashes).
	AuthorizationServers []string
	ScopesSupported      []string
	ResourceName         string

	// MaxBodyBytes bounds a request body; zero means 1 MiB.
	MaxBodyBytes int64
	// TrustedOrigins lists the origins ("https://app.example") whose
	// browser pages may call the endpoint besides its own. Any other
	// Origin is refused (403), which also stops DNS rebinding.
	TrustedOrigins []string
}

// Defaults of Config.
const (
	defaultPageSize     = 50
	defaultMaxBodyBytes = 1 << 20
)

// MetaGrantStatus is the _meta key of a listed tool's grant status.
const MetaGrantStatus = "agentcap/grant_status"

// MetaError is the _meta key of an error result's envelope, the same JSON
// object httpx answers the error with.
const MetaError = "agentcap/error"

// wellKnownPath is where protected resource metadata is served (RFC 9728
// §3), at the origin's root; the resource's own path follows it in the
// path-suffixed form.
const wellKnownPath = "/.well-known/oauth-protected-resource"

// Server serves an executor's capabilities as MCP tools. It is an
// [http.Handler] for the Streamable HTTP transport, and serves any other
// transport of the SDK, stdio among them, with [Server.Run]. It is safe
// for concurrent use.
type Server struct {
	// src yields the executor; exec is it when it was built before the
	// server, so that calls skip the interface.
	src      core.Source
	exec     *core.Executor
	reg      *core.Registry
	ordered  []*core.Definition
	impl     *mcp.Implementation
	opts     mcp.ServerOptions
	pageSize int
	logger   *slog.Logger
	tools    map[*core.Definition]*tool

	// HTTP.
	verifier     auth.Verifier
	resource     string
	metadataURL  string
	metadataPath []string
	metadata     http.Handler
	challenge    string
	scope        string
	maxBody      int64
	trusted      map[string]bool
	origins      *http.CrossOriginProtection
	streamable   http.Handler
	// noDirectCall sends every request through the SDK (see directCall),
	// for the tests that compare the two.
	noDirectCall bool
}

// tool is one capability as MCP presents it, rendered once.
type tool struct {
	def     *core.Definition
	mcp     *mcp.Tool
	wrapped bool
}

// New builds a server over src: a built *core.Executor, or a
// *core.LazyExecutor whose executor is built on first use. tools/list is
// answered from the registry alone and never starts a lazy build; the
// first tools/call builds the executor, concurrent first calls share that
// build, and while it fails a call is an error result with the envelope
// of 503 temporarily_unavailable, tried again by the next call. New fails
// on an inconsistent configuration.
func New(src core.Source, cfg Config) (*Server, error) {
	if src == nil {
		return nil, errors.New("mcpx: nil executor source")
	}
	reg := src.Registry()
	if reg == nil {
		return nil, errors.New("mcpx: the executor source has no registry")
	}
	if cfg.PageSize < 0 || cfg.MaxBodyBytes < 0 {
		return nil, errors.New("mcpx: negative limit in Config")
	}
	s := &Server{
		src:      src,
		reg:      reg,
		impl:     &mcp.Implementation{Name: cfg.Name, Version: cfg.Version},
		pageSize: cfg.PageSize,
		logger:   cfg.Logger,
		verifier: cfg.Verifier,
		resource: cfg.Resource,
	}
	if s.impl.Name == "" {
		s.impl.Name = "agentcap"
	}
	if s.pageSize == 0 {
		s.pageSize = defaultPageSize
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.opts = mcp.ServerOptions{
		Instructions: cfg.Instructions,
		Logger:       s.logger,
		// The tools come from an immutable registry, so the list never
		// changes under a session.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	}
	if e, ok := src.(*core.Executor); ok {
		s.exec = e
	}
	all := reg.All()
	s.ordered = all
	s.tools = make(map[*core.Definition]*tool, len(all))
	for _, d := range all {
		s.tools[d] = renderTool(d)
	}
	if cfg.Verifier != nil {
		if err := s.setupHTTP(cfg); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// renderTool describes d as an MCP tool: its schemas (see package
// internal/mcpschema for the shape MCP wants), title, description and the
// hints its risk and read-only declaration imply.
func renderTool(d *core.Definition) *tool {
	out, wrapped := mcpschema.Output(d.OutputSchema())
	title := mcpschema.Title(d.Name(), d.Title())
	h := mcpschema.HintsOf(d.ReadOnly(), string(d.Risk()))
	t := &mcp.Tool{
		Name:        d.Name(),
		Title:       title,
		Description: d.Description(),
		InputSchema: mcpschema.Input(d.InputSchema()),
		Annotations: &mcp.ToolAnnotations{Title: title, ReadOnlyHint: h.ReadOnly, DestructiveHint: h.Destructive},
	}
	if out != nil {
		t.OutputSchema = out
	}
	return &tool{def: d, mcp: t, wrapped: wrapped}
}

// Run serves one session over t (an *mcp.StdioTransport, an
// *mcp.IOTransport, an in-memory transport) for the caller id, until the
// client closes it or ctx ends. Such transports carry no credentials: the
// process that starts the server decides who the caller is (nil: an
// anonymous caller, which sees what a nil identity may see and can run
// what its visibility and the executor admit).
//
// After a notifications/cancelled for a call under way the call's context
// is canceled and no result is sent for it, as the specification asks
// (the SDK alone would send the result the canceled call returns).
func (s *Server) Run(ctx context.Context, t mcp.Transport, id *auth.Identity) error {
	return s.newMCPServer(&id).Run(ctx, stream(t))
}

// stream is the transport Run serves t over: t, answering no call its
// client canceled.
func stream(t mcp.Transport) mcp.Transport { return mcpcancel.Transport(t) }

// newMCPServer builds an SDK server whose tools are the executor's. fixed
// points to the identity of every request (stdio), or is nil to take it
// from each request's token information (HTTP).
func (s *Server) newMCPServer(fixed **auth.Identity) *mcp.Server {
	opts := s.opts
	srv := mcp.NewServer(s.impl, &opts)
	// The SDK runs calls of known tools (see middleware), which is what
	// the tools are registered for; tools/list never reaches its table.
	for _, d := range s.ordered {
		srv.AddTool(s.tools[d].mcp, s.handleTool)
	}
	srv.AddReceivingMiddleware(s.middleware(fixed))
	return srv
}

// identityKey is the TokenInfo.Extra key of a request's identity.
const identityKey = "agentcap/identity"

// identity returns the caller of req.
func (s *Server) identity(req mcp.Request, fixed **auth.Identity) (*auth.Identity, error) {
	if fixed != nil {
		return *fixed, nil
	}
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return nil, errors.New("mcpx: a request without token information reached the server")
	}
	id, ok := extra.TokenInfo.Extra[identityKey].(*auth.Identity)
	if !ok || id == nil {
		return nil, errors.New("mcpx: a request whose token information holds no identity reached the server")
	}
	return id, nil
}

// tokenInfo is what the SDK keeps of an authenticated request: the
// subject its session is bound to and the identity.
func tokenInfo(id *auth.Identity) *sdkauth.TokenInfo {
	return &sdkauth.TokenInfo{UserID: id.Subject, Extra: map[string]any{identityKey: id}}
}

// checkResource validates Config.Resource and returns where its metadata
// lives: the path-suffixed URL and the paths to serve it at.
func checkResource(resource string) (metadataURL string, paths []string, err error) {
	u, err := url.Parse(resource)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" {
		return "", nil, fmt.Errorf("mcpx: Config.Resource %q must be an absolute http(s) URL without credentials, query or fragment", resource)
	}
	if strings.ContainsAny(resource, "\"\\") {
		return "", nil, fmt.Errorf("mcpx: Config.Resource %q has a character that cannot appear in a challenge", resource)
	}
	path := strings.TrimRight(u.EscapedPath(), "/")
	paths = []string{wellKnownPath}
	if path != "" {
		paths = append(paths, wellKnownPath+path)
	}
	return u.Scheme + "://" + u.Host + wellKnownPath + path, paths, nil
}
