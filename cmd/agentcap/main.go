// Command agentcap is an Agent Auth client for the command line: it
// discovers providers, connects agents (waiting for the user's approval),
// lists, describes and executes capabilities, prints agent JWTs for
// debugging and revokes agents.
//
// State (host and agent keys, connections) lives under the user's
// configuration directory, in agentcap/, or in the directory named by
// --state or AGENTCAP_STATE. Run "agentcap help" for the commands and
// "agentcap COMMAND -h" for the arguments and flags of one.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	wire "github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/internal/constraint"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	c := &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, terminal: stdinIsTerminal}
	code := c.run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// stdinIsTerminal reports whether standard input is a terminal (a
// character device), where a person can answer a question.
func stdinIsTerminal() bool {
	fi, err := os.Stdin.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// cli is one invocation: its flags, output streams and state.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// terminal reports whether stdin is a terminal a person answers on.
	terminal func() bool

	json             bool
	agentID          string
	stateDir         string
	insecureLoopback bool
	timeout          timeoutFlag

	// clientConfig lets tests adjust the client (polling waits).
	clientConfig func(*client.Config)
	// mcpTransport replaces standard input and output for the mcp
	// command, in tests.
	mcpTransport mcp.Transport
}

// run executes one command line and returns the exit status: 0 on
// success (and for help), 1 on failure, 2 on a usage error.
func (c *cli) run(ctx context.Context, args []string) int {
	global := flag.NewFlagSet("agentcap", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	c.globalFlags(global)
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			overview(c.stdout)
			return 0
		}
		fmt.Fprintf(c.stderr, "agentcap: %v\n%s", flagError(err), shortUsage)
		return 2
	}
	args = global.Args()
	if len(args) == 0 {
		fmt.Fprintf(c.stderr, "agentcap: no command given\n%s", shortUsage)
		return 2
	}
	name, rest := args[0], args[1:]
	if name == "help" {
		switch {
		case len(rest) == 0:
			overview(c.stdout)
			return 0
		case len(rest) > 1:
			fmt.Fprintf(c.stderr, "agentcap help: unexpected argument %q\nUsage: agentcap help [COMMAND]\n", rest[1])
			return 2
		}
		// The help of a command is what its -h prints.
		name, rest = rest[0], []string{"-h"}
	}
	cmd, ok := lookupCommand(name)
	if !ok {
		fmt.Fprintf(c.stderr, "agentcap: unknown command %q\n%s", name, shortUsage)
		return 2
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.globalFlags(fs)
	c.defaultTimeout(cmd)
	err := cmd.run(c, ctx, fs, rest)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		commandHelp(c.stdout, cmd, fs)
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(c.stderr, "agentcap %s: %v\nUsage: agentcap %s\nRun 'agentcap %s -h' for its flags and what it does.\n", name, err, cmd.usage, name)
		return 2
	default:
		c.printError(err)
		return 1
	}
}

// shortUsage ends the message of a mistake made before the command.
const shortUsage = `Usage: agentcap [global flags] <command> [arguments] [flags]
Run 'agentcap help' for the commands.
`

// defaultTimeout sets the command's default --timeout, which the
// command line may still change after the command's name.
func (c *cli) defaultTimeout(cmd command) {
	if !c.timeout.set {
		c.timeout.d = time.Minute
		if cmd.waits {
			c.timeout.d = 10 * time.Minute
		}
	}
}

// state returns the state directory.
func (c *cli) state() (string, error) {
	if c.stateDir != "" {
		return c.stateDir, nil
	}
	if d := c.getenv("AGENTCAP_STATE"); d != "" {
		return d, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory (set --state or AGENTCAP_STATE): %w", err)
	}
	return filepath.Join(dir, "agentcap"), nil
}

func (c *cli) newClient() (*client.Client, string, error) {
	dir, err := c.state()
	if err != nil {
		return nil, "", err
	}
	cfg := client.Config{
		AllowInsecureLoopback: c.insecureLoopback,
		Keys:                  client.FileKeyStore{Dir: filepath.Join(dir, "keys")},
		UserAgent:             "agentcap-cli",
	}
	if c.clientConfig != nil {
		c.clientConfig(&cfg)
	}
	cl, err := client.New(cfg)
	return cl, dir, err
}

func (c *cli) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout.d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.timeout.d)
}

func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (c *cli) discover(ctx context.Context, fs *flag.FlagSet, args []string) error {
	pos, err := parse(fs, args, "URL")
	if err != nil {
		return err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	cl, _, err := c.newClient()
	if err != nil {
		return err
	}
	d, err := cl.Discover(ctx, pos[0])
	if err != nil {
		return err
	}
	endpoints := map[string]string{}
	for _, name := range []string{"register", "capabilities", "describe_capability",
		"execute", "request_capability", "status", "revoke", "introspect"} {
		endpoints[name], _ = d.EndpointURL(name)
	}
	if c.json {
		return c.printJSON(map[string]any{
			"url": d.URL, "version": d.Version, "provider_name": d.ProviderName, "description": d.Description,
			"issuer": d.Issuer, "default_location": d.DefaultLocationURL(), "algorithms": d.Algorithms,
			"modes": d.Modes, "approval_methods": d.ApprovalMethods, "endpoints": endpoints,
		})
	}
	w := newTable(c.stdout)
	fmt.Fprintf(w, "provider\t%s\n", d.ProviderName)
	if d.Description != "" {
		fmt.Fprintf(w, "description\t%s\n", d.Description)
	}
	fmt.Fprintf(w, "version\t%s\n", d.Version)
	fmt.Fprintf(w, "issuer\t%s\n", d.Issuer)
	fmt.Fprintf(w, "document\t%s\n", d.URL)
	fmt.Fprintf(w, "default location\t%s\n", d.DefaultLocationURL())
	fmt.Fprintf(w, "modes\t%s\n", strings.Join(d.Modes, ", "))
	fmt.Fprintf(w, "approval methods\t%s\n", strings.Join(d.ApprovalMethods, ", "))
	names := make([]string, 0, len(endpoints))
	for n := range endpoints {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "endpoint %s\t%s\n", n, endpoints[n])
	}
	return w.Flush()
}

// capabilityFlags collects repeated --capability NAME[:JSON] values.
type capabilityFlags []client.CapabilityRequest

func (f *capabilityFlags) String() string { return "" }

func (f *capabilityFlags) Set(v string) error {
	r, err := parseCapability(v)
	if err != nil {
		return err
	}
	*f = append(*f, r)
	return nil
}

// parseCapability reads NAME or NAME:{"field": constraint, ...}.
func parseCapability(v string) (client.CapabilityRequest, error) {
	name, constraints, found := strings.Cut(v, ":")
	name = strings.TrimSpace(name)
	if name == "" {
		return client.CapabilityRequest{}, fmt.Errorf("capability %q has no name", v)
	}
	r := client.CapabilityRequest{Name: name}
	if !found {
		return r, nil
	}
	if err := json.Unmarshal([]byte(constraints), &r.Constraints); err != nil || r.Constraints == nil {
		return client.CapabilityRequest{}, fmt.Errorf("constraints of %s must be a JSON object: %s", name, constraints)
	}
	if err := constraint.Validate(r.Constraints); err != nil {
		return client.CapabilityRequest{}, fmt.Errorf("constraints of %s: %w", name, err)
	}
	return r, nil
}

func (c *cli) connect(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var caps capabilityFlags
	var o client.ConnectOptions
	fs.Var(&caps, "capability", "ask for a capability, `NAME[:CONSTRAINTS]` (CONSTRAINTS: a JSON object);\nrepeat the flag for more")
	fs.StringVar(&o.Mode, "mode", wire.ModeDelegated, "`MODE` of the agent: delegated (acts for the user who approves it) or\nautonomous")
	fs.StringVar(&o.Name, "name", "agentcap CLI", "the agent's display `NAME`, shown to the user who approves it")
	approvalFlags(fs, &o.Reason, &o.PreferredMethod, &o.LoginHint, &o.BindingMessage)
	pos, err := parse(fs, args, "URL")
	if err != nil {
		return err
	}
	if o.Mode != wire.ModeDelegated && o.Mode != wire.ModeAutonomous {
		return usageError{fmt.Errorf("--mode must be delegated or autonomous, not %q", o.Mode)}
	}
	o.Capabilities = caps
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	cl, dir, err := c.newClient()
	if err != nil {
		return err
	}
	before, err := currentConnection(dir)
	if err != nil {
		return err
	}
	o.OnApproval = c.showApproval("Approval")
	polls := 0
	o.OnPoll = func(st client.AgentStatus) {
		polls++
		if !c.json {
			fmt.Fprint(c.stderr, ".")
		}
	}
	a, st, err := cl.Connect(ctx, pos[0], o)
	if polls > 0 && !c.json {
		fmt.Fprintln(c.stderr)
	}
	if a != nil && a.ID() != "" && (err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		// A pending agent is kept, so that 'status' can follow it.
		if serr := saveConnection(dir, a.Connection()); serr != nil {
			return serr
		}
	}
	if err != nil {
		return err
	}
	if c.json {
		out := map[string]any{"connection": a.Connection(), "status": st}
		if before != nil {
			out["previous_current"] = before.AgentID
		}
		return c.printJSON(out)
	}
	fmt.Fprintf(c.stdout, "Connected agent %s (%s) to %s.\n", a.ID(), st.Mode, a.Connection().Issuer)
	if err := c.printGrants(st.Grants); err != nil {
		return err
	}
	if before != nil {
		// The commands act as another agent from now on: say so, and
		// how to go back.
		fmt.Fprintf(c.stdout, "It is now the current agent, instead of %s: 'agentcap use %s' switches back,\n'agentcap connections' lists the saved agents.\n",
			describeAgent(before.Connection), before.AgentID)
	}
	return nil
}

// showApproval returns the callback that shows an approval the user (or
// a person confirming a call) must give: what is "Approval" or
// "Confirmation".
func (c *cli) showApproval(what string) func(client.Approval) {
	return func(ap client.Approval) {
		if c.json {
			_ = json.NewEncoder(c.stderr).Encode(map[string]any{strings.ToLower(what): ap})
			return
		}
		fmt.Fprintf(c.stderr, "%s needed (%s).\n", what, ap.Method)
		if ap.VerificationURIComplete != "" {
			fmt.Fprintf(c.stderr, "  Open %s\n", ap.VerificationURIComplete)
		} else if ap.VerificationURI != "" {
			fmt.Fprintf(c.stderr, "  Open %s\n", ap.VerificationURI)
		}
		if ap.UserCode != "" {
			fmt.Fprintf(c.stderr, "  and enter the code %s\n", ap.UserCode)
		}
		if ap.BindingMessage != "" {
			fmt.Fprintf(c.stderr, "  Message shown to the approver: %s\n", ap.BindingMessage)
		}
		if ap.ExpiresIn > 0 {
			fmt.Fprintf(c.stderr, "  The request expires in %s.\n", time.Duration(ap.ExpiresIn)*time.Second)
		}
		fmt.Fprintf(c.stderr, "Waiting for %s", strings.ToLower(what))
	}
}

func (c *cli) printGrants(gs []client.Grant) error {
	if len(gs) == 0 {
		fmt.Fprintln(c.stdout, "No grants.")
		return nil
	}
	w := newTable(c.stdout)
	fmt.Fprintln(w, "CAPABILITY\tGRANT\tCONSTRAINTS")
	for _, g := range gs {
		cons := ""
		if len(g.Constraints) > 0 {
			b, _ := json.Marshal(g.Constraints)
			cons = string(b)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", g.Capability, g.Status, cons)
	}
	return w.Flush()
}

func (c *cli) status(ctx context.Context, fs *flag.FlagSet, args []string) error {
	if _, err := parse(fs, args); err != nil {
		return err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	a, _, err := c.agent(ctx)
	if err != nil {
		return err
	}
	st, err := a.Status(ctx)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(st)
	}
	fmt.Fprintf(c.stdout, "agent %s: %s (%s) at %s\n", st.AgentID, st.Status, st.Mode, a.Connection().Issuer)
	return c.printGrants(st.Grants)
}

func (c *cli) capabilities(ctx context.Context, fs *flag.FlagSet, args []string) error {
	query := fs.String("query", "", "list only the capabilities whose name or description contains `TEXT`")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	a, _, err := c.agent(ctx)
	if err != nil {
		return err
	}
	caps, err := a.AllCapabilities(ctx, *query)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(caps)
	}
	w := newTable(c.stdout)
	fmt.Fprintln(w, "NAME\tGRANT\tDESCRIPTION")
	for _, cp := range caps {
		fmt.Fprintf(w, "%s\t%s\t%s\n", cp.Name, cp.GrantStatus, cp.Description)
	}
	return w.Flush()
}

func (c *cli) describe(ctx context.Context, fs *flag.FlagSet, args []string) error {
	pos, err := parse(fs, args, "NAME")
	if err != nil {
		return err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	a, _, err := c.agent(ctx)
	if err != nil {
		return err
	}
	cp, err := a.Describe(ctx, pos[0])
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(cp)
	}
	fmt.Fprintf(c.stdout, "%s: %s\n", cp.Name, cp.Description)
	if cp.GrantStatus != "" {
		fmt.Fprintf(c.stdout, "grant: %s\n", cp.GrantStatus)
	}
	if cp.Location != "" {
		fmt.Fprintf(c.stdout, "location: %s\n", cp.Location)
	}
	if cp.Risk != "" {
		fmt.Fprintf(c.stdout, "risk: %s\n", cp.Risk)
	}
	if cp.SupportsPreview {
		fmt.Fprintln(c.stdout, "preview: yes (agentcap preview)")
	}
	if cp.RequiresConfirmation {
		fmt.Fprintln(c.stdout, "confirmation: every call must be confirmed")
	}
	for _, s := range []struct {
		name string
		v    json.RawMessage
	}{{"input", cp.Input}, {"output", cp.Output}, {"preview", cp.PreviewSchema}} {
		if len(s.v) == 0 {
			continue
		}
		var pretty any
		if json.Unmarshal(s.v, &pretty) == nil {
			b, _ := json.MarshalIndent(pretty, "", "  ")
			fmt.Fprintf(c.stdout, "%s schema:\n%s\n", s.name, b)
		}
	}
	return nil
}

// argsFlag defines --args.
func argsFlag(fs *flag.FlagSet) *string {
	return fs.String("args", "", "the capability's arguments, a `JSON` object")
}

// approvalFlags defines the hints for the user's approval of connect
// and request.
func approvalFlags(fs *flag.FlagSet, reason, method, loginHint, message *string) {
	fs.StringVar(reason, "reason", "", "`TEXT` telling the user why the agent asks")
	fs.StringVar(method, "preferred-method", "", "the approval `METHOD` to prefer (device_authorization, ciba)")
	fs.StringVar(loginHint, "login-hint", "", "`HINT` naming the user who should approve (for ciba)")
	fs.StringVar(message, "binding-message", "", "`TEXT` shown on both devices during the approval")
}

// parseArgs reads --args: a JSON object, or nothing.
func parseArgs(argsJSON string) (any, error) {
	if argsJSON == "" {
		return nil, nil
	}
	if !json.Valid([]byte(argsJSON)) {
		return nil, usageError{errors.New("--args must be a JSON object")}
	}
	return json.RawMessage(argsJSON), nil
}

// printData prints a JSON value: as it is with --json, indented
// otherwise.
func (c *cli) printData(w io.Writer, data json.RawMessage) error {
	if !c.json {
		// Indented as the server wrote it: its members keep their order.
		var pretty bytes.Buffer
		if json.Indent(&pretty, data, "", "  ") == nil {
			data = pretty.Bytes()
		}
	}
	_, err := fmt.Fprintf(w, "%s\n", data)
	return err
}

func (c *cli) preview(ctx context.Context, fs *flag.FlagSet, args []string) error {
	argsJSON := argsFlag(fs)
	// --timeout may come after the command: the command's time starts
	// once its flags are read.
	name, arguments, err := readCall(fs, args, argsJSON)
	if err != nil {
		return err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	a, _, err := c.agent(ctx)
	if err != nil {
		return err
	}
	res, err := a.Preview(ctx, name, arguments)
	if err != nil {
		return c.grantHint(ctx, a, name, err)
	}
	// Standard output is one JSON document, for jq and scripts; what it
	// means goes to standard error.
	if err := c.printJSON(res); err != nil {
		return err
	}
	if c.json {
		return nil
	}
	if cf := res.Confirmation; cf != nil {
		fmt.Fprintf(c.stderr, "This call needs a confirmation. The token%s confirms exactly this call, once:\n"+
			"run 'agentcap execute %s' with the same --args and --confirmation-token TOKEN,\n"+
			"or without a token to be shown the preview and asked.\n", expiry(cf.ExpiresAt), name)
	}
	if res.RequiresHumanConfirmation {
		fmt.Fprintln(c.stderr, "A person must confirm this call: 'agentcap execute' asks them and waits for the decision.")
	}
	return nil
}

// readCall reads the capability name and --args of preview and
// execute.
func readCall(fs *flag.FlagSet, args []string, argsJSON *string) (string, any, error) {
	pos, err := parse(fs, args, "NAME")
	if err != nil {
		return "", nil, err
	}
	arguments, err := parseArgs(*argsJSON)
	if err != nil {
		return "", nil, err
	}
	return pos[0], arguments, nil
}

// expiry describes when a token expires, or nothing when it is unknown.
func expiry(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return " (valid until " + t.Local().Format(time.DateTime) + ")"
}

func (c *cli) execute(ctx context.Context, fs *flag.FlagSet, args []string) error {
	argsJSON := argsFlag(fs)
	key := fs.String("idempotency-key", "", "send `KEY` as the Idempotency-Key, so that a retried call runs once")
	token := fs.String("confirmation-token", "", "confirm the call with `TOKEN`, from 'agentcap preview' of the same call")
	yes := fs.Bool("yes", false, "confirm a call that needs a confirmation without asking")
	// --timeout may come after the command: the command's time starts
	// once its flags are read.
	name, arguments, err := readCall(fs, args, argsJSON)
	if err != nil {
		return err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	a, _, err := c.agent(ctx)
	if err != nil {
		return err
	}
	var opts []client.ExecuteOption
	if *key != "" {
		opts = append(opts, client.WithIdempotencyKey(*key))
	}
	if *token != "" {
		opts = append(opts, client.WithConfirmationToken(*token))
	}
	res, err := a.Execute(ctx, name, arguments, opts...)
	// A call may need the agent's confirmation and then a person's (or
	// the other way round): one round each at most.
	for range 2 {
		var cr *client.ConfirmationRequired
		var cp *client.ConfirmationPending
		var conf string
		switch {
		case errors.As(err, &cr):
			if err := c.confirm(ctx, cr, *yes); err != nil {
				return err
			}
			conf = cr.Confirmation.Token
		case errors.As(err, &cp):
			if conf, err = c.awaitPerson(ctx, a, cp); err != nil {
				return err
			}
		default:
			continue
		}
		res, err = a.Execute(ctx, name, arguments, append(opts, client.WithConfirmationToken(conf))...)
	}
	if err != nil {
		return c.grantHint(ctx, a, name, err)
	}
	if res.Stream == nil {
		return c.printData(c.stdout, res.Data)
	}
	for ev, err := range res.Stream.Events() {
		if err != nil {
			return err
		}
		if c.json {
			_ = json.NewEncoder(c.stdout).Encode(map[string]string{"event": ev.Type, "data": ev.Data, "id": ev.ID})
		} else {
			fmt.Fprintf(c.stdout, "%s: %s\n", ev.Type, ev.Data)
		}
	}
	return nil
}

// awaitPerson shows the preview of a call that a person must confirm and
// where they confirm it, and waits for their decision; it returns the
// token that confirms the call.
func (c *cli) awaitPerson(ctx context.Context, a *client.Agent, cp *client.ConfirmationPending) (string, error) {
	if !c.json && cp.Preview != nil {
		fmt.Fprintf(c.stderr, "%s must be confirmed by a person. Preview:\n", cp.Capability)
		_ = c.printData(c.stderr, cp.Preview)
	}
	conf, err := a.AwaitConfirmation(ctx, cp, c.showApproval("Confirmation"))
	if !c.json {
		fmt.Fprintln(c.stderr)
	}
	if err != nil {
		return "", err
	}
	return conf.Token, nil
}

// errNotConfirmed is the error of a call the person declined to confirm.
var errNotConfirmed = errors.New("not confirmed: nothing was done")

// confirm shows the preview of a call that needs a confirmation and
// decides whether to confirm it: yes (--yes) confirms, a person on a
// terminal is asked, and anything else is refused, so that a call is
// never confirmed unseen. The preview goes to stderr, leaving stdout to
// the result.
func (c *cli) confirm(ctx context.Context, cr *client.ConfirmationRequired, yes bool) error {
	ask := !yes && c.stdin != nil && c.terminal != nil && c.terminal()
	if c.json && !yes && !ask {
		// The error printed carries the preview.
		return fmt.Errorf("%s needs a confirmation and standard input is not a terminal to ask on: run it again with --yes to confirm this call: %w", cr.Capability, cr)
	}
	if c.json {
		_ = json.NewEncoder(c.stderr).Encode(map[string]any{"confirmation_required": map[string]any{
			"capability": cr.Capability, "preview": cr.Preview, "expires_at": cr.Confirmation.ExpiresAt}})
	} else {
		fmt.Fprintf(c.stderr, "%s needs a confirmation.\n", cr.Capability)
		if cr.Preview != nil {
			fmt.Fprintln(c.stderr, "Preview:")
			_ = c.printData(c.stderr, cr.Preview)
		}
	}
	switch {
	case yes:
		if !c.json {
			fmt.Fprintln(c.stderr, "Confirmed (--yes).")
		}
		return nil
	case !ask:
		return fmt.Errorf("%s needs a confirmation and standard input is not a terminal to ask on: run it again with --yes to confirm this call", cr.Capability)
	}
	fmt.Fprintf(c.stderr, "Confirm this call of %s? [y/N] ", cr.Capability)
	answer := make(chan string, 1)
	go func() {
		// The read cannot be interrupted; an interrupted command exits
		// while it waits.
		line, _ := bufio.NewReader(c.stdin).ReadString('\n')
		answer <- line
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(c.stderr)
		return ctx.Err()
	case line := <-answer:
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return nil
		}
		return errNotConfirmed
	}
}

// stringList collects a repeated string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func (c *cli) sign(ctx context.Context, fs *flag.FlagSet, args []string) error {
	aud := fs.String("aud", "", "the token's audience `URL` (default: the provider's issuer)")
	var caps stringList
	fs.Var(&caps, "capability", "limit the token to the capability `NAME`; repeat it for more")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	a, _, err := c.agent(ctx)
	if err != nil {
		return err
	}
	var names []string
	if len(caps) > 0 {
		names = caps
	}
	tok, err := a.SignJWT(*aud, names)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]any{"token": tok, "expires_in": int(client.TokenLifetime / time.Second)})
	}
	_, err = fmt.Fprintln(c.stdout, tok)
	return err
}

func (c *cli) revoke(ctx context.Context, fs *flag.FlagSet, args []string) error {
	if _, err := parse(fs, args); err != nil {
		return err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	a, dir, err := c.agent(ctx)
	if err != nil {
		return err
	}
	if err := a.Revoke(ctx); err != nil {
		return err
	}
	id := a.ID()
	if err := os.Remove(filepath.Join(dir, "connections", connectionFile(id))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if b, err := os.ReadFile(filepath.Join(dir, "current")); err == nil && strings.TrimSpace(string(b)) == id {
		_ = os.Remove(filepath.Join(dir, "current"))
	}
	if c.json {
		return c.printJSON(map[string]string{"agent_id": id, "status": wire.StatusRevoked})
	}
	fmt.Fprintf(c.stdout, "Revoked agent %s.\n", id)
	return nil
}
