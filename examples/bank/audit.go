package main

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/sqlstore"
)

// Audit retention: records older than auditKeep are deleted, checked
// every auditSweepEvery.
const (
	auditKeep       = 90 * 24 * time.Hour
	auditSweepEvery = time.Hour
)

// openAudit returns the bank's audit trail in db and starts its
// retention sweep, which ends with ctx.
func openAudit(ctx context.Context, db *sqlstore.DB, logger *slog.Logger) audit.Store {
	st := db.Audit()
	go audit.Retention(ctx, st, auditKeep, auditSweepEvery, func(_ int64, err error) {
		if err != nil {
			logger.Warn("audit retention sweep", "error", err.Error())
		}
	})
	return st
}

// forwardedLocation gives the capability location the client address a
// trusted reverse proxy reports (-forwarded-for) as the request's
// RemoteAddr, from which httpx takes the address of audit records.
func forwardedLocation(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2 := r.WithContext(r.Context())
		r2.RemoteAddr = forwardedClient(r)
		h.ServeHTTP(w, r2)
	})
}
