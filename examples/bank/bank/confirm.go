package bank

import (
	"context"
	"fmt"
	"time"

	"github.com/agentcap/agentcap/confirm"
	confirmredis "github.com/agentcap/agentcap/confirm/redisstore"
)

// confirmSweepEvery is how often forgotten tokens are deleted from the
// SQL database.
const confirmSweepEvery = time.Minute

// NewConfirmer returns the manager of the tokens that confirm transfers,
// over the store s names: Redis (under "bank:confirm:") when set, else
// the SQL database, else memory. With the SQL database, forgotten tokens
// are deleted every minute until ctx ends. The returned function closes
// what NewConfirmer opened.
func NewConfirmer(ctx context.Context, s Stores) (*confirm.Manager, func() error, error) {
	var (
		st    confirm.Store
		close = func() error { return nil }
	)
	switch {
	case s.Redis != nil:
		rst, err := confirmredis.New(ctx, s.Redis, confirmredis.Config{Prefix: "bank:confirm:"})
		if err != nil {
			return nil, nil, fmt.Errorf("bank: confirmation store: %w", err)
		}
		st = rst
	case s.SQL != nil:
		sst := s.SQL.Confirm()
		st = sst
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
					_, _ = sst.Sweep(ctx)
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
