package bank

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/idempotency"
	idempg "github.com/agentcap/agentcap/idempotency/pgstore"
	idemsqlite "github.com/agentcap/agentcap/idempotency/sqlitestore"
	"github.com/agentcap/agentcap/jobs"
	jobspg "github.com/agentcap/agentcap/jobs/pgstore"
	jobssqlite "github.com/agentcap/agentcap/jobs/sqlitestore"
	"github.com/agentcap/agentcap/redisstore"
)

// Stores says where the bank keeps its jobs (statement_export) and
// idempotency keys (transfer_money retries). Every field is optional;
// the zero Stores keeps both in memory, for one instance.
type Stores struct {
	// Postgres keeps jobs, and idempotency keys unless Redis is set, in
	// PostgreSQL: every instance sharing the database polls every job
	// and honours every key.
	Postgres *pgxpool.Pool
	// Redis keeps idempotency keys and confirmation tokens, in
	// redisstore's layout under RedisPrefix ("bank:" when empty): the
	// keys start with "bank:idem:" and "bank:confirm:".
	Redis       redis.UniversalClient
	RedisPrefix string
	// SQLite is a file for jobs and keys when neither server is given:
	// they survive a restart of a single instance.
	SQLite string
	// Instance names this instance in job records; empty picks one.
	Instance string
}

// redisPrefix is the prefix of the bank's Redis keys.
func (s Stores) redisPrefix() string {
	if s.RedisPrefix == "" {
		return "bank:"
	}
	return s.RedisPrefix
}

// LongRunning is the bank's job runner and idempotency guard.
type LongRunning struct {
	Jobs        *jobs.Manager
	Idempotency *idempotency.Guard
	closers     []func() error
}

// NewLongRunning opens the stores s names and starts the job runner.
// Close stops it and closes what it opened (not the pool or client it
// was given).
func NewLongRunning(ctx context.Context, s Stores) (*LongRunning, error) {
	l := &LongRunning{}
	var (
		js jobs.Store
		is idempotency.Store
	)
	switch {
	case s.Postgres != nil:
		j, err := jobspg.New(ctx, s.Postgres)
		if err != nil {
			return nil, fmt.Errorf("bank: job store: %w", err)
		}
		l.closers = append(l.closers, j.Close)
		js = j
	case s.SQLite != "":
		j, err := jobssqlite.Open(ctx, s.SQLite)
		if err != nil {
			return nil, fmt.Errorf("bank: job store: %w", err)
		}
		l.closers = append(l.closers, j.Close)
		js = j
	}
	switch {
	case s.Redis != nil:
		rs, err := redisstore.New(ctx, s.Redis, redisstore.Config{Prefix: s.redisPrefix()})
		if err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("bank: idempotency store: %w", err)
		}
		is = rs.Idempotency()
	case s.Postgres != nil:
		k, err := idempg.New(ctx, s.Postgres)
		if err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("bank: idempotency store: %w", err)
		}
		l.closers = append(l.closers, k.Close)
		is = k
	case s.SQLite != "":
		k, err := idemsqlite.Open(ctx, s.SQLite)
		if err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("bank: idempotency store: %w", err)
		}
		l.closers = append(l.closers, k.Close)
		is = k
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
