package agentauth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentcap/agentcap/internal/readcheck"
)

type fixedCount uint64

func (c fixedCount) Count(context.Context) (uint64, error) { return uint64(c), nil }

// Before a replay cache that does not settle read checks itself records
// an id, a pending check is settled by reading the count: an id is never
// recorded for records that may be stale.
func TestCheckAndSetSettlesReadCheck(t *testing.T) {
	c := NewMemoryReplayCache(0)
	ctx := context.Background()
	for _, tc := range []struct {
		gen   uint64
		fresh bool
		err   error
	}{{7, true, nil}, {6, false, readcheck.ErrMoved}} {
		cctx, chk := readcheck.With(ctx)
		chk.Defer(fixedCount(7), tc.gen)
		fresh, err := checkAndSet(cctx, c, "k", time.Minute, "agt_1", "hst_1")
		if fresh != tc.fresh || !errors.Is(err, tc.err) {
			t.Fatalf("count 7, read at %d: fresh %v, %v; want %v, %v", tc.gen, fresh, err, tc.fresh, tc.err)
		}
		if _, _, pending := chk.Pending(); tc.err == nil && pending {
			t.Fatal("check still pending after the id was recorded")
		}
		if again, err := c.CheckAndSet(ctx, "k", time.Minute); err != nil || again == tc.fresh {
			t.Fatalf("the id again: fresh %v, %v; want it recorded only when the count had not moved", again, err)
		}
		c = NewMemoryReplayCache(0)
	}
}
