package core

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentcap/agentcap/auth"
)

// Registry is an immutable set of capability definitions, listed in name
// order. It holds data only, so code that must not depend on a server
// (routing tables, auth configuration, documentation generators) can
// import it.
type Registry struct {
	defs   []*Definition
	byName map[string]*Definition
}

// NewRegistry builds a registry. A nil definition or a duplicate name fails,
// naming the offender.
func NewRegistry(defs ...Definer) (*Registry, error) {
	r := &Registry{byName: make(map[string]*Definition, len(defs))}
	for i, d := range defs {
		if d == nil {
			return nil, fmt.Errorf("agentcap: registry: definition %d is nil", i)
		}
		def := d.Definition()
		if def == nil {
			return nil, fmt.Errorf("agentcap: registry: definition %d is nil", i)
		}
		if _, dup := r.byName[def.name]; dup {
			return nil, &DefinitionError{Capability: def.name, Reason: "defined more than once"}
		}
		r.byName[def.name] = def
		r.defs = append(r.defs, def)
	}
	slices.SortFunc(r.defs, func(a, b *Definition) int { return strings.Compare(a.name, b.name) })
	return r, nil
}

// MustRegistry is NewRegistry for package-level variables: it panics on
// error.
func MustRegistry(defs ...Definer) *Registry {
	r, err := NewRegistry(defs...)
	if err != nil {
		panic(err)
	}
	return r
}

// Lookup returns the definition registered under name.
func (r *Registry) Lookup(name string) (*Definition, bool) {
	d, ok := r.byName[name]
	return d, ok
}

// All returns every definition in name order. The returned slice is a copy.
func (r *Registry) All() []*Definition { return slices.Clone(r.defs) }

// Len returns the number of definitions.
func (r *Registry) Len() int { return len(r.defs) }

// Visible returns the definitions the caller id (nil: anonymous) may see in
// a listing, in name order.
func (r *Registry) Visible(ctx context.Context, id *auth.Identity) []*Definition {
	out := make([]*Definition, 0, len(r.defs))
	for _, d := range r.defs {
		if d.Visible(ctx, id, false) {
			out = append(out, d)
		}
	}
	return out
}

// Describe returns the named definition if the caller id may see it.
func (r *Registry) Describe(ctx context.Context, id *auth.Identity, name string) (*Definition, bool) {
	d, ok := r.byName[name]
	if !ok || !d.Visible(ctx, id, false) {
		return nil, false
	}
	return d, true
}
