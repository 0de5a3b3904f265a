package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/redisstore"
)

// attemptName is the form of what a recorded token id holds: the name of
// the attempt that recorded it.
var attemptName = regexp.MustCompile(`^[A-Za-z0-9_-]{16}\.[0-9a-z]+$`)

// newCache returns the replay cache of a Store on client under prefix,
// with the default shares, and the prefix of the cache's keys.
func newCache(t testing.TB, client redis.UniversalClient, prefix string) (*redisstore.ReplayCache, string) {
	t.Helper()
	return newStore(t, client, redisstore.Config{Prefix: prefix}).Replay(), prefix + "replay:"
}

func TestCache(t *testing.T) {
	client, base := servicetest.Redis(t)
	c, prefix := newCache(t, client, base)
	ctx := context.Background()
	for i, step := range []struct {
		key   string
		fresh bool
	}{
		{"agentauth:jti:agt_1:a", true},
		{"agentauth:jti:agt_1:a", false},
		{"agentauth:jti:agt_1:b", true},
		{"agentauth:jti:agt_2:a", true},
		{"agentauth:jti:agt_1:b", false},
	} {
		fresh, err := c.CheckAndSet(ctx, step.key, time.Minute)
		if err != nil || fresh != step.fresh {
			t.Fatalf("step %d %s: fresh = %v, err = %v; want %v", i, step.key, fresh, err, step.fresh)
		}
	}
	// The key is stored under the prefix with a millisecond TTL, rounded up.
	if _, err := c.CheckAndSet(ctx, "ttl", 1500*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CheckAndSet(ctx, "long", 70*time.Second); err != nil {
		t.Fatal(err)
	}
	pttl, err := client.PTTL(ctx, prefix+"long").Result()
	if err != nil || pttl <= 60*time.Second || pttl > 70*time.Second {
		t.Fatalf("PTTL = %v, %v; want just under 70s", pttl, err)
	}
	if v, err := client.Get(ctx, prefix+"long").Result(); err != nil || !attemptName.MatchString(v) {
		t.Fatalf("stored value %q, %v; want the name of an attempt", v, err)
	}
	for _, ttl := range []time.Duration{0, -time.Second} {
		if fresh, err := c.CheckAndSet(ctx, "bad-ttl", ttl); err == nil || fresh {
			t.Errorf("ttl %v: fresh = %v, err = %v; want an error", ttl, fresh, err)
		}
	}
}

// TestCacheKeysDoNotCollide shows that (agent id, jti) pairs whose plain
// join ReplayKeyPrefix + id + ":" + jti is the same are recorded apart:
// the token of one agent does not use up the id of another.
func TestCacheKeysDoNotCollide(t *testing.T) {
	client, base := servicetest.Redis(t)
	c, prefix := newCache(t, client, base)
	ctx := context.Background()
	for _, pair := range [][2][2]string{
		{{"a:b", "c"}, {"a", "b:c"}},
		{{"agt_1:", "x"}, {"agt_1", ":x"}},
	} {
		for i, p := range pair {
			key := agentauth.ReplayKey(agentauth.ReplayKeyPrefix, p[0], p[1])
			if fresh, err := c.CheckAndSet(ctx, key, time.Minute); !fresh || err != nil {
				t.Fatalf("pair %d (%q): fresh = %v, err = %v; want fresh", i, p, fresh, err)
			}
		}
		key := agentauth.ReplayKey(agentauth.ReplayKeyPrefix, pair[0][0], pair[0][1])
		if fresh, err := c.CheckAndSet(ctx, key, time.Minute); fresh || err != nil {
			t.Fatalf("%q again: fresh = %v, err = %v; want replayed", pair[0], fresh, err)
		}
	}
	// The Redis key is the documented one.
	if n, err := client.Exists(ctx, prefix+"agentauth:jti:a%3Ab:c", prefix+"agentauth:jti:a:b:c").Result(); err != nil || n != 2 {
		t.Fatalf("documented keys: %d of 2 exist (%v)", n, err)
	}
}

func TestCacheExpiry(t *testing.T) {
	client, base := servicetest.Redis(t)
	c, _ := newCache(t, client, base)
	ctx := context.Background()
	if fresh, err := c.CheckAndSet(ctx, "short", 50*time.Millisecond); !fresh || err != nil {
		t.Fatalf("first: %v, %v", fresh, err)
	}
	// Redis expires keys on its own clock; wait for it, bounded.
	deadline := time.Now().Add(5 * time.Second)
	for {
		fresh, err := c.CheckAndSet(ctx, "short", 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if fresh {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("key did not expire within 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCacheSharedAcrossInstances: two caches (two application instances)
// on one Redis agree that a key was used.
func TestCacheSharedAcrossInstances(t *testing.T) {
	client, base := servicetest.Redis(t)
	other, _ := servicetest.Redis(t)
	a, _ := newCache(t, client, base)
	b, _ := newCache(t, other, base)
	ctx := context.Background()
	if fresh, err := a.CheckAndSet(ctx, "k", time.Minute); !fresh || err != nil {
		t.Fatalf("instance a: %v, %v", fresh, err)
	}
	if fresh, err := b.CheckAndSet(ctx, "k", time.Minute); fresh || err != nil {
		t.Fatalf("instance b: fresh = %v, err = %v; want replayed", fresh, err)
	}
}

func TestCacheConcurrentSameKey(t *testing.T) {
	client, base := servicetest.Redis(t)
	c, _ := newCache(t, client, base)
	for round := range 10 {
		key := fmt.Sprintf("race-%d", round)
		const n = 16
		var wins atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				fresh, err := c.CheckAndSet(context.Background(), key, time.Minute)
				if err != nil {
					t.Error(err)
				}
				if fresh {
					wins.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d winners, want 1", round, wins.Load())
		}
	}
}

func TestCacheFailsClosed(t *testing.T) {
	client, base := servicetest.Redis(t)
	c, _ := newCache(t, client, base)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if fresh, err := c.CheckAndSet(ctx, "k", time.Minute); err == nil || fresh {
		t.Fatalf("canceled context: fresh = %v, err = %v; want an error", fresh, err)
	}
	closed := redis.NewClient(&redis.Options{Addr: os.Getenv("AGENTCAP_REDIS_ADDR")})
	closed.Close()
	down, err := redisstore.New(context.Background(), closed, redisstore.Config{Prefix: base, AcceptEviction: true})
	if err != nil {
		t.Fatal(err)
	}
	if fresh, err := down.Replay().CheckAndSet(context.Background(), "k", time.Minute); err == nil || fresh {
		t.Fatalf("closed client: fresh = %v, err = %v; want an error", fresh, err)
	}
}

func BenchmarkRedisReplayCache(b *testing.B) {
	client, base := servicetest.Redis(b)
	c, _ := newCache(b, client, base)
	ctx := context.Background()
	var seq atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.CheckAndSet(ctx, fmt.Sprintf("agentauth:jti:agt_bench:%d", seq.Add(1)), 70*time.Second); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func ExampleStore_Replay() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()

	// New refuses a Redis that may evict keys (see the package docs).
	rs, err := redisstore.New(context.Background(), client, redisstore.Config{Prefix: "bank:"})
	if err != nil {
		panic(err)
	}
	verifier, err := agentauth.NewVerifier(agentauth.VerifierConfig{
		Directory: agentauth.NewMemoryDirectory(),
		Audiences: []string{"https://bank.example/capability/execute"},
		// Every instance of the application refuses a token id that any
		// instance has accepted.
		Replay: rs.Replay(),
	})
	if err != nil {
		panic(err)
	}
	_ = verifier
}

// TestCacheShares: an agent past its share, or a host whose agents are
// past theirs, is refused with ErrReplayShare and nothing is recorded,
// while other owners still get in; a replay is reported as a replay and
// charges nobody; the charges expire with the ids.
func TestCacheShares(t *testing.T) {
	client, base := servicetest.Redis(t)
	clock := &shareClock{t: time.Unix(1_800_000_000, 0)}
	c := newStore(t, client, redisstore.Config{Prefix: base, ReplayPerAgent: 5, ReplayPerHost: 8, ReplayNow: clock.Now}).Replay()
	prefix := base + "replay:"
	ctx := context.Background()
	record := func(key, agent, host string) (bool, error) {
		return c.CheckAndSetFor(ctx, key, 70*time.Second, agent, host)
	}
	for i := range 5 {
		if fresh, err := record(fmt.Sprintf("a%d", i), "agt_a", "hst_1"); !fresh || err != nil {
			t.Fatalf("agt_a's id %d: %v, %v", i, fresh, err)
		}
		clock.Add(3 * time.Second)
	}
	if fresh, err := record("a5", "agt_a", "hst_1"); fresh || !errors.Is(err, agentauth.ErrReplayShare) || errors.Is(err, agentauth.ErrReplayHostShare) {
		t.Fatalf("agt_a beyond its share: %v, %v", fresh, err)
	}
	if n, _ := client.Exists(ctx, prefix+"a5").Result(); n != 0 {
		t.Fatal("a refused id was recorded")
	}
	// A replay of a recorded id is a replay, whoever it is charged to.
	for range 3 {
		if fresh, err := record("a0", "agt_b", "hst_1"); fresh || err != nil {
			t.Fatalf("replay: %v, %v", fresh, err)
		}
	}
	// The host's other agents share its eight: the replays above cost
	// nothing.
	for i := range 3 {
		if fresh, err := record(fmt.Sprintf("b%d", i), "agt_b", "hst_1"); !fresh || err != nil {
			t.Fatalf("agt_b's id %d: %v, %v", i, fresh, err)
		}
	}
	if _, err := record("b3", "agt_b", "hst_1"); !errors.Is(err, agentauth.ErrReplayHostShare) {
		t.Fatalf("hst_1 beyond its share: %v; want ErrReplayHostShare", err)
	}
	if fresh, err := record("c0", "agt_c", "hst_2"); !fresh || err != nil {
		t.Fatalf("another host's agent: %v, %v", fresh, err)
	}
	// Without owners nothing is counted.
	if fresh, err := c.CheckAndSet(ctx, "plain", 70*time.Second); !fresh || err != nil {
		t.Fatalf("CheckAndSet: %v, %v", fresh, err)
	}
	// Once the ids are past their lifetime, and the bucket they were
	// counted in is over, the owners are let in again.
	clock.Add(70*time.Second + 10*time.Second)
	for _, o := range [][2]string{{"agt_a", "hst_1"}, {"agt_b", "hst_1"}} {
		if fresh, err := record("later-"+o[0], o[0], o[1]); !fresh || err != nil {
			t.Fatalf("%s later: %v, %v", o[0], fresh, err)
		}
	}
}

type shareClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *shareClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *shareClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
