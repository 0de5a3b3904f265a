package bank

import (
	"context"
	"time"

	"github.com/agentcap/agentcap/confirm"
)

// confirmSweepEvery is how often forgotten tokens are deleted from the
// SQL database.
const confirmSweepEvery = time.Minute

// NewConfirmer returns the manager of the tokens that confirm transfers,
// over the store s names: Redis (under "bank:confirm:") when set, else
// the SQL database, else memory. With the SQL database, forgotten tokens
// are deleted every minute until ctx ends.
func NewConfirmer(ctx context.Context, s Stores) (*confirm.Manager, error) {
	var st confirm.Store
	switch {
	case s.Redis != nil:
		st = s.Redis.Confirm()
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
	return confirm.New(confirm.Config{Store: st})
}
