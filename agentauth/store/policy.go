package store

import (
	"time"

	"github.com/agentcap/agentcap"
)

// Policy holds the lifetime clocks of protocol §2.4 and the cleanup
// threshold of §10.9. A zero duration turns its clock off.
type Policy struct {
	// SessionTTL expires an active agent idle that long since its last
	// request (or activation).
	SessionTTL time.Duration
	// MaxLifetime expires an active agent that long after its last
	// activation, however busy it is.
	MaxLifetime time.Duration
	// AbsoluteLifetime revokes an agent that long after its creation:
	// reactivation never resets it.
	AbsoluteLifetime time.Duration
	// PendingTTL deletes pending agents, and pending hosts left without
	// agents, that long after their creation.
	PendingTTL time.Duration
}

// Deadline returns when a's session ends under p if a makes no further
// request: the earliest of its idle deadline, its max-lifetime deadline
// and its absolute deadline, or nil when every clock is off.
func (p Policy) Deadline(a *Agent) *time.Time {
	var d time.Time
	earliest := func(t time.Time) {
		if d.IsZero() || t.Before(d) {
			d = t
		}
	}
	if p.SessionTTL > 0 {
		earliest(idleSince(a).Add(p.SessionTTL))
	}
	if p.MaxLifetime > 0 {
		earliest(activeSince(a).Add(p.MaxLifetime))
	}
	if p.AbsoluteLifetime > 0 {
		earliest(a.CreatedAt.Add(p.AbsoluteLifetime))
	}
	if d.IsZero() {
		return nil
	}
	d = normTime(d)
	return &d
}

// Lapsed reports what a's clocks make of it at now: StatusRevoked once
// its absolute lifetime has passed, StatusExpired for an active agent
// past its session TTL, max lifetime or stored ExpiresAt, and "" when
// nothing applies. Statuses other than active and expired never lapse
// here: pending agents are cleaned up by PendingTTL, terminal ones stay.
func (p Policy) Lapsed(a *Agent, now time.Time) string {
	switch a.Status {
	case agentcap.StatusActive, agentcap.StatusExpired:
	default:
		return ""
	}
	if p.AbsoluteLifetime > 0 && !now.Before(a.CreatedAt.Add(p.AbsoluteLifetime)) {
		return agentcap.StatusRevoked
	}
	if a.Status != agentcap.StatusActive {
		return ""
	}
	switch {
	case p.SessionTTL > 0 && !now.Before(idleSince(a).Add(p.SessionTTL)),
		p.MaxLifetime > 0 && !now.Before(activeSince(a).Add(p.MaxLifetime)),
		a.ExpiresAt != nil && !now.Before(*a.ExpiresAt):
		return agentcap.StatusExpired
	}
	return ""
}

// absoluteLapsed reports whether a's absolute lifetime has passed at now.
func (p Policy) absoluteLapsed(a *Agent, now time.Time) bool {
	return p.AbsoluteLifetime > 0 && !now.Before(a.CreatedAt.Add(p.AbsoluteLifetime))
}

// idleSince is the start of the idle clock: the latest of the last
// request, the last activation and the creation.
func idleSince(a *Agent) time.Time {
	t := a.CreatedAt
	if a.ActivatedAt != nil && a.ActivatedAt.After(t) {
		t = *a.ActivatedAt
	}
	if a.LastUsedAt != nil && a.LastUsedAt.After(t) {
		t = *a.LastUsedAt
	}
	return t
}

// activeSince is the start of the max-lifetime clock.
func activeSince(a *Agent) time.Time {
	if a.ActivatedAt != nil {
		return *a.ActivatedAt
	}
	return a.CreatedAt
}
