package redisstore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/internal/readcheck"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/redisstore"
)

// fixedCount is a count of changes of another source than the Store's.
type fixedCount struct {
	n     uint64
	reads int
}

func (c *fixedCount) Count(context.Context) (uint64, error) {
	c.reads++
	return c.n, nil
}

// commandCounter counts the commands a client sends.
type commandCounter struct{ n atomic.Int64 }

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// A read check on the Store's own count is settled by the replay
// script: the id is recorded when the count still has the value the
// records were read at, and nothing is recorded (ErrMoved) when it has
// moved. A check on another count is settled by reading that count
// before the script. Either way, an id refused for a moved count is
// recorded by a later call without a check.
func TestReplaySettlesReadChecks(t *testing.T) {
	client, base := servicetest.Redis(t)
	st := newStore(t, client, redisstore.Config{Prefix: base})
	c, changes := st.Replay(), st.Changes()
	ctx := context.Background()
	n, err := changes.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	commands := &commandCounter{}
	client.AddHook(commands)
	record := func(src readcheck.Counter, gen uint64, key string, owners bool) (*readcheck.Check, bool, error) {
		t.Helper()
		cctx, chk := readcheck.With(ctx)
		if !chk.Defer(src, gen) {
			t.Fatal("Defer refused the first question")
		}
		if owners {
			fresh, err := c.CheckAndSetFor(cctx, key, time.Minute, "agt_1", "hst_1")
			return chk, fresh, err
		}
		fresh, err := c.CheckAndSet(cctx, key, time.Minute)
		return chk, fresh, err
	}
	unrecorded := func(key string) {
		t.Helper()
		if fresh, err := c.CheckAndSetFor(ctx, key, time.Minute, "agt_1", "hst_1"); err != nil || !fresh {
			t.Fatalf("%s after a moved count: fresh %v, %v; want it unrecorded", key, fresh, err)
		}
	}
	// The first run of the script loads it (EVALSHA, then EVAL).
	if _, _, err := record(changes, n, "warm", true); err != nil {
		t.Fatal(err)
	}
	for _, owners := range []bool{true, false} {
		prefix := "plain:"
		if owners {
			prefix = "owners:"
		}
		before := commands.n.Load()
		chk, fresh, err := record(changes, n, prefix+"a", owners)
		if _, _, pending := chk.Pending(); err != nil || !fresh || pending {
			t.Fatalf("%sa, count unmoved: fresh %v, %v, pending %v; want recorded and settled", prefix, fresh, err, pending)
		}
		// With owners, the check rides in the script: one command.
		if sent, want := commands.n.Load()-before, map[bool]int64{true: 1, false: 2}[owners]; sent != want {
			t.Fatalf("%sa: %d commands sent, want %d", prefix, sent, want)
		}
		if _, fresh, err := record(changes, n, prefix+"a", owners); err != nil || fresh {
			t.Fatalf("%sa again: fresh %v, %v; want seen", prefix, fresh, err)
		}
		if _, fresh, err := record(changes, n+1, prefix+"b", owners); !errors.Is(err, readcheck.ErrMoved) || fresh {
			t.Fatalf("%sb, count moved: fresh %v, %v; want ErrMoved", prefix, fresh, err)
		}
		unrecorded(prefix + "b")
		other := &fixedCount{n: 7}
		chk, fresh, err = record(other, 7, prefix+"c", owners)
		if _, _, pending := chk.Pending(); err != nil || !fresh || pending || other.reads != 1 {
			t.Fatalf("%sc, other count unmoved: fresh %v, %v, pending %v, %d reads; want recorded after one read", prefix, fresh, err, pending, other.reads)
		}
		if _, fresh, err := record(other, 6, prefix+"d", owners); !errors.Is(err, readcheck.ErrMoved) || fresh {
			t.Fatalf("%sd, other count moved: fresh %v, %v; want ErrMoved", prefix, fresh, err)
		}
		unrecorded(prefix + "d")
	}
	// A count Redis lost is a moved one.
	if err := client.Del(ctx, base+"changes").Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := record(changes, n, "owners:e", true); !errors.Is(err, readcheck.ErrMoved) {
		t.Fatalf("count lost: %v; want ErrMoved", err)
	}
	unrecorded("owners:e")
}
