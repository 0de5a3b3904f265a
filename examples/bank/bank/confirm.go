package bank

import (
	"context"
	"fmt"
	"time"

	"github.com/agentcap/agentcap/confirm"
	confirmpg "github.com/agentcap/agentcap/confirm/pgstore"
	"github.com/agentcap/agentcap/redisstore"
)

// confirmSweepEvery is how often forgotten tokens are deleted from
// PostgreSQL.
const confirmSweepEvery = time.Minute

// NewConfirmer returns the manager of the tokens that confirm transfers,
// over the store s names: Redis (under "bank:confirm:") when set, else
// PostgreSQL, else memory. Tokens live five minutes, so one instance
// keeps them in memory even when it keeps its jobs in a file. With
// PostgreSQL, forgotten tokens are deleted every minute until ctx ends.
// The returned function closes what NewConfirmer opened.
func NewConfirmer(ctx context.Context, s Stores) (*confirm.Manager, func() error, error) {
	var (
		st    confirm.Store
		close = func() error { return nil }
	)
	switch {
	case s.Redis != nil:
		rs, err := redisstore.New(ctx, s.Redis, redisstore.Config{Prefix: s.redisPrefix()})
		if err != nil {
			return nil, nil, fmt.Errorf("bank: confirmation store: %w", err)
		}
		st = rs.Confirm()
	case s.Postgres != nil:
		pst, err := confirmpg.New(ctx, s.Postgres)
		if err != nil {
			return nil, nil, fmt.Errorf("bank: confirmation store: %w", err)
		}
		st, close = pst, pst.Close
		go func() {
			t := time.NewTicker(confirmSweepEvery)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					// A failed sweep leaves rows that are ignored anyway;
					// the next one deletes them.
					_, _ = pst.Sweep(ctx)
				}
			}
		}()
	}
	m, err := confirm.New(confirm.Config{Store: st})
	if err != nil {
		_ = close()
		return nil, nil, err
	}
	return m, close, nil
}
