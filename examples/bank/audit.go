package main

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentcap/agentcap/audit"
	auditpg "github.com/agentcap/agentcap/audit/pgstore"
	auditsqlite "github.com/agentcap/agentcap/audit/sqlitestore"
)

// Audit retention: records older than auditKeep are deleted, checked
// every auditSweepEvery.
const (
	auditKeep       = 90 * 24 * time.Hour
	auditSweepEvery = time.Hour
)

// openAudit opens the bank's audit trail beside its other records: in
// PostgreSQL with -postgres, else in the SQLite file of -db. It starts
// the retention sweep, which ends with ctx.
func openAudit(ctx context.Context, cfg config, sh *shared, logger *slog.Logger) (audit.Store, error) {
	var (
		st  audit.Store
		err error
	)
	if sh.pool != nil {
		st, err = auditpg.New(ctx, sh.pool)
	} else {
		st, err = auditsqlite.Open(ctx, cfg.db)
	}
	if err != nil {
		return nil, err
	}
	go audit.Retention(ctx, st, auditKeep, auditSweepEvery, func(_ int64, err error) {
		if err != nil {
			logger.Warn("audit retention sweep", "error", err.Error())
		}
	})
	return st, nil
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
