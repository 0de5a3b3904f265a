package bank

import (
	"context"
	"errors"

	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/jobs"
	"github.com/agentcap/agentcap/redisstore"
	"github.com/agentcap/agentcap/sqlstore"
)

// Stores says where the bank keeps its jobs (statement_export) and
// idempotency keys (transfer_money retries). Every field is optional;
// the zero Stores keeps both in memory, for one instance.
type Stores struct {
	// SQL keeps jobs, and idempotency keys unless Redis is set (and, for
	// NewConfirmer, confirmation tokens): in PostgreSQL every instance
	// sharing the database polls every job and honours every key; in an
	// SQLite file they survive a restart of a single instance.
	SQL *sqlstore.DB
	// Redis keeps idempotency keys and confirmation tokens; the bank
	// opens it with the prefix "bank:", so that the keys start with
	// "bank:idem:" and "bank:confirm:".
	Redis *redisstore.Store
	// Instance names this instance in job records; empty picks one.
	Instance string
}

// LongRunning is the bank's job runner and idempotency guard.
type LongRunning struct {
	Jobs        *jobs.Manager
	Idempotency *idempotency.Guard
	closers     []func() error
}

// NewLongRunning opens the stores s names and starts the job runner.
// Close stops it and closes what it opened (not the database or client
// it was given).
func NewLongRunning(ctx context.Context, s Stores) (*LongRunning, error) {
	l := &LongRunning{}
	var (
		js jobs.Store
		is idempotency.Store
	)
	if s.SQL != nil {
		js = s.SQL.Jobs()
	}
	switch {
	case s.Redis != nil:
		is = s.Redis.Idempotency()
	case s.SQL != nil:
		is = s.SQL.Idempotency()
	}
	m, err := jobs.New(jobs.Config{Store: js, Instance: s.Instance})
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	// The runner stops first, so that its last writes reach the stores.
	l.closers = append([]func() error{m.Close}, l.closers...)
	l.Jobs = m
	if l.Idempotency, err = idempotency.New(idempotency.Config{Store: is}); err != nil {
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

// Apply adds the job runner and the idempotency guard to the httpx
// configuration of the bank's capability location, whose status URLs
// live under issuer.
func (l *LongRunning) Apply(hc *httpx.Config, issuer string) {
	hc.LongRunning.Jobs = l.Jobs
	hc.LongRunning.Idempotency = l.Idempotency
	hc.LongRunning.BaseURL = issuer + "/"
}

// Close stops the job runner (jobs still running are failed as
// instance_lost) and closes the stores NewLongRunning opened.
func (l *LongRunning) Close() error {
	var errs []error
	for _, c := range l.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}
