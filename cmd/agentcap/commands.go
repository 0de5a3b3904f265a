package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// command is one subcommand: how it is called, what it does, and the
// method that defines its flags, parses its arguments and runs it.
type command struct {
	name string
	// usage is the usage line after "agentcap ".
	usage string
	// summary is the line of the command list.
	summary string
	// text says what the command does, in the command's help.
	text string
	// waits marks a command that may wait for a person, whose default
	// --timeout is longer.
	waits bool
	run   func(c *cli, ctx context.Context, fs *flag.FlagSet, args []string) error
}

// commands lists the subcommands in the order the overview shows them.
var commands = []command{
	{
		name:    "discover",
		usage:   "discover URL",
		summary: "show a provider's discovery document",
		text: `Fetch and check the discovery document of the Agent Auth provider at URL
(a site, a base URL, or the document's own URL), and show its issuer,
modes, approval methods and endpoints.`,
		run: (*cli).discover,
	},
	{
		name:    "connect",
		usage:   "connect URL --capability NAME[:CONSTRAINTS]... [--mode delegated|autonomous] [--name NAME] [--reason TEXT]",
		summary: "register a new agent at a provider and wait for its approval",
		text: `Register a new agent with a fresh key at the provider at URL, asking for
the named capabilities. CONSTRAINTS is a JSON object of proposed
constraints, e.g. transfer:'{"amount":{"max":100}}'. When the provider
asks for approval, the verification URL and user code are printed and the
command waits until the user decides.

The new connection becomes the current one: the commands that act as an
agent use it unless --agent names another. 'agentcap connections' lists
the saved connections, 'agentcap use' makes another one current and
'agentcap request' asks an agent for more capabilities.`,
		waits: true,
		run:   (*cli).connect,
	},
	{
		name:    "connections",
		usage:   "connections [--offline]",
		summary: "list the saved connections and which one is current",
		text: `List the saved connections: each agent's id, name, mode and provider,
and, as its provider reports them, its status and grants. The current
agent, which the commands act as unless --agent names another, is marked
with *.`,
		run: (*cli).connections,
	},
	{
		name:    "use",
		usage:   "use AGENT",
		summary: "make a saved connection the current one",
		text: `Make the saved agent AGENT, an agent id or the name of one saved agent,
the current one: the commands act as it unless --agent names another.
'agentcap connections' lists the saved agents.`,
		run: (*cli).use,
	},
	{
		name:    "request",
		usage:   "request --capability NAME[:CONSTRAINTS]... [--reason TEXT]",
		summary: "ask the current agent's provider for more capabilities",
		text: `Ask the provider to grant the current agent (or the one --agent names)
more capabilities. When the provider asks for approval, the verification
URL and user code are printed and the command waits until the user
decides, as connect does. It prints the agent's grants, and fails when a
capability asked for was not granted.`,
		waits: true,
		run:   (*cli).request,
	},
	{
		name:    "status",
		usage:   "status",
		summary: "show the current agent's status and grants",
		text:    `Ask the provider for the current agent's status and its grants.`,
		run:     (*cli).status,
	},
	{
		name:    "capabilities",
		usage:   "capabilities [--query TEXT]",
		summary: "list the provider's capabilities with their grant status",
		text: `List the capabilities of the current agent's provider, with whether the
agent holds a grant for each.`,
		run: (*cli).capabilities,
	},
	{
		name:    "describe",
		usage:   "describe NAME",
		summary: "show one capability with its schemas",
		text: `Show one capability: its description, location, risk, whether it has a
preview and needs a confirmation, and its input, output and preview
schemas.`,
		run: (*cli).describe,
	},
	{
		name:    "preview",
		usage:   "preview NAME [--args JSON]",
		summary: "show what a call would do, without doing it",
		text: `Show what executing a capability with these arguments would do, without
doing it.

Standard output is one JSON document, the provider's answer:
  {"preview": ..., "confirmation": {"token": ..., "expires_at": ...}}
"preview" is what the call would do. "confirmation" is there when the
capability needs a confirmation: its token confirms exactly this call,
once, with 'agentcap execute NAME --args JSON --confirmation-token
TOKEN' ('agentcap preview ... | jq -r .confirmation.token' reads it).
"requires_human_confirmation": true says that a person must confirm the
call, which 'agentcap execute' asks them for. What the answer means is
said on standard error (nothing with --json).`,
		run: (*cli).preview,
	},
	{
		name:    "execute",
		usage:   "execute NAME [--args JSON] [--yes] [--confirmation-token TOKEN] [--idempotency-key KEY]",
		summary: "execute a capability",
		text: `Execute a capability with JSON object arguments and print its result.

Event streams are printed event by event, as they arrive. An async answer
is polled until the job ends, as often as the location's Retry-After
allows; interrupting the command (Ctrl-C) cancels the job (DELETE on its
status URL).

A capability that needs a confirmation shows its preview and asks on the
terminal before confirming the call; --yes confirms without asking, and
without --yes a command whose standard input is not a terminal refuses
(it never confirms on its own). When the location asks a person to
confirm the call, the verification URL and code are printed and the
command waits for the decision.`,
		waits: true,
		run:   (*cli).execute,
	},
	{
		name:    "sign",
		usage:   "sign [--aud URL] [--capability NAME]...",
		summary: "print an agent JWT, for debugging",
		text: `Print an agent JWT of the current agent (valid 60 s, for one request), for
debugging or for requests of your own.`,
		run: (*cli).sign,
	},
	{
		name:    "revoke",
		usage:   "revoke",
		summary: "revoke the current agent and forget it",
		text:    `Revoke the current agent at its provider, and delete its key and connection.`,
		run:     (*cli).revoke,
	},
	{
		name:    "mcp",
		usage:   "mcp [--url URL]... [--refresh DURATION]",
		summary: "serve the agents' capabilities to an MCP host",
		text: `Serve the connected agents' granted capabilities as MCP tools on standard
input and output, for an MCP host (Claude Desktop, Claude Code, Cursor),
named provider__capability; each call is signed with a fresh agent JWT.

Lifecycle tools let the model discover providers, list capabilities,
connect (returning the approval URL and code), request more capabilities,
show the status and disconnect. The host is told when the tools change.
A call that needs the user's confirmation asks the user through the host
(an elicitation showing the preview, or where a person confirms) and runs
once the user confirms; a host that cannot ask gets the refusal.`,
		run: (*cli).mcpCommand,
	},
}

// lookupCommand returns the command called name.
func lookupCommand(name string) (command, bool) {
	for _, cmd := range commands {
		if cmd.name == name {
			return cmd, true
		}
	}
	return command{}, false
}

// overview is the text of 'agentcap help': the commands and the global
// flags.
func overview(w io.Writer) {
	fmt.Fprint(w, `agentcap is an Agent Auth client: it connects agents to providers and
calls the capabilities they were granted.

Usage:
  agentcap [global flags] <command> [arguments] [flags]

Commands:
`)
	tw := newTable(w)
	for _, cmd := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintf(tw, "  help\tshow this text, or a command's help (agentcap help COMMAND)\n")
	_ = tw.Flush()
	fmt.Fprint(w, "\nGlobal flags, before or after the command:\n")
	printFlags(w, globalFlagList())
	fmt.Fprint(w, `
Run 'agentcap <command> -h' for a command's arguments and flags.
Start with 'agentcap connect URL --capability NAME'.

A command exits with 0 when it succeeded, 1 when it failed and 2 for a
mistake in the command line. A failure is printed on standard error with
all the provider said: the error, its message and every other member of
its answer (what is wrong with the arguments and where, constraint
violations, missing constraints, ...); with --json, as one JSON object.

State: keys/ holds the host and agent keys (files of mode 0600),
connections/ one JSON file per agent, "current" the current agent's id.
`)
}

// commandHelp is the text of 'agentcap NAME -h': the usage line, what
// the command does, its own flags and the global ones.
func commandHelp(w io.Writer, cmd command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: agentcap %s\n\n%s\n", cmd.usage, cmd.text)
	var own []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !isGlobalFlag(f.Name) {
			own = append(own, f)
		}
	})
	if len(own) > 0 {
		fmt.Fprint(w, "\nFlags:\n")
		printFlags(w, own)
	}
	fmt.Fprint(w, "\nGlobal flags, before or after the command:\n")
	printFlags(w, globalFlagList())
}

// printFlags lists flags as --name VALUE, with their usage on the next
// line and their default when it is not the zero value.
func printFlags(w io.Writer, flags []*flag.Flag) {
	for _, f := range flags {
		value, text := flag.UnquoteUsage(f)
		if _, isBool := f.Value.(interface{ IsBoolFlag() bool }); isBool {
			value = ""
		}
		line := "  --" + f.Name
		if value != "" {
			line += " " + value
		}
		fmt.Fprintf(w, "%s\n        %s", line, strings.ReplaceAll(text, "\n", "\n        "))
		switch d := f.DefValue; {
		case d == "" || d == "false" || d == "0" || d == "0s":
		case strings.ContainsRune(d, ' '):
			fmt.Fprintf(w, " (default %q)", d)
		default:
			fmt.Fprintf(w, " (default %s)", d)
		}
		fmt.Fprintln(w)
	}
}

// globalFlags defines the flags every command takes on fs. Their values
// are written to c without being reset by a second definition, so that
// they may come before the command as well as after it.
func (c *cli) globalFlags(fs *flag.FlagSet) {
	fs.Var(boolFlag{&c.json}, "json", "print JSON instead of text, for scripts")
	fs.Var(stringFlag{&c.agentID}, "agent", "act as the saved agent `ID` (or the name of one) instead of the\ncurrent one")
	fs.Var(stringFlag{&c.stateDir}, "state", "keep keys and connections in `DIR` (default: $AGENTCAP_STATE, else\nagentcap/ under the user's configuration directory)")
	fs.Var(boolFlag{&c.insecureLoopback}, "insecure-loopback", "allow plain http:// to loopback providers (development)")
	fs.Var(&c.timeout, "timeout", "bound the whole command to `DURATION`, 0 for no bound (default 10m for\nconnect, request and execute, which may wait for a person, 1m otherwise)")
}

// globalFlagList returns the global flags, for help texts.
func globalFlagList() []*flag.Flag {
	fs := flag.NewFlagSet("agentcap", flag.ContinueOnError)
	(&cli{}).globalFlags(fs)
	var flags []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	return flags
}

func isGlobalFlag(name string) bool {
	for _, f := range globalFlagList() {
		if f.Name == name {
			return true
		}
	}
	return false
}

// boolFlag and stringFlag write a flag to a variable that keeps its value
// when the flag is defined (flag.BoolVar and StringVar reset it).
type (
	boolFlag   struct{ p *bool }
	stringFlag struct{ p *string }
)

func (f boolFlag) String() string {
	if f.p == nil {
		return "false"
	}
	return strconv.FormatBool(*f.p)
}

func (f boolFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("not a boolean")
	}
	*f.p = v
	return nil
}

func (f boolFlag) IsBoolFlag() bool { return true }

func (f stringFlag) String() string {
	if f.p == nil {
		return ""
	}
	return *f.p
}

func (f stringFlag) Set(s string) error { *f.p = s; return nil }

// timeoutFlag is --timeout, whose default depends on the command.
type timeoutFlag struct {
	d   time.Duration
	set bool
}

func (f *timeoutFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return f.d.String()
}

func (f *timeoutFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration (like 30s or 5m)")
	}
	f.d, f.set = d, true
	return nil
}

// usageError is a mistake in the command line.
type usageError struct{ error }

// flagError rewrites the flag package's error in the --name spelling the
// help uses.
func flagError(err error) error {
	msg := err.Error()
	for _, r := range []struct{ from, to string }{
		{"flag provided but not defined: -", "unknown flag --"},
		{"flag needs an argument: -", "flag needs an argument: --"},
		{"for flag -", "for flag --"},
	} {
		if strings.Contains(msg, r.from) {
			return errors.New(strings.Replace(msg, r.from, r.to, 1))
		}
	}
	return err
}

// parse parses flags interspersed with positional arguments, which it
// checks against names, the positional arguments the command takes.
// Everything after "--" is positional.
func parse(fs *flag.FlagSet, args []string, names ...string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{flagError(err)}
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	switch {
	case len(pos) < len(names):
		return nil, usageError{fmt.Errorf("missing %s", strings.Join(names[len(pos):], " "))}
	case len(pos) > len(names):
		return nil, usageError{fmt.Errorf("unexpected argument %q", pos[len(names)])}
	}
	return pos, nil
}

// newTable returns a writer that aligns tab-separated columns.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }
