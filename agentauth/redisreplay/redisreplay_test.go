package redisreplay_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/redisreplay"
	"github.com/agentcap/agentcap/internal/servicetest"
)

// redisClient connects to the Redis server named by AGENTCAP_REDIS_ADDR
// (a loopback address such as 127.0.0.1:6379). Without it the test is
// skipped, except under CI, where these tests must run. It returns the
// client and a key prefix unique to this test, whose keys are deleted when
// the test ends.
func redisClient(t testing.TB) (*redis.Client, string) {
	t.Helper()
	addr := os.Getenv("AGENTCAP_REDIS_ADDR")
	if addr == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("AGENTCAP_REDIS_ADDR is not set; CI must run the Redis replay cache tests against a loopback redis-server")
		}
		t.Skip("AGENTCAP_REDIS_ADDR is not set; start redis-server on loopback and set it to run these tests")
	}
	client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	ctx := context.Background()
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		t.Fatalf("redis at %s: %v", addr, err)
	}
	prefix := fmt.Sprintf("agentcap-test:%d:%d:%s:", os.Getpid(), time.Now().UnixNano(), t.Name())
	t.Cleanup(func() {
		defer client.Close()
		iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var keys []string
		flush := func() {
			if len(keys) > 0 {
				if err := client.Del(ctx, keys...).Err(); err != nil {
					t.Errorf("cleanup: %v", err)
				}
				keys = keys[:0]
			}
		}
		for iter.Next(ctx) {
			if keys = append(keys, iter.Val()); len(keys) == 1000 {
				flush()
			}
		}
		flush()
		if err := iter.Err(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return client, prefix
}

// newCache returns a Cache on client under prefix, with the default
// shares.
func newCache(t testing.TB, client redis.UniversalClient, prefix string) *redisreplay.Cache {
	t.Helper()
	c, err := redisreplay.New(context.Background(), client, redisreplay.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCache(t *testing.T) {
	client, prefix := redisClient(t)
	c := newCache(t, client, prefix)
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
	if v, err := client.Get(ctx, prefix+"long").Result(); err != nil || v != "1" {
		t.Fatalf("stored value %q, %v", v, err)
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
	client, prefix := redisClient(t)
	c := newCache(t, client, prefix)
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
	client, prefix := redisClient(t)
	c := newCache(t, client, prefix)
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
	client, prefix := redisClient(t)
	other := redis.NewClient(&redis.Options{Addr: os.Getenv("AGENTCAP_REDIS_ADDR")})
	defer other.Close()
	a, b := newCache(t, client, prefix), newCache(t, other, prefix)
	ctx := context.Background()
	if fresh, err := a.CheckAndSet(ctx, "k", time.Minute); !fresh || err != nil {
		t.Fatalf("instance a: %v, %v", fresh, err)
	}
	if fresh, err := b.CheckAndSet(ctx, "k", time.Minute); fresh || err != nil {
		t.Fatalf("instance b: fresh = %v, err = %v; want replayed", fresh, err)
	}
}

func TestCacheConcurrentSameKey(t *testing.T) {
	client, prefix := redisClient(t)
	c := newCache(t, client, prefix)
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
	client, prefix := redisClient(t)
	c := newCache(t, client, prefix)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if fresh, err := c.CheckAndSet(ctx, "k", time.Minute); err == nil || fresh {
		t.Fatalf("canceled context: fresh = %v, err = %v; want an error", fresh, err)
	}
	closed := redis.NewClient(&redis.Options{Addr: os.Getenv("AGENTCAP_REDIS_ADDR")})
	closed.Close()
	down, err := redisreplay.New(context.Background(), closed, redisreplay.Config{Prefix: prefix, AcceptEviction: true})
	if err != nil {
		t.Fatal(err)
	}
	if fresh, err := down.CheckAndSet(context.Background(), "k", time.Minute); err == nil || fresh {
		t.Fatalf("closed client: fresh = %v, err = %v; want an error", fresh, err)
	}
}

func BenchmarkRedisReplayCache(b *testing.B) {
	client, prefix := redisClient(b)
	c := newCache(b, client, prefix)
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

func ExampleNew() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()

	// New refuses a Redis that may evict keys (see the package docs).
	cache, err := redisreplay.New(context.Background(), client, redisreplay.Config{Prefix: "bank:agentauth:"})
	if err != nil {
		panic(err)
	}
	verifier, err := agentauth.NewVerifier(agentauth.VerifierConfig{
		Directory: agentauth.NewMemoryDirectory(),
		Audiences: []string{"https://bank.example/capability/execute"},
		// Every instance of the application refuses a token id that any
		// instance has accepted.
		Replay: cache,
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
	client, prefix := redisClient(t)
	clock := &shareClock{t: time.Unix(1_800_000_000, 0)}
	c, err := redisreplay.New(context.Background(), client, redisreplay.Config{Prefix: prefix, PerAgent: 5, PerHost: 8, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
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

// TestNewRefusesEvictingRedis: on a Redis whose maxmemory-policy evicts,
// or which will not say (CONFIG GET refused), New refuses to start unless
// the application accepts the risk.
func TestNewRefusesEvictingRedis(t *testing.T) {
	addr := servicetest.RedisServer(t, "--maxmemory", "4mb", "--maxmemory-policy", "volatile-lru")
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	_, err := redisreplay.New(ctx, client, redisreplay.Config{Prefix: "r:"})
	if err == nil || !strings.Contains(err.Error(), "maxmemory-policy is volatile-lru") || !strings.Contains(err.Error(), "AcceptEviction") {
		t.Fatalf("New on volatile-lru: %v; want a refusal naming the policy and AcceptEviction", err)
	}
	if _, err := redisreplay.New(ctx, client, redisreplay.Config{Prefix: "r:", AcceptEviction: true}); err != nil {
		t.Fatalf("New accepting eviction: %v", err)
	}
	// A user without CONFIG, as managed services give.
	if err := client.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	limited := redis.NewClient(&redis.Options{Addr: addr, Username: "app", Password: "pw"})
	defer limited.Close()
	_, err = redisreplay.New(ctx, limited, redisreplay.Config{Prefix: "r:"})
	if err == nil || !strings.Contains(err.Error(), "cannot read Redis's maxmemory-policy") || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("New without CONFIG: %v; want a refusal saying the policy cannot be read", err)
	}
	if _, err := redisreplay.New(ctx, limited, redisreplay.Config{Prefix: "r:", AcceptEviction: true}); err != nil {
		t.Fatalf("New without CONFIG, accepting eviction: %v", err)
	}
	// The server this suite shares keeps Redis's default, noeviction.
	shared, _ := redisClient(t)
	if _, err := redisreplay.New(ctx, shared, redisreplay.Config{Prefix: "r:"}); err != nil {
		t.Fatalf("New on noeviction: %v", err)
	}
}
