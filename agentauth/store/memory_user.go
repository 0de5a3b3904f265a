package store

import (
	"context"
	"slices"
	"time"
)

// forUser runs read under the read lock for a non-empty user id.
func (m *memory) forUser(ctx context.Context, userID string, read func()) error {
	if err := CheckUserID(userID); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check(ctx); err != nil {
		return err
	}
	read()
	return nil
}

// compareCreated orders records oldest first, then by id.
func compareCreated(a, b time.Time, aID, bID string) int {
	if c := a.Compare(b); c != 0 {
		return c
	}
	return compareStrings(aID, bID)
}

// ListUserHosts implements Store.
func (m *memory) ListUserHosts(ctx context.Context, userID string) ([]*Host, error) {
	out := []*Host{}
	err := m.forUser(ctx, userID, func() {
		for _, h := range m.hosts {
			if h.UserID == userID {
				out = append(out, cloneHost(h))
			}
		}
	})
	slices.SortFunc(out, func(a, b *Host) int { return compareCreated(a.CreatedAt, b.CreatedAt, a.ID, b.ID) })
	return out, err
}

// ListUserAgents implements Store.
func (m *memory) ListUserAgents(ctx context.Context, userID string) ([]*Agent, error) {
	out := []*Agent{}
	err := m.forUser(ctx, userID, func() {
		for _, a := range m.agents {
			if a.UserID == userID || m.hosts[a.HostID].UserID == userID {
				out = append(out, cloneAgent(a))
			}
		}
	})
	slices.SortFunc(out, compareAgents)
	return out, err
}

// ListUserApprovals implements Store.
func (m *memory) ListUserApprovals(ctx context.Context, userID string) ([]*Approval, error) {
	out := []*Approval{}
	err := m.forUser(ctx, userID, func() {
		for _, a := range m.approvals {
			if a.Status != ApprovalPending {
				continue
			}
			mine := a.UserID == userID
			if h, ok := m.hosts[a.HostID]; ok && h.UserID == userID {
				mine = true
			}
			if ag, ok := m.agents[a.AgentID]; ok && ag.UserID == userID {
				mine = true
			}
			if mine {
				out = append(out, cloneApproval(&a.Approval))
			}
		}
	})
	slices.SortFunc(out, compareApprovals)
	return out, err
}

// compareApprovals orders approval requests oldest first.
func compareApprovals(a, b *Approval) int {
	return compareCreated(a.CreatedAt, b.CreatedAt, a.ID, b.ID)
}

// SetHostName implements Store.
func (m *memory) SetHostName(ctx context.Context, id, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h, err := m.hostLocked(ctx, id)
	if err != nil {
		return err
	}
	h.Name, h.UpdatedAt = name, normTime(m.now())
	return nil
}

// SetAgentName implements Store.
func (m *memory) SetAgentName(ctx context.Context, id, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.agentLocked(ctx, id)
	if err != nil {
		return err
	}
	a.Name, a.UpdatedAt = name, normTime(m.now())
	return nil
}
