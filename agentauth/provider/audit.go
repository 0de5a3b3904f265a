package provider

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/core"
)

// auditTimeout bounds one audit write. Writes do not end with the
// request: the change they record has happened.
const auditTimeout = 5 * time.Second

// withRequestInfo names r for the audit records of what it changes: its
// X-Request-Id (or a new id, sent back in that header) and its client
// address as RateLimits.ClientIP reads it. Without Config.Audit it
// returns r.
func (p *Provider) withRequestInfo(w http.ResponseWriter, r *http.Request) *http.Request {
	if p.audit == nil {
		return r
	}
	id := agentcap.RequestID(r.Header.Get(agentcap.HeaderRequestID))
	w.Header().Set(agentcap.HeaderRequestID, id)
	ip := p.limits.cfg.ClientIP(r)
	if host, _, err := net.SplitHostPort(ip); err == nil {
		ip = host
	}
	return r.WithContext(core.WithRequestInfo(r.Context(), core.RequestInfo{ID: id, ClientIP: ip}))
}

// record writes a record of a change to Config.Audit, with the request
// that made it. A record that cannot be written is logged: the change
// stands.
func (p *Provider) record(ctx context.Context, r audit.Record) {
	if p.audit == nil {
		return
	}
	r.Time = p.now()
	if r.Outcome == "" {
		r.Outcome = audit.OutcomeOK
	}
	if info, ok := core.RequestInfoFrom(ctx); ok {
		r.RequestID, r.ClientIP = info.ID, info.ClientIP
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	if err := p.audit.Write(wctx, r); err != nil {
		p.logger.ErrorContext(ctx, "agentauth/provider: audit record not written", "event", r.Event,
			"agent", r.AgentID, "host", r.HostID, "error", err.Error())
	}
}

// agentRecord is a record about agent a of host h (either may be nil),
// for the user they act for.
func agentRecord(event string, a *store.Agent, h *store.Host, detail string) audit.Record {
	r := audit.Record{Event: event, Detail: detail}
	if h != nil {
		r.HostID, r.UserID = h.ID, h.UserID
	}
	if a != nil {
		r.AgentID, r.HostID = a.ID, a.HostID
		if a.UserID != "" {
			r.UserID = a.UserID
		}
	}
	return r
}

// grantSummary describes grants for a record's detail: "a (active), b
// (pending)".
func grantSummary(gs []store.Grant) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = g.Capability + " (" + g.Status + ")"
	}
	return strings.Join(parts, ", ")
}

// decisionDetail describes a decision for its record.
func decisionDetail(v *Approval, allowed []string, deny bool) string {
	requested := make([]string, len(v.Capabilities))
	for i, c := range v.Capabilities {
		requested[i] = c.Name
	}
	switch {
	case deny:
		return fmt.Sprintf("%s denied: %s", v.Kind, strings.Join(requested, ", "))
	case len(allowed) == len(requested):
		return fmt.Sprintf("%s approved: %s", v.Kind, strings.Join(allowed, ", "))
	}
	return fmt.Sprintf("%s approved: %s (of %s)", v.Kind, strings.Join(allowed, ", "), strings.Join(requested, ", "))
}

// registrationDetail describes a new agent for its record.
func registrationDetail(a *store.Agent, active bool) string {
	status := agentcap.StatusPending
	if active {
		status = agentcap.StatusActive
	}
	d := a.Mode + " agent, " + status
	if len(a.Grants) > 0 {
		d += "; " + grantSummary(a.Grants)
	}
	return d
}

// namedRequests serves with serve, each request named for the audit
// records of what it changes (see withRequestInfo).
func (p *Provider) namedRequests(serve http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serve(w, p.withRequestInfo(w, r))
	})
}
