package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	wire "github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
)

// listedConnection is a saved connection as 'agentcap connections
// --json' shows it: what is saved, whether it is the current one, and
// the agent's status and grants as its provider reports them.
type listedConnection struct {
	client.Connection
	Current bool           `json:"current"`
	Status  string         `json:"status,omitempty"`
	Grants  []client.Grant `json:"agent_capability_grants,omitempty"`
	Error   string         `json:"error,omitempty"`
}

func (c *cli) connections(ctx context.Context, fs *flag.FlagSet, args []string) error {
	offline := fs.Bool("offline", false, "show what is saved only, without asking the providers for the agents' status")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	cl, dir, err := c.newClient()
	if err != nil {
		return err
	}
	saved, err := loadConnections(dir)
	if err != nil {
		return err
	}
	current, err := currentAgent(dir)
	if err != nil {
		return err
	}
	listed := make([]listedConnection, len(saved))
	for i, conn := range saved {
		l := listedConnection{Connection: conn.Connection, Current: conn.AgentID == current}
		if !*offline {
			if st, err := readStatus(ctx, cl, conn.Connection); err != nil {
				l.Error = err.Error()
			} else {
				l.Status, l.Grants = st.Status, st.Grants
			}
		}
		listed[i] = l
	}
	if c.json {
		return c.printJSON(listed)
	}
	if len(listed) == 0 {
		fmt.Fprintln(c.stdout, "No saved connections: 'agentcap connect URL --capability NAME' makes one.")
		return nil
	}
	w := newTable(c.stdout)
	if *offline {
		fmt.Fprintln(w, "  AGENT\tNAME\tMODE\tPROVIDER")
	} else {
		fmt.Fprintln(w, "  AGENT\tNAME\tMODE\tPROVIDER\tSTATUS\tGRANTS")
	}
	for _, l := range listed {
		mark := " "
		if l.Current {
			mark = "*"
		}
		fmt.Fprintf(w, "%s %s\t%s\t%s\t%s", mark, l.AgentID, oneLine(l.Name), l.Mode, l.Provider)
		switch {
		case *offline:
		case l.Error != "":
			fmt.Fprint(w, "\tunknown\t")
		default:
			fmt.Fprintf(w, "\t%s\t%s", l.Status, grantSummary(l.Grants))
		}
		fmt.Fprintln(w)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if current == "" {
		fmt.Fprintln(c.stdout, "No agent is current: 'agentcap use AGENT' makes one current.")
	} else {
		fmt.Fprintln(c.stdout, "* the current agent; 'agentcap use AGENT' makes another current.")
	}
	for _, l := range listed {
		if l.Error != "" {
			fmt.Fprintf(c.stderr, "agentcap: the status of %s: %s\n", l.AgentID, l.Error)
		}
	}
	return nil
}

// readStatus reads the status of a saved agent at its provider.
func readStatus(ctx context.Context, cl *client.Client, conn client.Connection) (*client.AgentStatus, error) {
	a, err := cl.Resume(ctx, conn)
	if err != nil {
		return nil, err
	}
	return a.Status(ctx)
}

// grantSummary lists the capabilities of grants, each with its status
// unless it is active: "check_balance, transfer_money (pending)".
func grantSummary(gs []client.Grant) string {
	if len(gs) == 0 {
		return "-"
	}
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = g.Capability
		if g.Status != wire.StatusActive {
			parts[i] += " (" + g.Status + ")"
		}
	}
	return strings.Join(parts, ", ")
}

func (c *cli) use(_ context.Context, fs *flag.FlagSet, args []string) error {
	pos, err := parse(fs, args, "AGENT")
	if err != nil {
		return err
	}
	dir, err := c.state()
	if err != nil {
		return err
	}
	conns, err := loadConnections(dir)
	if err != nil {
		return err
	}
	conn, err := findConnection(conns, pos[0])
	if err != nil {
		return err
	}
	if err := setCurrent(dir, conn.AgentID); err != nil {
		return err
	}
	if c.json {
		return c.printJSON(listedConnection{Connection: conn.Connection, Current: true})
	}
	fmt.Fprintf(c.stdout, "The current agent is %s at %s.\n", describeAgent(conn.Connection), conn.Provider)
	return nil
}

// describeAgent names an agent for people: its id and its name.
func describeAgent(conn client.Connection) string {
	if conn.Name == "" {
		return conn.AgentID
	}
	return conn.AgentID + " (" + oneLine(conn.Name) + ")"
}

func (c *cli) request(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var caps capabilityFlags
	var o client.RequestOptions
	fs.Var(&caps, "capability", "ask for a capability, `NAME[:CONSTRAINTS]` (CONSTRAINTS: a JSON object);\nrepeat the flag for more")
	approvalFlags(fs, &o.Reason, &o.PreferredMethod, &o.LoginHint, &o.BindingMessage)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if len(caps) == 0 {
		return usageError{errors.New("name the capabilities to ask for with --capability")}
	}
	o.Capabilities = caps
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	a, _, err := c.agent(ctx)
	if err != nil {
		return err
	}
	o.OnApproval = c.showApproval("Approval")
	polls := 0
	o.OnPoll = func(client.AgentStatus) {
		polls++
		if !c.json {
			fmt.Fprint(c.stderr, ".")
		}
	}
	st, err := a.RequestCapabilities(ctx, o)
	if polls > 0 && !c.json {
		fmt.Fprintln(c.stderr)
	}
	if err != nil {
		return err
	}
	if c.json {
		if err := c.printJSON(st); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(c.stdout, "Agent %s at %s:\n", describeAgent(a.Connection()), a.Connection().Issuer)
		if err := c.printGrants(st.Grants); err != nil {
			return err
		}
	}
	var refused []string
	for _, r := range caps {
		if g, ok := st.Grant(r.Name); !ok || g.Status != wire.StatusActive {
			refused = append(refused, r.Name)
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("not granted: %s", strings.Join(refused, ", "))
	}
	return nil
}

// hintedError is a failure with advice on what to do about it.
type hintedError struct {
	err  error
	hint string
}

func (e hintedError) Error() string { return e.err.Error() }
func (e hintedError) Unwrap() error { return e.err }

// grantHint explains a capability_not_granted failure of agent a's call
// of capability: it names the other saved agents of the same provider
// that hold an active grant for it, and how to act as one of them, or
// else how to ask for it. Any other error is returned as it is.
func (c *cli) grantHint(ctx context.Context, a *client.Agent, capability string, err error) error {
	if !client.IsCode(err, wire.CodeCapabilityNotGranted) {
		return err
	}
	cl, dir, cerr := c.newClient()
	if cerr != nil {
		return err
	}
	conns, cerr := loadConnections(dir)
	if cerr != nil {
		return err
	}
	self := a.Connection()
	var holders []client.Connection
	for _, conn := range conns {
		if conn.AgentID == self.AgentID || !sameProvider(conn.Connection, self) {
			continue
		}
		st, serr := readStatus(ctx, cl, conn.Connection)
		if serr != nil || st.Status != wire.StatusActive {
			continue
		}
		if g, ok := st.Grant(capability); ok && g.Status == wire.StatusActive && (g.ExpiresAt == nil || time.Now().Before(*g.ExpiresAt)) {
			holders = append(holders, conn.Connection)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Agent %s holds no grant for %s", describeAgent(self), capability)
	if len(holders) == 0 {
		fmt.Fprintf(&b, ", nor does any other saved agent of this provider.\nAsk for it with 'agentcap request --capability %s'", capability)
		if c.agentID != "" {
			fmt.Fprintf(&b, " --agent %s", self.AgentID)
		}
		b.WriteString(" (the user approves it as a connection).")
		return hintedError{err, b.String()}
	}
	names := make([]string, len(holders))
	for i, h := range holders {
		names[i] = describeAgent(h)
	}
	verb := "does"
	if len(holders) > 1 {
		verb = "do"
	}
	instead := "add --agent %s to the command"
	if c.agentID != "" {
		instead = "run the command with --agent %s instead"
	}
	fmt.Fprintf(&b, "; %s %s.\nRun 'agentcap use %s' to make it the current agent, or "+instead+".",
		strings.Join(names, " and "), verb, holders[0].AgentID, holders[0].AgentID)
	return hintedError{err, b.String()}
}
