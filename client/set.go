package client

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/agentcap/agentcap"
)

// Member is one connected agent of a Set, under the provider name that
// namespaces its capabilities.
type Member struct {
	// Provider names the provider in the set, e.g. "bank". Names must be
	// unique within a set.
	Provider string
	Agent    *Agent
}

// SetOptions configure NewSet.
type SetOptions struct {
	// Namespace builds the display name of a provider's capability. Nil
	// means DefaultNamespace.
	Namespace func(provider, capability string) string
	// Include, when non-empty, keeps only capabilities matching one of
	// its patterns; Exclude drops those matching one of its patterns.
	// Patterns use path.Match syntax and are matched against the display
	// name, the raw name and "provider/raw".
	Include, Exclude []string
	// GrantedOnly keeps only capabilities granted to the agent.
	GrantedOnly bool
}

// SetEntry is one capability of a set.
type SetEntry struct {
	// Name is the display name, unique in the set.
	Name string
	// Provider is the member's provider name.
	Provider string
	// Capability is the capability as the provider describes it, with
	// its schemas; Capability.Name is the raw name.
	Capability Capability

	agent *Agent
}

// Agent returns the agent the entry's capability is called as.
func (e SetEntry) Agent() *Agent { return e.agent }

// Collision is a display name that several capabilities map to. None of
// them is kept in the set, since a call by that name would be ambiguous.
type Collision struct {
	Name string
	// Sources are the colliding capabilities as "provider/raw".
	Sources []string
}

// Set is the capabilities of several connected agents under namespaced
// display names. It is immutable once built and safe for concurrent use.
type Set struct {
	entries    []SetEntry
	byName     map[string]int
	collisions []Collision
}

// DefaultNamespace names a capability provider__capability, with every
// character outside [A-Za-z0-9_-] replaced by '_', so that the name is
// also a valid tool name for model APIs.
func DefaultNamespace(provider, capability string) string {
	return toolSafe(provider) + "__" + toolSafe(capability)
}

func toolSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// NewSet lists and describes the capabilities of each member and builds
// the set. Display names that collide are reported by Collisions and left
// out.
func NewSet(ctx context.Context, members []Member, o SetOptions) (*Set, error) {
	ns := o.Namespace
	if ns == nil {
		ns = DefaultNamespace
	}
	for _, p := range append(o.Include, o.Exclude...) {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("client: bad pattern %q: %w", p, err)
		}
	}
	seen := map[string]bool{}
	var all []SetEntry
	for _, m := range members {
		if m.Provider == "" || m.Agent == nil {
			return nil, errors.New("client: set member without provider name or agent")
		}
		if seen[m.Provider] {
			return nil, fmt.Errorf("client: provider %q appears twice in the set", m.Provider)
		}
		seen[m.Provider] = true
		caps, err := m.Agent.AllCapabilities(ctx, "")
		if err != nil {
			return nil, fmt.Errorf("client: capabilities of %s: %w", m.Provider, err)
		}
		for _, c := range caps {
			if o.GrantedOnly && c.GrantStatus != agentcap.GrantStatusGranted {
				continue
			}
			name := ns(m.Provider, c.Name)
			if !selected(o, name, m.Provider, c.Name) {
				continue
			}
			full, err := m.Agent.Describe(ctx, c.Name)
			if err != nil {
				return nil, fmt.Errorf("client: describe %s/%s: %w", m.Provider, c.Name, err)
			}
			all = append(all, SetEntry{Name: name, Provider: m.Provider, Capability: *full, agent: m.Agent})
		}
	}
	return buildSet(all), nil
}

func selected(o SetOptions, name, provider, raw string) bool {
	keys := []string{name, raw, provider + "/" + raw}
	match := func(patterns []string) bool {
		for _, p := range patterns {
			for _, k := range keys {
				if ok, _ := path.Match(p, k); ok {
					return true
				}
			}
		}
		return false
	}
	if len(o.Include) > 0 && !match(o.Include) {
		return false
	}
	return !match(o.Exclude)
}

// buildSet indexes entries and sets colliding display names aside.
func buildSet(all []SetEntry) *Set {
	count := map[string]int{}
	for _, e := range all {
		count[e.Name]++
	}
	s := &Set{byName: map[string]int{}}
	sources := map[string][]string{}
	for _, e := range all {
		if count[e.Name] > 1 {
			sources[e.Name] = append(sources[e.Name], e.Provider+"/"+e.Capability.Name)
			continue
		}
		s.byName[e.Name] = len(s.entries)
		s.entries = append(s.entries, e)
	}
	for name, src := range sources {
		s.collisions = append(s.collisions, Collision{Name: name, Sources: src})
	}
	slices.SortFunc(s.collisions, func(a, b Collision) int { return strings.Compare(a.Name, b.Name) })
	return s
}

// Entries returns the set's capabilities, in provider order and, within
// a provider, in listing order.
func (s *Set) Entries() []SetEntry { return slices.Clone(s.entries) }

// Collisions returns the display names that several capabilities mapped
// to, sorted by name.
func (s *Set) Collisions() []Collision { return slices.Clone(s.collisions) }

// Lookup finds an entry by display name, or else by raw capability name
// (or "provider/raw") when exactly one provider has it.
func (s *Set) Lookup(name string) (SetEntry, error) {
	if i, ok := s.byName[name]; ok {
		return s.entries[i], nil
	}
	var found []int
	for i, e := range s.entries {
		if e.Capability.Name == name || e.Provider+"/"+e.Capability.Name == name {
			found = append(found, i)
		}
	}
	switch len(found) {
	case 1:
		return s.entries[found[0]], nil
	case 0:
		return SetEntry{}, fmt.Errorf("client: no capability %q in the set", name)
	default:
		var names []string
		for _, i := range found {
			names = append(names, s.entries[i].Name)
		}
		return SetEntry{}, fmt.Errorf("client: %q is ambiguous: %s", name, strings.Join(names, ", "))
	}
}

// Call executes the capability a display (or raw) name stands for, at
// the agent it came from, under its raw name.
func (s *Set) Call(ctx context.Context, name string, args any, opts ...ExecuteOption) (*Result, error) {
	e, err := s.Lookup(name)
	if err != nil {
		return nil, err
	}
	return e.agent.Execute(ctx, e.Capability.Name, args, opts...)
}
