package agentauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/agentcap/agentcap"
)

// maxDirectoryFileBytes bounds a directory fixture read by ParseDirectory.
const maxDirectoryFileBytes = 64 << 20

// MemoryDirectory is a Directory held in memory, safe for concurrent use.
// Put validates every record, so a MemoryDirectory only ever holds hosts
// and agents the Verifier can use; lookups return deep copies, so callers
// may not change what it holds.
type MemoryDirectory struct {
	mu      sync.RWMutex
	hosts   map[string]*Host
	agents  map[string]*Agent
	byThumb map[string]string // inline host key thumbprint -> host id
}

var (
	_ Directory        = (*MemoryDirectory)(nil)
	_ HostKeyDirectory = (*MemoryDirectory)(nil)
)

// NewMemoryDirectory returns an empty directory.
func NewMemoryDirectory() *MemoryDirectory {
	return &MemoryDirectory{hosts: make(map[string]*Host), agents: make(map[string]*Agent), byThumb: make(map[string]string)}
}

// PutHost validates h and stores a copy of it, replacing any host with the
// same id. A host needs an id, a protocol status (active, pending, revoked,
// rejected) and exactly one key source: an inline Ed25519 public JWK or a
// JWKS URL.
func (d *MemoryDirectory) PutHost(h *Host) error {
	if h == nil {
		return errors.New("agentauth: nil host")
	}
	if err := validateHost(h); err != nil {
		return fmt.Errorf("agentauth: host %q: %w", h.ID, err)
	}
	c := cloneHost(h)
	thumb, err := hostThumbprint(c)
	if err != nil {
		return fmt.Errorf("agentauth: host %q: %w", h.ID, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.hosts[c.ID]; ok {
		if t, _ := hostThumbprint(old); t != "" && d.byThumb[t] == c.ID {
			delete(d.byThumb, t)
		}
	}
	d.hosts[c.ID] = c
	if thumb != "" {
		d.byThumb[thumb] = c.ID
	}
	return nil
}

// hostThumbprint is the RFC 7638 thumbprint of h's inline key, or "" for
// a JWKS host.
func hostThumbprint(h *Host) (string, error) {
	if len(h.PublicKey) == 0 {
		return "", nil
	}
	k, err := parsePublicJWK(h.PublicKey)
	if err != nil {
		return "", err
	}
	return jwkThumbprint(k)
}

// HostByKeyThumbprint implements HostKeyDirectory for hosts with an
// inline key: a host JWT's iss is the thumbprint of that key.
func (d *MemoryDirectory) HostByKeyThumbprint(_ context.Context, thumbprint string) (*Host, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	id, ok := d.byThumb[thumbprint]
	if !ok {
		return nil, fmt.Errorf("agentauth: host with key thumbprint %q: %w", thumbprint, ErrNotFound)
	}
	return cloneHost(d.hosts[id]), nil
}

// PutAgent validates a and stores a copy of it, replacing any agent with
// the same id. An agent needs an id, a host already in d, a mode
// (delegated, autonomous), a protocol status (pending, active, expired,
// revoked, rejected, claimed), exactly one key source (an inline Ed25519
// public JWK, or a JWKS URL with a kid), and well-formed grants.
func (d *MemoryDirectory) PutAgent(a *Agent) error {
	if a == nil {
		return errors.New("agentauth: nil agent")
	}
	if err := validateAgent(a); err != nil {
		return fmt.Errorf("agentauth: agent %q: %w", a.ID, err)
	}
	c := cloneAgent(a)
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.hosts[c.HostID]; !ok {
		return fmt.Errorf("agentauth: agent %q: host %q is not in the directory", a.ID, a.HostID)
	}
	d.agents[c.ID] = c
	return nil
}

// Host implements Directory. An unknown id gives an error wrapping
// ErrNotFound.
func (d *MemoryDirectory) Host(ctx context.Context, id string) (*Host, error) {
	h, err := memoryLender{d}.Host(ctx, id)
	if err != nil {
		return nil, err
	}
	return cloneHost(h), nil
}

// Agent implements Directory. An unknown id gives an error wrapping
// ErrNotFound.
func (d *MemoryDirectory) Agent(ctx context.Context, id string) (*Agent, error) {
	a, err := memoryLender{d}.Agent(ctx, id)
	if err != nil {
		return nil, err
	}
	return cloneAgent(a), nil
}

// memoryLender is the Directory a Verifier reads a MemoryDirectory
// through: it returns the stored records themselves, not copies. That is
// safe because a MemoryDirectory never changes a stored record (Put
// replaces it with a new copy) and a Session's records are read-only by
// contract; it saves the Verifier a deep copy of the agent, its grants
// and its host on every request.
type memoryLender struct{ d *MemoryDirectory }

func (l memoryLender) Host(_ context.Context, id string) (*Host, error) {
	l.d.mu.RLock()
	h, ok := l.d.hosts[id]
	l.d.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("agentauth: host %q: %w", id, ErrNotFound)
	}
	return h, nil
}

func (l memoryLender) Agent(_ context.Context, id string) (*Agent, error) {
	l.d.mu.RLock()
	a, ok := l.d.agents[id]
	l.d.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("agentauth: agent %q: %w", id, ErrNotFound)
	}
	return a, nil
}

func validateHost(h *Host) error {
	if h.ID == "" {
		return errors.New("id is empty")
	}
	switch h.Status {
	case agentcap.StatusActive, agentcap.StatusPending, agentcap.StatusRevoked, agentcap.StatusRejected:
	default:
		return fmt.Errorf("status %q is not one of active, pending, revoked, rejected", h.Status)
	}
	if err := validateKeySource(h.PublicKey, h.JWKSURL); err != nil {
		return err
	}
	for i, c := range h.DefaultCapabilities {
		if c == "" {
			return fmt.Errorf("default_capabilities[%d] is empty", i)
		}
	}
	return nil
}

func validateAgent(a *Agent) error {
	if a.ID == "" {
		return errors.New("id is empty")
	}
	if a.HostID == "" {
		return errors.New("host_id is empty")
	}
	switch a.Mode {
	case agentcap.ModeDelegated, agentcap.ModeAutonomous:
	default:
		return fmt.Errorf("mode %q is not one of delegated, autonomous", a.Mode)
	}
	switch a.Status {
	case agentcap.StatusPending, agentcap.StatusActive, agentcap.StatusExpired, agentcap.StatusRevoked, agentcap.StatusRejected, agentcap.StatusClaimed:
	default:
		return fmt.Errorf("status %q is not one of pending, active, expired, revoked, rejected, claimed", a.Status)
	}
	if err := validateKeySource(a.PublicKey, a.JWKSURL); err != nil {
		return err
	}
	switch {
	case a.JWKSURL != "" && a.KID == "":
		return errors.New("kid is required with jwks_url")
	case a.JWKSURL == "" && a.KID != "":
		return errors.New("kid is only meaningful with jwks_url")
	}
	for i, g := range a.Grants {
		if err := validateGrant(g); err != nil {
			return fmt.Errorf("agent_capability_grants[%d]: %w", i, err)
		}
	}
	return nil
}

func validateKeySource(publicKey json.RawMessage, jwksURL string) error {
	switch {
	case len(publicKey) > 0 && jwksURL != "":
		return errors.New("both public_key and jwks_url are set; exactly one is required")
	case len(publicKey) == 0 && jwksURL == "":
		return errors.New("neither public_key nor jwks_url is set; exactly one is required")
	case len(publicKey) > 0:
		if _, err := parsePublicJWK(publicKey); err != nil {
			return fmt.Errorf("public_key: %w", err)
		}
	default:
		u, err := url.Parse(jwksURL)
		if err != nil {
			return fmt.Errorf("jwks_url: %w", err)
		}
		if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			return fmt.Errorf("jwks_url %q must be an absolute https URL without credentials (http is fetched only under FetchPolicy.AllowLoopback)", jwksURL)
		}
	}
	return nil
}

func validateGrant(g Grant) error {
	if g.Capability == "" {
		return errors.New("capability is empty")
	}
	switch g.Status {
	case agentcap.StatusActive, agentcap.StatusPending, agentcap.StatusDenied:
	default:
		return fmt.Errorf("status %q is not one of active, pending, denied", g.Status)
	}
	for field, raw := range g.Constraints {
		if field == "" {
			return errors.New("constraints has an empty field name")
		}
		if !json.Valid(raw) {
			return fmt.Errorf("constraints[%q] is not valid JSON", field)
		}
	}
	return nil
}

func cloneHost(h *Host) *Host {
	c := *h
	c.PublicKey = slices.Clone(h.PublicKey)
	c.DefaultCapabilities = slices.Clone(h.DefaultCapabilities)
	return &c
}

func cloneAgent(a *Agent) *Agent {
	c := *a
	c.PublicKey = slices.Clone(a.PublicKey)
	c.Grants = cloneGrants(a.Grants)
	return &c
}

func cloneGrants(gs []Grant) []Grant {
	if gs == nil {
		return nil
	}
	out := make([]Grant, len(gs))
	for i, g := range gs {
		out[i] = g
		if g.Constraints != nil {
			out[i].Constraints = make(map[string]json.RawMessage, len(g.Constraints))
			for k, v := range g.Constraints {
				out[i].Constraints[k] = slices.Clone(v)
			}
		}
		if g.ExpiresAt != nil {
			t := *g.ExpiresAt
			out[i].ExpiresAt = &t
		}
	}
	return out
}

// LoadDirectoryFile reads a directory fixture file; see ParseDirectory for
// its format.
func LoadDirectoryFile(path string) (*MemoryDirectory, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("agentauth: directory file: %w", err)
	}
	defer f.Close()
	d, err := ParseDirectory(f)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return d, nil
}

// ParseDirectory reads a directory fixture: one JSON object with the
// protocol's field names,
//
//	{"hosts":  [{"id", "public_key" | "jwks_url", "user_id", "status",
//	             "default_capabilities"}],
//	 "agents": [{"id", "host_id", "user_id", "mode", "status",
//	             "public_key" | "jwks_url" + "kid",
//	             "agent_capability_grants": [{"capability", "status",
//	                                          "constraints", "expires_at"}]}]}
//
// where public_key is an Ed25519 public JWK object and expires_at is an
// RFC 3339 time. Parsing is strict: member names are case-sensitive,
// unknown or duplicate members, wrong JSON types and trailing data are
// errors, and every record is validated as by PutHost and PutAgent. Errors
// name the offending host or agent by index and id.
func ParseDirectory(r io.Reader) (*MemoryDirectory, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxDirectoryFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("agentauth: directory: %w", err)
	}
	if len(data) > maxDirectoryFileBytes {
		return nil, fmt.Errorf("agentauth: directory: larger than %d bytes", maxDirectoryFileBytes)
	}
	if err := checkNoDuplicates(data); err != nil {
		return nil, fmt.Errorf("agentauth: directory: %w", err)
	}
	top, err := decodeObject(data)
	if err != nil {
		return nil, fmt.Errorf("agentauth: directory: %w", err)
	}
	if err := onlyMembers(top, "hosts", "agents"); err != nil {
		return nil, fmt.Errorf("agentauth: directory: %w", err)
	}
	hosts, err := objectArray(top, "hosts")
	if err != nil {
		return nil, fmt.Errorf("agentauth: directory: %w", err)
	}
	agents, err := objectArray(top, "agents")
	if err != nil {
		return nil, fmt.Errorf("agentauth: directory: %w", err)
	}
	d := NewMemoryDirectory()
	for i, raw := range hosts {
		h, err := parseFixtureHost(raw)
		if err == nil {
			if _, dup := d.hosts[h.ID]; dup {
				err = errors.New("duplicate host id")
			}
		}
		if err == nil {
			err = validateHost(h)
		}
		var thumb string
		if err == nil {
			thumb, err = hostThumbprint(h)
		}
		if err != nil {
			return nil, fmt.Errorf("agentauth: directory: hosts[%d]%s: %w", i, idSuffix(raw), err)
		}
		d.hosts[h.ID] = h
		if thumb != "" {
			d.byThumb[thumb] = h.ID
		}
	}
	for i, raw := range agents {
		a, err := parseFixtureAgent(raw)
		if err == nil {
			if _, dup := d.agents[a.ID]; dup {
				err = errors.New("duplicate agent id")
			}
		}
		if err == nil {
			err = validateAgent(a)
		}
		if err == nil {
			if _, ok := d.hosts[a.HostID]; !ok {
				err = fmt.Errorf("host_id %q names no host in the file", a.HostID)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("agentauth: directory: agents[%d]%s: %w", i, idSuffix(raw), err)
		}
		d.agents[a.ID] = a
	}
	return d, nil
}

// idSuffix names a record by its id in an error, when one can be read.
func idSuffix(raw json.RawMessage) string {
	var rec struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &rec) != nil || rec.ID == "" {
		return ""
	}
	return fmt.Sprintf(" (id %q)", rec.ID)
}

func parseFixtureHost(raw json.RawMessage) (*Host, error) {
	m, err := decodeObject(raw)
	if err != nil {
		return nil, err
	}
	if err := onlyMembers(m, "id", "public_key", "jwks_url", "user_id", "status", "default_capabilities"); err != nil {
		return nil, err
	}
	h := &Host{}
	if h.ID, err = optString(m, "id"); err != nil {
		return nil, err
	}
	if h.PublicKey, err = optObject(m, "public_key"); err != nil {
		return nil, err
	}
	if h.JWKSURL, err = optString(m, "jwks_url"); err != nil {
		return nil, err
	}
	if h.UserID, err = optNullableString(m, "user_id"); err != nil {
		return nil, err
	}
	if h.Status, err = optString(m, "status"); err != nil {
		return nil, err
	}
	if raw, ok := m["default_capabilities"]; ok {
		if h.DefaultCapabilities, err = parseStringArray(raw); err != nil {
			return nil, fmt.Errorf(`"default_capabilities": %w`, err)
		}
	}
	return h, nil
}

func parseFixtureAgent(raw json.RawMessage) (*Agent, error) {
	m, err := decodeObject(raw)
	if err != nil {
		return nil, err
	}
	if err := onlyMembers(m, "id", "host_id", "user_id", "mode", "status", "public_key", "jwks_url", "kid", "agent_capability_grants"); err != nil {
		return nil, err
	}
	a := &Agent{}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"id", &a.ID}, {"host_id", &a.HostID}, {"mode", &a.Mode}, {"status", &a.Status}, {"jwks_url", &a.JWKSURL}, {"kid", &a.KID}} {
		if *f.dst, err = optString(m, f.name); err != nil {
			return nil, err
		}
	}
	if a.UserID, err = optNullableString(m, "user_id"); err != nil {
		return nil, err
	}
	if a.PublicKey, err = optObject(m, "public_key"); err != nil {
		return nil, err
	}
	grants, err := objectArray(m, "agent_capability_grants")
	if err != nil {
		return nil, err
	}
	a.Grants = make([]Grant, 0, len(grants))
	for i, raw := range grants {
		g, err := parseFixtureGrant(raw)
		if err != nil {
			return nil, fmt.Errorf("agent_capability_grants[%d]: %w", i, err)
		}
		a.Grants = append(a.Grants, g)
	}
	return a, nil
}

func parseFixtureGrant(raw json.RawMessage) (Grant, error) {
	var g Grant
	m, err := decodeObject(raw)
	if err != nil {
		return g, err
	}
	if err := onlyMembers(m, "capability", "status", "constraints", "expires_at"); err != nil {
		return g, err
	}
	if g.Capability, err = optString(m, "capability"); err != nil {
		return g, err
	}
	if g.Status, err = optString(m, "status"); err != nil {
		return g, err
	}
	if raw, ok := m["constraints"]; ok && string(raw) != "null" {
		if g.Constraints, err = decodeObject(raw); err != nil {
			return g, fmt.Errorf(`"constraints": %w`, err)
		}
	}
	if g.ExpiresAt, err = optTime(m, "expires_at"); err != nil {
		return g, err
	}
	return g, nil
}

// onlyMembers refuses any member of m not named in allowed.
func onlyMembers(m map[string]json.RawMessage, allowed ...string) error {
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(allowed, name) {
			return fmt.Errorf("unknown member %q", name)
		}
	}
	return nil
}

// objectArray returns the elements of an optional array member, each
// checked to be an object later by its parser.
func objectArray(m map[string]json.RawMessage, name string) ([]json.RawMessage, error) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '[' {
		return nil, fmt.Errorf("%q is not an array", name)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%q: %w", name, err)
	}
	return items, nil
}

func optObject(m map[string]json.RawMessage, name string) (json.RawMessage, error) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("%q is not an object", name)
	}
	return slices.Clone(raw), nil
}

// optNullableString reads a string member the protocol allows to be null.
func optNullableString(m map[string]json.RawMessage, name string) (string, error) {
	if string(m[name]) == "null" {
		return "", nil
	}
	return optString(m, name)
}

// optTime reads an optional RFC 3339 time member; null means absent.
func optTime(m map[string]json.RawMessage, name string) (*time.Time, error) {
	if raw, ok := m[name]; !ok || string(raw) == "null" {
		return nil, nil
	}
	s, err := optString(m, name)
	if err != nil {
		return nil, err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, fmt.Errorf("%q is not an RFC 3339 time: %w", name, err)
	}
	return &t, nil
}
