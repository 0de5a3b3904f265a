package redisstore_test

import (
	"context"
	"testing"

	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/redisstore"
	"github.com/agentcap/agentcap/sqlstore"
)

var _ sqlstore.Changes = (*redisstore.Changes)(nil)

// The count of changes is one key that every Store on the same prefix
// reads and moves. A missing count starts at a random value from 2^32
// up to 2^52, and starts again elsewhere once lost.
func TestChanges(t *testing.T) {
	client, base := servicetest.Redis(t)
	ctx := context.Background()
	one := newStore(t, client, redisstore.Config{Prefix: base + "app:"}).Changes()
	other := newStore(t, client, redisstore.Config{Prefix: base + "app:"}).Changes()
	elsewhere := newStore(t, client, redisstore.Config{Prefix: base + "other:"}).Changes()
	count := func(c *redisstore.Changes) uint64 {
		t.Helper()
		n, err := c.Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	start := count(one)
	if start < 1<<32 || start >= 1<<52 || count(one) != start || count(other) != start {
		t.Fatalf("a new count: %d, then %d and %d; want one value from 2^32 to 2^52", start, count(one), count(other))
	}
	for range 3 {
		if err := one.Add(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Add(ctx); err != nil {
		t.Fatal(err)
	}
	if a, b := count(one), count(other); a != start+4 || b != start+4 {
		t.Fatalf("after four moves, counts %d and %d; want %d", a, b, start+4)
	}
	// A count first moved, never read, starts at random too.
	if err := elsewhere.Add(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(elsewhere); n < 1<<32+1 || n == start+4 {
		t.Fatalf("another prefix's count: %d", n)
	}

	// Lost (a Redis restarted without persistence), it starts again.
	if err := client.Del(ctx, base+"app:changes").Err(); err != nil {
		t.Fatal(err)
	}
	if n := count(one); n < 1<<32 || n == start+4 {
		t.Fatalf("a lost count started again at %d, after %d", n, start+4)
	}

	// With Prefixes, under the replay cache's prefix.
	old := redisstore.Prefixes{Confirm: base + "c:", Idempotency: base + "i:", Replay: base + "r:", Limiter: base + "l:"}
	if err := newStore(t, client, redisstore.Config{Prefixes: &old}).Changes().Add(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := client.Get(ctx, base+"r:changes").Uint64(); err != nil || n < 1<<32 {
		t.Fatalf("%sr:changes holds %d (%v)", base, n, err)
	}

	// A key that holds no count is an error.
	if err := client.Set(ctx, base+"bad:changes", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	bad := newStore(t, client, redisstore.Config{Prefix: base + "bad:"}).Changes()
	if _, err := bad.Count(ctx); err == nil {
		t.Fatal("Count of a key holding x: no error")
	}
	if err := bad.Add(ctx); err == nil {
		t.Fatal("Add to a key holding x: no error")
	}
}
