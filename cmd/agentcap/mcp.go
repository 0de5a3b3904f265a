package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	wire "github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/internal/mcpcancel"
)

// mcpInstructions tell the model on the other side what the server is.
const mcpInstructions = `This server gives access to applications through the Agent Auth protocol.
Tools named provider__capability run a capability granted to the agent connected to that provider.
To get access to a new provider, call agentcap_connect with its URL and the capabilities you need,
then show the user the approval URL and code it returns; the provider's tools appear once the user approves.
agentcap_status shows the connections and pending approvals; agentcap_request_capabilities asks for more.`

// mcpCommand serves the connected agents' granted capabilities, and the
// lifecycle tools, as an MCP server on standard input and output.
func (c *cli) mcpCommand(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var urls stringList
	fs.Var(&urls, "url", "serve only the agents of the provider at `URL`; repeat it for more")
	refresh := fs.Duration("refresh", time.Minute, "read the grants again every `DURATION` (0: never)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	transport := c.mcpTransport
	if transport == nil {
		transport = &mcp.StdioTransport{}
	}
	b, err := c.newBridge(urls, *refresh)
	if err != nil {
		return err
	}
	return b.serve(ctx, transport)
}

// bridge is the state of one `agentcap mcp` server.
type bridge struct {
	cli     *cli
	client  *client.Client
	dir     string
	urls    []string
	refresh time.Duration
	server  *mcp.Server
	logger  *slog.Logger
	// life ends with the server; approvals that outlive the tool call
	// that started them run under it.
	life context.Context

	// reloading serializes reloads, so that a slower one never replaces
	// the tools of a later one.
	reloading sync.Mutex

	mu      sync.Mutex
	tools   map[string]string // capability tool name -> its rendering, to see changes
	set     *client.Set
	pending map[string]*pendingApproval // by provider URL
	wg      sync.WaitGroup

	// confirmStates are the calls waiting for the host's answer to a
	// confirmation question, by request state.
	confirmMu     sync.Mutex
	confirmStates map[string]*confirmState
}

// pendingApproval is a connect or capability request waiting for the
// user.
type pendingApproval struct {
	Provider  string           `json:"provider"`
	Operation string           `json:"operation"`
	Approval  *client.Approval `json:"approval,omitempty"`
	Error     string           `json:"error,omitempty"`
}

func (c *cli) newBridge(urls []string, refresh time.Duration) (*bridge, error) {
	cl, dir, err := c.newClient()
	if err != nil {
		return nil, err
	}
	b := &bridge{
		cli: c, client: cl, dir: dir, urls: urls, refresh: refresh,
		tools:   map[string]string{},
		pending: map[string]*pendingApproval{},
		// Standard output is the protocol: diagnostics go to stderr.
		logger: slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	b.server = mcp.NewServer(&mcp.Implementation{Name: "agentcap", Version: "1.0.0"}, &mcp.ServerOptions{
		Instructions: mcpInstructions,
		Logger:       b.logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	b.addLifecycleTools()
	return b, nil
}

// serve loads the connections, serves the session and keeps the tools in
// step with the grants until the client leaves or ctx ends.
func (b *bridge) serve(ctx context.Context, t mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	b.life = ctx
	defer func() {
		cancel()
		b.wg.Wait()
	}()
	if err := b.reload(ctx); err != nil {
		b.logger.Warn("agentcap mcp: loading the connected agents", "error", err.Error())
	}
	if b.refresh > 0 {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			tick := time.NewTicker(b.refresh)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					if err := b.reload(ctx); err != nil && ctx.Err() == nil {
						b.logger.Warn("agentcap mcp: refreshing the tools", "error", err.Error())
					}
				}
			}
		}()
	}
	// No result goes to a call the host canceled.
	return b.server.Run(ctx, mcpcancel.Transport(t))
}

// connections returns the stored connections to serve: one agent per
// issuer (the current agent where it is one of them, else the most
// recently saved), restricted to the --url providers when any are given.
func (b *bridge) connections() ([]client.Connection, error) {
	saved, err := loadConnections(b.dir)
	if err != nil {
		return nil, err
	}
	current, err := currentAgent(b.dir)
	if err != nil {
		return nil, err
	}
	// saved runs from the oldest to the most recent.
	byIssuer := map[string]client.Connection{}
	for _, conn := range saved {
		if !b.wanted(conn.Connection) {
			continue
		}
		key := strings.TrimRight(conn.Issuer, "/")
		if prev, ok := byIssuer[key]; !ok || prev.AgentID != current {
			byIssuer[key] = conn.Connection
		}
	}
	conns := make([]client.Connection, 0, len(byIssuer))
	for _, k := range slices.Sorted(maps.Keys(byIssuer)) {
		conns = append(conns, byIssuer[k])
	}
	return conns, nil
}

// wanted reports whether a connection is to one of the --url providers
// (all are, without --url).
func (b *bridge) wanted(conn client.Connection) bool {
	if len(b.urls) == 0 {
		return true
	}
	for _, u := range b.urls {
		u = strings.TrimRight(u, "/")
		if u == strings.TrimRight(conn.Provider, "/") || u == strings.TrimRight(conn.Issuer, "/") {
			return true
		}
	}
	return false
}

// members resumes the connected agents that are active, named by their
// providers' names (made unique).
func (b *bridge) members(ctx context.Context) ([]client.Member, error) {
	conns, err := b.connections()
	if err != nil {
		return nil, err
	}
	var members []client.Member
	used := map[string]int{}
	for _, conn := range conns {
		a, err := b.client.Resume(ctx, conn)
		if err != nil {
			b.logger.Warn("agentcap mcp: resuming an agent", "agent", conn.AgentID, "error", err.Error())
			continue
		}
		st, err := a.Status(ctx)
		if err != nil || st.Status != wire.StatusActive {
			continue
		}
		name := "provider"
		if d, err := a.Provider(ctx); err == nil && d.ProviderName != "" {
			name = d.ProviderName
		}
		name = client.DefaultNamespace(name, "")
		name = strings.TrimSuffix(name, "__")
		used[name]++
		if n := used[name]; n > 1 {
			name = fmt.Sprintf("%s_%d", name, n)
		}
		members = append(members, client.Member{Provider: name, Agent: a})
	}
	return members, nil
}

// reload rebuilds the capability tools from the agents' grants and
// updates the server's tools where they changed; the SDK then tells the
// client with notifications/tools/list_changed.
func (b *bridge) reload(ctx context.Context) error {
	b.reloading.Lock()
	defer b.reloading.Unlock()
	members, err := b.members(ctx)
	if err != nil {
		return err
	}
	set, err := client.NewSet(ctx, members, client.SetOptions{GrantedOnly: true})
	if err != nil {
		return err
	}
	for _, col := range set.Collisions() {
		b.logger.Warn("agentcap mcp: capabilities share a tool name and are left out", "name", col.Name, "sources", strings.Join(col.Sources, ", "))
	}
	entries := set.Entries()
	tools := set.MCPTools()
	next := make(map[string]string, len(tools))
	b.mu.Lock()
	defer b.mu.Unlock()
	b.set = set
	var removed []string
	for i, t := range tools {
		rendered, _ := json.Marshal(t)
		next[t.Name] = string(rendered)
		if b.tools[t.Name] == string(rendered) {
			continue
		}
		tool := &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema}
		if len(t.Annotations) > 0 {
			var a mcp.ToolAnnotations
			if json.Unmarshal(t.Annotations, &a) == nil {
				tool.Annotations = &a
			}
		}
		if t.NeedsConfirmation {
			tool.Meta = mcp.Meta{wire.MCPMetaRequiresConfirmation: true}
		}
		if t.OutputSchema != nil {
			tool.OutputSchema = t.OutputSchema
		}
		b.server.AddTool(tool, b.callCapability(entries[i]))
	}
	for name := range b.tools {
		if _, ok := next[name]; !ok {
			removed = append(removed, name)
		}
	}
	slices.Sort(removed)
	if len(removed) > 0 {
		b.server.RemoveTools(removed...)
	}
	b.tools = next
	return nil
}

// callCapability runs a capability tool: the agent signs a fresh agent
// JWT for the call. Every failure is a tool result with the provider's
// code and message, never a protocol error.
func (b *bridge) callCapability(e client.SetEntry) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b.mu.Lock()
		set := b.set
		b.mu.Unlock()
		var args any
		if len(req.Params.Arguments) > 0 {
			args = req.Params.Arguments
		}
		var res *client.Result
		var err error
		if req.Params.RequestState != "" || len(req.Params.InputResponses) > 0 {
			res, err = b.resumeConfirmed(ctx, req, set, e, args)
		} else {
			res, err = set.Call(ctx, e.Name, args)
		}
		if err != nil {
			var ask *mcp.CallToolResult
			if ask, err = b.askToConfirm(req, e, args, err); ask != nil {
				return ask, nil
			}
			var ce *client.Error
			if errors.As(err, &ce) && (ce.Code == wire.CodeCapabilityNotGranted || strings.HasPrefix(string(ce.Code), "agent_")) {
				// The grants changed under the agent: bring the tools in step.
				b.wg.Add(1)
				go func() {
					defer b.wg.Done()
					_ = b.reload(b.life)
				}()
			}
			return errorResult(err), nil
		}
		data := res.Data
		if res.Stream != nil {
			return errorResult(errors.New("the capability answered with an event stream, which this server does not relay")), nil
		}
		out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}
		if s := client.MCPStructured(e.Capability, data); s != nil {
			out.StructuredContent = s
		}
		return out, nil
	}
}

// errorResult renders a failure as an isError tool result whose text is
// the error envelope {"error": code, "message": ...}.
func errorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: envelope(err)}}, IsError: true}
}

// envelope renders err as the JSON error envelope: a provider's error
// keeps its code, status, message, violations and every other member of
// its envelope but a confirmation token.
func envelope(err error) string {
	env := map[string]any{"error": "client_error", "message": err.Error()}
	var ce *client.Error
	if errors.As(err, &ce) {
		env = map[string]any{"error": ce.Code, "message": ce.Message}
		if ce.Status != 0 {
			env["status"] = ce.Status
		}
		if len(ce.Violations) > 0 {
			env["violations"] = ce.Violations
		}
		if err.Error() != ce.Error() {
			env["detail"] = err.Error()
		}
		extra := extraMembers(ce)
		// A confirmation token stays in the bridge: the user's answer
		// confirms a call, never the model.
		delete(extra, "confirmation")
		addMembers(env, extra)
	}
	var cr *client.ConfirmationRequired
	if errors.As(err, &cr) && cr.Preview != nil {
		// The envelope's preview, as the client read it.
		env["preview"] = cr.Preview
	}
	var de declinedError
	if errors.As(err, &de) {
		env = map[string]any{"error": wire.CodeConfirmationDeclined, "message": de.Error(), "action": de.action}
	}
	var cp *client.ConfirmationPending
	if errors.As(err, &cp) {
		env["error"] = "confirmation_pending"
		env["approval"] = cp.Approval
		env["message"] = pendingMessage(cp)
	}
	raw, _ := json.Marshal(env)
	return string(raw)
}

// envelopeError is an error whose text is its JSON envelope: the SDK
// makes the error of a typed tool an isError result with that text.
type envelopeError struct{ err error }

func (e envelopeError) Error() string { return envelope(e.err) }
func (e envelopeError) Unwrap() error { return e.err }

// Lifecycle tool inputs and outputs.
type (
	discoverIn struct {
		URL string `json:"url" jsonschema:"the provider's URL: a site, a base URL or its discovery document"`
	}
	discoverOut struct {
		ProviderName    string   `json:"provider_name"`
		Description     string   `json:"description,omitempty"`
		Issuer          string   `json:"issuer"`
		DefaultLocation string   `json:"default_location,omitempty"`
		Modes           []string `json:"modes"`
		ApprovalMethods []string `json:"approval_methods"`
		Connected       bool     `json:"connected"`
	}
	listIn struct {
		URL   string `json:"url,omitempty" jsonschema:"a provider to list; empty lists every connected provider"`
		Query string `json:"query,omitempty" jsonschema:"keep capabilities whose name or description contains this"`
	}
	listedCapability struct {
		Provider    string `json:"provider"`
		Name        string `json:"name"`
		Tool        string `json:"tool,omitempty"`
		Description string `json:"description"`
		GrantStatus string `json:"grant_status,omitempty"`
	}
	listOut struct {
		Capabilities []listedCapability `json:"capabilities"`
	}
	connectIn struct {
		URL          string   `json:"url" jsonschema:"the provider's URL"`
		Capabilities []string `json:"capabilities" jsonschema:"names of the capabilities to ask for"`
		Mode         string   `json:"mode,omitempty" jsonschema:"delegated (the default: the agent acts for the user) or autonomous"`
		Reason       string   `json:"reason,omitempty" jsonschema:"why the agent needs them, shown to the user"`
	}
	requestIn struct {
		URL          string   `json:"url" jsonschema:"the provider of the connected agent"`
		Capabilities []string `json:"capabilities" jsonschema:"names of the further capabilities to ask for"`
		Reason       string   `json:"reason,omitempty" jsonschema:"why the agent needs them, shown to the user"`
	}
	approvalOut struct {
		Status   string           `json:"status" jsonschema:"active when access is granted, pending while the user decides"`
		AgentID  string           `json:"agent_id,omitempty"`
		Approval *client.Approval `json:"approval,omitempty"`
		Message  string           `json:"message"`
	}
	statusIn    struct{}
	agentStatus struct {
		Provider string        `json:"provider"`
		Issuer   string        `json:"issuer"`
		AgentID  string        `json:"agent_id"`
		Status   string        `json:"status"`
		Grants   []statusGrant `json:"grants"`
		Error    string        `json:"error,omitempty"`
	}
	// statusGrant is a grant as agentcap_status shows it: the schemas a
	// provider may add to a grant are left to agentcap_list_capabilities.
	statusGrant struct {
		Capability  string         `json:"capability"`
		Status      string         `json:"status"`
		Constraints map[string]any `json:"constraints,omitempty"`
		ExpiresAt   *time.Time     `json:"expires_at,omitempty"`
	}
	statusOut struct {
		Agents  []agentStatus     `json:"agents"`
		Pending []pendingApproval `json:"pending"`
		Tools   []string          `json:"tools"`
	}
	disconnectIn struct {
		URL string `json:"url" jsonschema:"the provider whose agent to revoke and forget"`
	}
	disconnectOut struct {
		AgentID string `json:"agent_id"`
		Status  string `json:"status"`
	}
)

func (b *bridge) addLifecycleTools() {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(b.server, &mcp.Tool{Name: "agentcap_discover", Title: "Discover a provider", Annotations: readOnly,
		Description: "Read an Agent Auth provider's discovery document: its name, issuer and approval methods, and whether an agent is connected to it."}, b.discover)
	mcp.AddTool(b.server, &mcp.Tool{Name: "agentcap_list_capabilities", Title: "List capabilities", Annotations: readOnly,
		Description: "List the capabilities of the connected providers (or of one), with whether the agent holds each, and the tool name of those it holds."}, b.listCapabilities)
	mcp.AddTool(b.server, &mcp.Tool{Name: "agentcap_connect", Title: "Connect to a provider",
		Description: "Register a new agent at a provider, asking for capabilities. When the user must approve, the result has the approval URL and code to show the user; the provider's tools appear once approved."}, b.connect)
	mcp.AddTool(b.server, &mcp.Tool{Name: "agentcap_request_capabilities", Title: "Request more capabilities",
		Description: "Ask a connected provider for further capabilities. When the user must approve, the result has the approval URL and code to show the user."}, b.requestCapabilities)
	mcp.AddTool(b.server, &mcp.Tool{Name: "agentcap_status", Title: "Connection status", Annotations: readOnly,
		Description: "Show the connected agents with their status and grants, the approvals waiting for the user, and the capability tools."}, b.status)
	mcp.AddTool(b.server, &mcp.Tool{Name: "agentcap_disconnect", Title: "Disconnect from a provider",
		Description: "Revoke the agent connected to a provider and forget it; its tools go away."}, b.disconnect)
}

// lifecycle ends a lifecycle tool: its error becomes an error result
// whose text is the envelope with a code and message.
func lifecycle[Out any](out Out, err error) (*mcp.CallToolResult, Out, error) {
	if err != nil {
		var zero Out
		return nil, zero, envelopeError{err}
	}
	return nil, out, nil
}

func (b *bridge) discover(ctx context.Context, _ *mcp.CallToolRequest, in discoverIn) (*mcp.CallToolResult, discoverOut, error) {
	d, err := b.client.Discover(ctx, in.URL)
	if err != nil {
		return lifecycle(discoverOut{}, err)
	}
	conn, _ := b.connectionAt(in.URL)
	return lifecycle(discoverOut{ProviderName: d.ProviderName, Description: d.Description, Issuer: d.Issuer,
		DefaultLocation: d.DefaultLocationURL(), Modes: d.Modes, ApprovalMethods: d.ApprovalMethods, Connected: conn != nil}, nil)
}

// connectionAt returns the served connection to the provider at u.
func (b *bridge) connectionAt(u string) (*client.Connection, error) {
	conns, err := b.connections()
	if err != nil {
		return nil, err
	}
	u = strings.TrimRight(u, "/")
	for _, conn := range conns {
		if u == strings.TrimRight(conn.Provider, "/") || u == strings.TrimRight(conn.Issuer, "/") {
			return &conn, nil
		}
	}
	return nil, fmt.Errorf("no agent is connected to %s: call agentcap_connect first", u)
}

func (b *bridge) agentAt(ctx context.Context, u string) (*client.Agent, error) {
	conn, err := b.connectionAt(u)
	if err != nil {
		return nil, err
	}
	return b.client.Resume(ctx, *conn)
}

func (b *bridge) listCapabilities(ctx context.Context, _ *mcp.CallToolRequest, in listIn) (*mcp.CallToolResult, listOut, error) {
	out := listOut{Capabilities: []listedCapability{}}
	members, err := b.members(ctx)
	if err != nil {
		return lifecycle(out, err)
	}
	for _, m := range members {
		if in.URL != "" && !b.sameProvider(m.Agent.Connection(), in.URL) {
			continue
		}
		caps, err := m.Agent.AllCapabilities(ctx, in.Query)
		if err != nil {
			return lifecycle(out, err)
		}
		for _, c := range caps {
			lc := listedCapability{Provider: m.Provider, Name: c.Name, Description: c.Description, GrantStatus: c.GrantStatus}
			if c.GrantStatus == wire.GrantStatusGranted {
				lc.Tool = client.DefaultNamespace(m.Provider, c.Name)
			}
			out.Capabilities = append(out.Capabilities, lc)
		}
	}
	return lifecycle(out, nil)
}

func (b *bridge) sameProvider(conn client.Connection, u string) bool {
	u = strings.TrimRight(u, "/")
	return u == strings.TrimRight(conn.Provider, "/") || u == strings.TrimRight(conn.Issuer, "/")
}

// startApproval runs op, which waits for the user's approval, in the
// background; it returns as soon as op reports the approval to show, or
// when op ends without needing one.
func (b *bridge) startApproval(ctx context.Context, provider, operation string,
	op func(ctx context.Context, onApproval func(client.Approval)) (string, error)) (approvalOut, error) {
	shown := make(chan client.Approval, 1)
	type outcome struct {
		agentID string
		err     error
	}
	ended := make(chan outcome, 1)
	b.mu.Lock()
	if p, ok := b.pending[provider]; ok && p.Error == "" {
		b.mu.Unlock()
		return approvalOut{}, fmt.Errorf("an approval for %s is already waiting for the user: %s", provider, p.Operation)
	}
	b.pending[provider] = &pendingApproval{Provider: provider, Operation: operation}
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		// The approval outlives the tool call that started it; the
		// server's life bounds it, and the approval's own lifetime.
		id, err := op(b.life, func(ap client.Approval) {
			b.mu.Lock()
			if p := b.pending[provider]; p != nil {
				p.Approval = &ap
			}
			b.mu.Unlock()
			shown <- ap
		})
		b.mu.Lock()
		if err != nil {
			b.pending[provider].Error = err.Error()
		} else {
			delete(b.pending, provider)
		}
		b.mu.Unlock()
		if err == nil {
			if rerr := b.reload(b.life); rerr != nil {
				b.logger.Warn("agentcap mcp: refreshing the tools", "error", rerr.Error())
			}
		}
		ended <- outcome{id, err}
	}()
	select {
	case ap := <-shown:
		return approvalOut{Status: wire.StatusPending, Approval: &ap,
			Message: approvalMessage(ap)}, nil
	case o := <-ended:
		if o.err != nil {
			return approvalOut{}, o.err
		}
		return approvalOut{Status: wire.StatusActive, AgentID: o.agentID,
			Message: "Access granted; the provider's tools are listed now."}, nil
	case <-ctx.Done():
		return approvalOut{}, ctx.Err()
	}
}

func approvalMessage(ap client.Approval) string {
	u := ap.VerificationURIComplete
	if u == "" {
		u = ap.VerificationURI
	}
	msg := "Ask the user to open " + u
	if ap.UserCode != "" {
		msg += " and enter the code " + ap.UserCode
	}
	return msg + ". The tools appear once the user approves; agentcap_status shows the approval while it waits."
}

func (b *bridge) connect(ctx context.Context, _ *mcp.CallToolRequest, in connectIn) (*mcp.CallToolResult, approvalOut, error) {
	if in.Mode == "" {
		in.Mode = wire.ModeDelegated
	}
	out, err := b.startApproval(ctx, strings.TrimRight(in.URL, "/"), "connect", func(ctx context.Context, onApproval func(client.Approval)) (string, error) {
		a, _, err := b.client.Connect(ctx, in.URL, client.ConnectOptions{
			Name: "agentcap mcp", Mode: in.Mode, Capabilities: client.Capabilities(in.Capabilities...),
			Reason: in.Reason, OnApproval: onApproval,
		})
		if a != nil && a.ID() != "" && err == nil {
			if serr := saveConnection(b.dir, a.Connection()); serr != nil {
				return "", serr
			}
			return a.ID(), nil
		}
		return "", err
	})
	return lifecycle(out, err)
}

func (b *bridge) requestCapabilities(ctx context.Context, _ *mcp.CallToolRequest, in requestIn) (*mcp.CallToolResult, approvalOut, error) {
	a, err := b.agentAt(ctx, in.URL)
	if err != nil {
		return lifecycle(approvalOut{}, err)
	}
	out, err := b.startApproval(ctx, strings.TrimRight(in.URL, "/"), "request capabilities", func(ctx context.Context, onApproval func(client.Approval)) (string, error) {
		_, err := a.RequestCapabilities(ctx, client.RequestOptions{
			Capabilities: client.Capabilities(in.Capabilities...), Reason: in.Reason, OnApproval: onApproval,
		})
		return a.ID(), err
	})
	return lifecycle(out, err)
}

func (b *bridge) status(ctx context.Context, _ *mcp.CallToolRequest, _ statusIn) (*mcp.CallToolResult, statusOut, error) {
	out := statusOut{Agents: []agentStatus{}, Pending: []pendingApproval{}, Tools: []string{}}
	conns, err := b.connections()
	if err != nil {
		return lifecycle(out, err)
	}
	for _, conn := range conns {
		as := agentStatus{Provider: conn.Provider, Issuer: conn.Issuer, AgentID: conn.AgentID, Grants: []statusGrant{}}
		a, err := b.client.Resume(ctx, conn)
		if err == nil {
			var st *client.AgentStatus
			if st, err = a.Status(ctx); err == nil {
				as.Status = st.Status
				for _, g := range st.Grants {
					sg := statusGrant{Capability: g.Capability, Status: g.Status, ExpiresAt: g.ExpiresAt}
					for k, v := range g.Constraints {
						var c any
						if json.Unmarshal(v, &c) == nil {
							if sg.Constraints == nil {
								sg.Constraints = map[string]any{}
							}
							sg.Constraints[k] = c
						}
					}
					as.Grants = append(as.Grants, sg)
				}
			}
		}
		if err != nil {
			as.Error = err.Error()
		}
		out.Agents = append(out.Agents, as)
	}
	b.mu.Lock()
	for _, p := range b.pending {
		out.Pending = append(out.Pending, *p)
	}
	for name := range b.tools {
		out.Tools = append(out.Tools, name)
	}
	b.mu.Unlock()
	slices.SortFunc(out.Pending, func(x, y pendingApproval) int { return strings.Compare(x.Provider, y.Provider) })
	slices.Sort(out.Tools)
	return lifecycle(out, nil)
}

func (b *bridge) disconnect(ctx context.Context, _ *mcp.CallToolRequest, in disconnectIn) (*mcp.CallToolResult, disconnectOut, error) {
	a, err := b.agentAt(ctx, in.URL)
	if err != nil {
		return lifecycle(disconnectOut{}, err)
	}
	if err := a.Revoke(ctx); err != nil {
		return lifecycle(disconnectOut{}, err)
	}
	id := a.ID()
	if err := os.Remove(filepath.Join(b.dir, "connections", connectionFile(id))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return lifecycle(disconnectOut{}, err)
	}
	if raw, err := os.ReadFile(filepath.Join(b.dir, "current")); err == nil && strings.TrimSpace(string(raw)) == id {
		_ = os.Remove(filepath.Join(b.dir, "current"))
	}
	if err := b.reload(ctx); err != nil {
		b.logger.Warn("agentcap mcp: refreshing the tools", "error", err.Error())
	}
	return lifecycle(disconnectOut{AgentID: id, Status: wire.StatusRevoked}, nil)
}
