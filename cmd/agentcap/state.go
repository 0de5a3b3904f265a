package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentcap/agentcap/client"
)

// The state directory holds keys/ (the client's key store),
// connections/ (one JSON file per agent, a client.Connection) and
// "current", the id of the agent the commands act as by default.

// saveConnection stores a connection and makes it the current one.
func saveConnection(dir string, conn client.Connection) error {
	cdir := filepath.Join(dir, "connections")
	if err := os.MkdirAll(cdir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(conn, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(cdir, connectionFile(conn.AgentID)), append(b, '\n')); err != nil {
		return err
	}
	return setCurrent(dir, conn.AgentID)
}

// setCurrent makes the agent with id the current one.
func setCurrent(dir, id string) error {
	return writeFile(filepath.Join(dir, "current"), []byte(id+"\n"))
}

// currentAgent returns the current agent's id, "" when there is none.
func currentAgent(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "current"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(string(b)), err
}

// connectionFile names the file of an agent's connection. Agent ids come
// from providers, so they are encoded before becoming file names.
func connectionFile(agentID string) string {
	var b strings.Builder
	for _, r := range agentID {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "%%%02x", r)
		}
	}
	return b.String() + ".json"
}

func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// savedConnection is a connection of the state directory and when it
// was saved.
type savedConnection struct {
	client.Connection
	saved time.Time
}

// loadConnections returns the saved connections, in the order they were
// saved (by agent id for those saved at once).
func loadConnections(dir string) ([]savedConnection, error) {
	cdir := filepath.Join(dir, "connections")
	entries, err := os.ReadDir(cdir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var conns []savedConnection
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(cdir, e.Name()))
		if err != nil {
			return nil, err
		}
		var conn client.Connection
		if err := json.Unmarshal(raw, &conn); err != nil {
			return nil, fmt.Errorf("connection %s: %w", e.Name(), err)
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		conns = append(conns, savedConnection{conn, info.ModTime()})
	}
	slices.SortFunc(conns, func(x, y savedConnection) int {
		if c := x.saved.Compare(y.saved); c != 0 {
			return c
		}
		return strings.Compare(x.AgentID, y.AgentID)
	})
	return conns, nil
}

// findConnection returns the saved connection that ref names: an agent
// id, or the name of exactly one saved agent.
func findConnection(conns []savedConnection, ref string) (savedConnection, error) {
	var named []savedConnection
	for _, conn := range conns {
		if conn.AgentID == ref {
			return conn, nil
		}
		if conn.Name == ref {
			named = append(named, conn)
		}
	}
	switch len(named) {
	case 1:
		return named[0], nil
	case 0:
		return savedConnection{}, fmt.Errorf("no saved agent has the id or name %q: 'agentcap connections' lists them", ref)
	}
	ids := make([]string, len(named))
	for i, conn := range named {
		ids[i] = conn.AgentID
	}
	return savedConnection{}, fmt.Errorf("%d saved agents are named %q: name one by its id (%s)", len(named), ref, strings.Join(ids, ", "))
}

// sameProvider reports whether two connections are to the same provider.
func sameProvider(a, b client.Connection) bool {
	return strings.TrimRight(a.Issuer, "/") == strings.TrimRight(b.Issuer, "/")
}

// currentConnection returns the current agent's saved connection, nil
// when there is none.
func currentConnection(dir string) (*savedConnection, error) {
	id, err := currentAgent(dir)
	if err != nil || id == "" {
		return nil, err
	}
	conns, err := loadConnections(dir)
	if err != nil {
		return nil, err
	}
	for _, conn := range conns {
		if conn.AgentID == id {
			return &conn, nil
		}
	}
	return nil, nil
}

// connection returns the saved connection the command acts as: the one
// --agent names, else the current one.
func (c *cli) connection(dir string) (savedConnection, error) {
	conns, err := loadConnections(dir)
	if err != nil {
		return savedConnection{}, err
	}
	if c.agentID != "" {
		return findConnection(conns, c.agentID)
	}
	id, err := currentAgent(dir)
	if err != nil {
		return savedConnection{}, err
	}
	switch {
	case id == "" && len(conns) == 0:
		return savedConnection{}, errors.New("no agent connected yet: run 'agentcap connect URL' first")
	case id == "":
		return savedConnection{}, errors.New("no current agent: 'agentcap connections' lists the saved ones, 'agentcap use AGENT' makes one current")
	}
	for _, conn := range conns {
		if conn.AgentID == id {
			return conn, nil
		}
	}
	return savedConnection{}, fmt.Errorf("the current agent %q has no saved connection: 'agentcap connections' lists the saved ones, 'agentcap use AGENT' makes one current", id)
}

// agent resumes the connection the command acts as: --agent, else the
// current one.
func (c *cli) agent(ctx context.Context) (*client.Agent, string, error) {
	cl, dir, err := c.newClient()
	if err != nil {
		return nil, "", err
	}
	conn, err := c.connection(dir)
	if err != nil {
		return nil, "", err
	}
	a, err := cl.Resume(ctx, conn.Connection)
	return a, dir, err
}
