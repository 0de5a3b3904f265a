package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
)

// memory is the Store of NewMemory.
type memory struct {
	now func() time.Time

	mu         sync.RWMutex
	closed     bool
	hosts      map[string]*Host
	hostByTP   map[string]string // thumbprint -> host id
	hostByJWKS map[string]string // JWKS URL -> host id
	agents     map[string]*Agent
	agentByTP  map[[2]string]string       // host id, thumbprint -> agent id
	hostAgents map[string]map[string]bool // host id -> agent ids
	approvals  map[string]*memApproval
	approvalBy map[string]string    // "u:"+user code digest or "d:"+device code digest -> approval id
	passkeys   map[string]*Passkey  // credential id -> passkey
	nonces     map[string]time.Time // UseNonce key -> expiry
}

// memApproval is an approval with the digests of its codes.
type memApproval struct {
	Approval
	userHash, deviceHash string
}

var _ Store = (*memory)(nil)

// NewMemory returns an empty Store held in memory, for tests, examples
// and single-process applications that can lose their state on restart.
// One lock guards all of it, which makes every method trivially atomic,
// cascades included; reads share the lock. It reads bookkeeping times
// (created_at when left zero, updated_at, and the present that Host and
// Agent compare expiry with) from now; nil means time.Now.
func NewMemory(now func() time.Time) Store {
	if now == nil {
		now = time.Now
	}
	return &memory{
		now:        now,
		hosts:      make(map[string]*Host),
		hostByTP:   make(map[string]string),
		hostByJWKS: make(map[string]string),
		agents:     make(map[string]*Agent),
		agentByTP:  make(map[[2]string]string),
		hostAgents: make(map[string]map[string]bool),
		approvals:  make(map[string]*memApproval),
		approvalBy: make(map[string]string),
		passkeys:   make(map[string]*Passkey),
		nonces:     make(map[string]time.Time),
	}
}

// Close implements Store. Every later call fails.
func (m *memory) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return nil
}

func (m *memory) check(ctx context.Context) error {
	if m.closed {
		return errClosed
	}
	return ctx.Err()
}

var errClosed = fmt.Errorf("store: closed")

func notFound(kind, id string) error {
	return fmt.Errorf("store: %s %q: %w", kind, id, ErrNotFound)
}

func conflict(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConflict, fmt.Sprintf(format, args...))
}

// Host implements agentauth.Directory.
func (m *memory) Host(ctx context.Context, id string) (*agentauth.Host, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	h, err := m.hostLocked(ctx, id)
	if err != nil {
		return nil, err
	}
	return h.DirectoryHost(), nil
}

// Agent implements agentauth.Directory. It is on the path of every
// verified request, so it copies the record once, straight into the
// directory's shape.
func (m *memory) Agent(ctx context.Context, id string) (*agentauth.Agent, error) {
	now := m.now()
	m.mu.RLock()
	defer m.mu.RUnlock()
	a, err := m.agentLocked(ctx, id)
	if err != nil {
		return nil, err
	}
	return a.DirectoryAgent(now), nil
}

// CreateHost implements Store.
func (m *memory) CreateHost(ctx context.Context, h *Host) error {
	c, err := PrepareHost(h, m.now())
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return err
	}
	if _, ok := m.hosts[c.ID]; ok {
		return conflict("host %q exists", c.ID)
	}
	if _, ok := m.hostByTP[c.Thumbprint]; ok {
		return conflict("a host with thumbprint %q exists", c.Thumbprint)
	}
	if _, ok := m.hostByJWKS[c.JWKSURL]; ok && c.JWKSURL != "" {
		return conflict("a host with JWKS URL %q exists", c.JWKSURL)
	}
	m.hosts[c.ID] = c
	m.hostByTP[c.Thumbprint] = c.ID
	if c.JWKSURL != "" {
		m.hostByJWKS[c.JWKSURL] = c.ID
	}
	return nil
}

// GetHost implements Store.
func (m *memory) GetHost(ctx context.Context, id string) (*Host, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	h, ok := m.hosts[id]
	if !ok {
		return nil, notFound("host", id)
	}
	return cloneHost(h), nil
}

// HostByThumbprint implements Store.
func (m *memory) HostByThumbprint(ctx context.Context, thumbprint string) (*Host, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	id, ok := m.hostByTP[thumbprint]
	if !ok {
		return nil, notFound("host with thumbprint", thumbprint)
	}
	return cloneHost(m.hosts[id]), nil
}

// HostByKeyThumbprint implements Store.
func (m *memory) HostByKeyThumbprint(ctx context.Context, thumbprint string) (*agentauth.Host, error) {
	h, err := m.HostByThumbprint(ctx, thumbprint)
	if err != nil {
		return nil, err
	}
	return h.DirectoryHost(), nil
}

// HostByJWKSURL implements Store.
func (m *memory) HostByJWKSURL(ctx context.Context, url string) (*Host, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	id, ok := m.hostByJWKS[url]
	if !ok || url == "" {
		return nil, notFound("host with JWKS URL", url)
	}
	return cloneHost(m.hosts[id]), nil
}

// UpdateHostStatus implements Store.
func (m *memory) UpdateHostStatus(ctx context.Context, id string, from []string, to string) (int, error) {
	if err := CheckHostStatus(to); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h, err := m.hostLocked(ctx, id)
	if err != nil {
		return 0, err
	}
	if err := CheckStatus("host", id, h.Status, from); err != nil {
		return 0, err
	}
	now := normTime(m.now())
	h.Status, h.UpdatedAt = to, now
	n := 0
	if to == agentcap.StatusRevoked || to == agentcap.StatusRejected {
		for aid := range m.hostAgents[id] {
			a := m.agents[aid]
			if slices.Contains(liveAgentStatuses, a.Status) {
				a.Status, a.UpdatedAt = to, now
				n++
			}
		}
	}
	return n, nil
}

// liveAgentStatuses are the agent states a host's revocation, rejection
// or linking still changes.
var liveAgentStatuses = []string{agentcap.StatusPending, agentcap.StatusActive, agentcap.StatusExpired}

// LinkHostUser implements Store.
func (m *memory) LinkHostUser(ctx context.Context, id, userID string) ([]string, error) {
	if userID == "" {
		return nil, invalid("user id is empty")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h, err := m.hostLocked(ctx, id)
	if err != nil {
		return nil, err
	}
	switch h.UserID {
	case userID:
		return nil, nil
	case "":
	default:
		return nil, conflict("host %q is linked to another user", id)
	}
	now := normTime(m.now())
	h.UserID, h.UpdatedAt = userID, now
	var claimed []string
	for aid := range m.hostAgents[id] {
		a := m.agents[aid]
		switch {
		case a.Mode == agentcap.ModeAutonomous && slices.Contains(liveAgentStatuses, a.Status):
			a.Status, a.UserID, a.UpdatedAt = agentcap.StatusClaimed, userID, now
			for i := range a.Grants {
				g := &a.Grants[i]
				g.Status, g.DeniedBy, g.Reason, g.UpdatedAt = agentcap.StatusDenied, ClaimedBy, ClaimedReason, now
			}
			claimed = append(claimed, aid)
		case a.Mode == agentcap.ModeDelegated && a.UserID == "":
			a.UserID, a.UpdatedAt = userID, now
		}
	}
	slices.Sort(claimed)
	return claimed, nil
}

// SetHostDefaultCapabilities implements Store.
func (m *memory) SetHostDefaultCapabilities(ctx context.Context, id string, capabilities []string) error {
	if err := CheckCapabilityNames(capabilities); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h, err := m.hostLocked(ctx, id)
	if err != nil {
		return err
	}
	h.DefaultCapabilities, h.UpdatedAt = cloneStrings(capabilities), normTime(m.now())
	return nil
}

// RotateHostKey implements Store.
func (m *memory) RotateHostKey(ctx context.Context, id, fromThumbprint string, publicKey json.RawMessage, thumbprint string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, err := m.hostLocked(ctx, id)
	if err != nil {
		return err
	}
	tp, err := CheckHostKey(h.JWKSURL, publicKey, thumbprint)
	if err != nil {
		return err
	}
	if h.Thumbprint != fromThumbprint {
		return conflict("host %q key was rotated already", id)
	}
	if other, ok := m.hostByTP[tp]; ok && other != id {
		return conflict("a host with thumbprint %q exists", tp)
	}
	delete(m.hostByTP, h.Thumbprint)
	m.hostByTP[tp] = id
	h.Thumbprint, h.UpdatedAt = tp, normTime(m.now())
	if h.JWKSURL == "" {
		h.PublicKey = cloneRaw(publicKey)
	}
	return nil
}

// TouchHost implements Store.
func (m *memory) TouchHost(ctx context.Context, id string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, err := m.hostLocked(ctx, id)
	if err != nil {
		return err
	}
	now = normTime(now)
	if h.LastUsedAt == nil || now.After(*h.LastUsedAt) {
		h.LastUsedAt = &now
	}
	h.UpdatedAt = normTime(m.now())
	return nil
}

func (m *memory) hostLocked(ctx context.Context, id string) (*Host, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	h, ok := m.hosts[id]
	if !ok {
		return nil, notFound("host", id)
	}
	return h, nil
}

func (m *memory) agentLocked(ctx context.Context, id string) (*Agent, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	a, ok := m.agents[id]
	if !ok {
		return nil, notFound("agent", id)
	}
	return a, nil
}

// CreateAgent implements Store.
func (m *memory) CreateAgent(ctx context.Context, a *Agent) error {
	c, err := PrepareAgent(a, m.now())
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h, err := m.hostLocked(ctx, c.HostID)
	if err != nil {
		return err
	}
	if h.Status == agentcap.StatusRevoked || h.Status == agentcap.StatusRejected {
		return &StatusError{Kind: "host", ID: h.ID, Status: h.Status, Want: []string{agentcap.StatusActive, agentcap.StatusPending}}
	}
	if _, ok := m.agents[c.ID]; ok {
		return conflict("agent %q exists", c.ID)
	}
	tpKey := [2]string{c.HostID, c.Thumbprint}
	if _, ok := m.agentByTP[tpKey]; ok && c.Thumbprint != "" {
		return conflict("host %q has an agent with key thumbprint %q", c.HostID, c.Thumbprint)
	}
	m.agents[c.ID] = c
	if c.Thumbprint != "" {
		m.agentByTP[tpKey] = c.ID
	}
	if m.hostAgents[c.HostID] == nil {
		m.hostAgents[c.HostID] = make(map[string]bool)
	}
	m.hostAgents[c.HostID][c.ID] = true
	return nil
}

// GetAgent implements Store.
func (m *memory) GetAgent(ctx context.Context, id string) (*Agent, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	a, err := m.agentLocked(ctx, id)
	if err != nil {
		return nil, err
	}
	return cloneAgent(a), nil
}

// AgentByThumbprint implements Store.
func (m *memory) AgentByThumbprint(ctx context.Context, hostID, thumbprint string) (*Agent, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	id, ok := m.agentByTP[[2]string{hostID, thumbprint}]
	if !ok || thumbprint == "" {
		return nil, notFound("agent with thumbprint", thumbprint)
	}
	return cloneAgent(m.agents[id]), nil
}

// ListAgents implements Store.
func (m *memory) ListAgents(ctx context.Context, hostID string) ([]*Agent, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	out := make([]*Agent, 0, len(m.hostAgents[hostID]))
	for id := range m.hostAgents[hostID] {
		out = append(out, cloneAgent(m.agents[id]))
	}
	slices.SortFunc(out, compareAgents)
	return out, nil
}

// compareAgents orders agents oldest first, then by id.
func compareAgents(a, b *Agent) int { return compareCreated(a.CreatedAt, b.CreatedAt, a.ID, b.ID) }

// UpdateAgentStatus implements Store.
func (m *memory) UpdateAgentStatus(ctx context.Context, id string, from []string, to string) error {
	if err := CheckAgentStatus(to); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.agentLocked(ctx, id)
	if err != nil {
		return err
	}
	if err := CheckStatus("agent", id, a.Status, from); err != nil {
		return err
	}
	a.Status, a.UpdatedAt = to, normTime(m.now())
	return nil
}

// changeAgent runs fn on a copy of the agent and keeps the copy when fn
// succeeds or asks for its change to be kept along with its error.
func (m *memory) changeAgent(ctx context.Context, id string, fn func(a *Agent) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.agentLocked(ctx, id)
	if err != nil {
		return err
	}
	c := cloneAgent(a)
	err = fn(c)
	if err != nil && c.Status == a.Status {
		return err
	}
	c.UpdatedAt = normTime(m.now())
	m.agents[id] = c
	return err
}

// ActivateAgent implements Store.
func (m *memory) ActivateAgent(ctx context.Context, id string, from []string, now time.Time, p Policy) error {
	return m.changeAgent(ctx, id, func(a *Agent) error { return Activate(a, from, now, p) })
}

// ReactivateAgent implements Store.
func (m *memory) ReactivateAgent(ctx context.Context, id, to string, grants []Grant, now time.Time, p Policy) error {
	gs, err := PrepareGrants(grants, m.now())
	if err != nil {
		return err
	}
	return m.changeAgent(ctx, id, func(a *Agent) error { return Reactivate(a, to, gs, now, p) })
}

// TouchAgent implements Store.
func (m *memory) TouchAgent(ctx context.Context, id string, now time.Time, p Policy) error {
	return m.changeAgent(ctx, id, func(a *Agent) error { return Touch(a, now, p) })
}

// RotateAgentKey implements Store.
func (m *memory) RotateAgentKey(ctx context.Context, id string, key AgentKey) error {
	k, err := PrepareAgentKey(key)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.agentLocked(ctx, id)
	if err != nil {
		return err
	}
	if err := CheckStatus("agent", id, a.Status, liveAgentStatuses); err != nil {
		return err
	}
	newTP := [2]string{a.HostID, k.Thumbprint}
	if other, ok := m.agentByTP[newTP]; ok && k.Thumbprint != "" && other != id {
		return conflict("host %q has an agent with key thumbprint %q", a.HostID, k.Thumbprint)
	}
	if a.Thumbprint != "" {
		delete(m.agentByTP, [2]string{a.HostID, a.Thumbprint})
	}
	if k.Thumbprint != "" {
		m.agentByTP[newTP] = id
	}
	a.AgentKey, a.UpdatedAt = k, normTime(m.now())
	return nil
}

// PutGrants implements Store.
func (m *memory) PutGrants(ctx context.Context, agentID string, grants []Grant) error {
	gs, err := PrepareGrants(grants, m.now())
	if err != nil {
		return err
	}
	return m.changeAgent(ctx, agentID, func(a *Agent) error {
		for _, g := range gs {
			i, found := slices.BinarySearchFunc(a.Grants, g.Capability, func(e Grant, c string) int { return compareStrings(e.Capability, c) })
			if found {
				g.CreatedAt = a.Grants[i].CreatedAt
				a.Grants[i] = g
			} else {
				a.Grants = slices.Insert(a.Grants, i, g)
			}
		}
		return nil
	})
}

// ReplaceGrants implements Store.
func (m *memory) ReplaceGrants(ctx context.Context, agentID string, grants []Grant) error {
	gs, err := PrepareGrants(grants, m.now())
	if err != nil {
		return err
	}
	return m.changeAgent(ctx, agentID, func(a *Agent) error {
		a.Grants = gs
		return nil
	})
}

// UpdateGrantStatus implements Store.
func (m *memory) UpdateGrantStatus(ctx context.Context, agentID, capability string, c GrantChange) error {
	if err := CheckGrantChange(c); err != nil {
		return err
	}
	return m.changeAgent(ctx, agentID, func(a *Agent) error {
		i, found := slices.BinarySearchFunc(a.Grants, capability, func(e Grant, c string) int { return compareStrings(e.Capability, c) })
		if !found {
			return notFound("grant", agentID+"/"+capability)
		}
		return ChangeGrant(&a.Grants[i], agentID, c, m.now())
	})
}

// ListGrants implements Store.
func (m *memory) ListGrants(ctx context.Context, agentID string) ([]Grant, error) {
	a, err := m.GetAgent(ctx, agentID)
	if err != nil {
		return nil, err
	}
	if a.Grants == nil {
		return []Grant{}, nil
	}
	return a.Grants, nil
}

// CreateApproval implements Store.
func (m *memory) CreateApproval(ctx context.Context, a *Approval) error {
	c, err := PrepareApproval(a, m.now())
	if err != nil {
		return err
	}
	ma := &memApproval{Approval: *c, userHash: HashCode(c.UserCode), deviceHash: HashCode(c.DeviceCode)}
	ma.UserCode, ma.DeviceCode = "", ""
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return err
	}
	if c.AgentID != "" {
		if _, ok := m.agents[c.AgentID]; !ok {
			return notFound("agent", c.AgentID)
		}
	}
	if c.HostID != "" {
		if _, ok := m.hosts[c.HostID]; !ok {
			return notFound("host", c.HostID)
		}
	}
	if _, ok := m.approvals[c.ID]; ok {
		return conflict("approval %q exists", c.ID)
	}
	if _, ok := m.approvalBy["u:"+ma.userHash]; ok && ma.userHash != "" {
		return conflict("the user code is in use")
	}
	if _, ok := m.approvalBy["d:"+ma.deviceHash]; ok && ma.deviceHash != "" {
		return conflict("the device code is in use")
	}
	m.approvals[c.ID] = ma
	if ma.userHash != "" {
		m.approvalBy["u:"+ma.userHash] = c.ID
	}
	if ma.deviceHash != "" {
		m.approvalBy["d:"+ma.deviceHash] = c.ID
	}
	return nil
}

// GetApproval implements Store.
func (m *memory) GetApproval(ctx context.Context, id string) (*Approval, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	a, err := m.approvalLocked(ctx, id)
	if err != nil {
		return nil, err
	}
	return cloneApproval(&a.Approval), nil
}

func (m *memory) approvalLocked(ctx context.Context, id string) (*memApproval, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	a, ok := m.approvals[id]
	if !ok {
		return nil, notFound("approval", id)
	}
	return a, nil
}

// ApprovalByUserCode implements Store.
func (m *memory) ApprovalByUserCode(ctx context.Context, code string) (*Approval, error) {
	return m.approvalByCode(ctx, "u:", code)
}

// ApprovalByDeviceCode implements Store.
func (m *memory) ApprovalByDeviceCode(ctx context.Context, code string) (*Approval, error) {
	return m.approvalByCode(ctx, "d:", code)
}

func (m *memory) approvalByCode(ctx context.Context, prefix, code string) (*Approval, error) {
	h := HashCode(code)
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	id, ok := m.approvalBy[prefix+h]
	if !ok || code == "" {
		// The code is a secret: it stays out of the error.
		return nil, notFound("approval", "by code")
	}
	return cloneApproval(&m.approvals[id].Approval), nil
}

// ListApprovals implements Store.
func (m *memory) ListApprovals(ctx context.Context, agentID string) ([]*Approval, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	out := []*Approval{}
	for _, a := range m.approvals {
		if a.AgentID == agentID && agentID != "" {
			out = append(out, cloneApproval(&a.Approval))
		}
	}
	slices.SortFunc(out, compareApprovals)
	return out, nil
}

// PollApproval implements Store.
func (m *memory) PollApproval(ctx context.Context, id string, now time.Time) (*Approval, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.approvalLocked(ctx, id)
	if err != nil {
		return nil, false, err
	}
	slow := Poll(&a.Approval, now)
	a.UpdatedAt = normTime(m.now())
	return cloneApproval(&a.Approval), slow, nil
}

// DecideApproval implements Store.
func (m *memory) DecideApproval(ctx context.Context, id, to, userID string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.approvalLocked(ctx, id)
	if err != nil {
		return err
	}
	c := a.Approval
	err = Decide(&c, to, userID, now)
	if err != nil && c.Status == a.Status {
		return err
	}
	c.UpdatedAt = normTime(m.now())
	a.Approval = c
	return err
}

// Sweep implements Store.
func (m *memory) Sweep(ctx context.Context, now time.Time, p Policy) (SweepResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var r SweepResult
	if err := m.check(ctx); err != nil {
		return r, err
	}
	now = normTime(now)
	stamp := normTime(m.now())
	for id, a := range m.agents {
		switch {
		case a.Status == agentcap.StatusPending:
			if p.PendingTTL > 0 && !now.Before(a.CreatedAt.Add(p.PendingTTL)) {
				m.deleteAgentLocked(id)
				r.AgentsDeleted++
			}
		default:
			switch p.Lapsed(a, now) {
			case agentcap.StatusRevoked:
				a.Status, a.UpdatedAt = agentcap.StatusRevoked, stamp
				r.AgentsRevoked++
			case agentcap.StatusExpired:
				a.Status, a.UpdatedAt = agentcap.StatusExpired, stamp
				r.AgentsExpired++
			}
		}
	}
	if p.PendingTTL > 0 {
		for id, h := range m.hosts {
			if h.Status == agentcap.StatusPending && len(m.hostAgents[id]) == 0 && !now.Before(h.CreatedAt.Add(p.PendingTTL)) {
				m.deleteHostLocked(id)
				r.HostsDeleted++
			}
		}
	}
	for id, a := range m.approvals {
		if !now.Before(a.ExpiresAt) {
			m.deleteApprovalLocked(id)
			r.ApprovalsDeleted++
		}
	}
	for k, exp := range m.nonces {
		if !now.Before(exp) {
			delete(m.nonces, k)
			r.NoncesDeleted++
		}
	}
	return r, nil
}

func (m *memory) deleteAgentLocked(id string) {
	a := m.agents[id]
	delete(m.agents, id)
	if a.Thumbprint != "" {
		delete(m.agentByTP, [2]string{a.HostID, a.Thumbprint})
	}
	delete(m.hostAgents[a.HostID], id)
	if len(m.hostAgents[a.HostID]) == 0 {
		delete(m.hostAgents, a.HostID)
	}
	for aid, ap := range m.approvals {
		if ap.AgentID == id {
			m.deleteApprovalLocked(aid)
		}
	}
}

func (m *memory) deleteHostLocked(id string) {
	h := m.hosts[id]
	delete(m.hosts, id)
	delete(m.hostByTP, h.Thumbprint)
	if h.JWKSURL != "" {
		delete(m.hostByJWKS, h.JWKSURL)
	}
	for aid, ap := range m.approvals {
		if ap.HostID == id {
			m.deleteApprovalLocked(aid)
		}
	}
}

func (m *memory) deleteApprovalLocked(id string) {
	a := m.approvals[id]
	delete(m.approvals, id)
	if a.userHash != "" {
		delete(m.approvalBy, "u:"+a.userHash)
	}
	if a.deviceHash != "" {
		delete(m.approvalBy, "d:"+a.deviceHash)
	}
}
