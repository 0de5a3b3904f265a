package agentauthtest

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentcap/agentcap/agentauth"
)

// NewDirectory returns an in-memory directory holding the records of hosts
// and agents. Hosts are added first, so agents may name any of them.
func NewDirectory(hosts []*Host, agents []*Agent) (*agentauth.MemoryDirectory, error) {
	d := agentauth.NewMemoryDirectory()
	for _, h := range hosts {
		if err := d.PutHost(h.Record()); err != nil {
			return nil, fmt.Errorf("agentauthtest: host %q: %w", h.ID, err)
		}
	}
	for _, a := range agents {
		if err := d.PutAgent(a.Record()); err != nil {
			return nil, fmt.Errorf("agentauthtest: agent %q: %w", a.ID, err)
		}
	}
	return d, nil
}

// directoryFile is the fixture format read by agentauth.LoadDirectoryFile.
type directoryFile struct {
	Hosts  []*agentauth.Host  `json:"hosts"`
	Agents []*agentauth.Agent `json:"agents"`
}

// WriteDirectoryFile writes the records of hosts and agents to path in the
// directory fixture format that agentauth.LoadDirectoryFile reads:
// {"hosts": [...], "agents": [...]} with the protocol's field names.
func WriteDirectoryFile(path string, hosts []*Host, agents []*Agent) error {
	f := directoryFile{Hosts: make([]*agentauth.Host, 0, len(hosts)), Agents: make([]*agentauth.Agent, 0, len(agents))}
	for _, h := range hosts {
		f.Hosts = append(f.Hosts, h.Record())
	}
	for _, a := range agents {
		f.Agents = append(f.Agents, a.Record())
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("agentauthtest: encoding the directory: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("agentauthtest: %w", err)
	}
	return nil
}
