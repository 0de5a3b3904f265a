package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/redisstore"
)

// newStore returns a Store on client with cfg, or fails the test.
func newStore(t testing.TB, client redis.UniversalClient, cfg redisstore.Config) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(context.Background(), client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// keysUnder lists the keys that start with prefix, sorted.
func keysUnder(t *testing.T, client *redis.Client, prefix string) []string {
	t.Helper()
	keys, err := client.Keys(context.Background(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// TestKeyLayout pins the keys each store writes, and what they hold, for
// one prefix: they are the keys the separate packages wrote, under the
// store's part of the prefix, and a change here strands the keys of
// running applications.
func TestKeyLayout(t *testing.T) {
	client, base := servicetest.Redis(t)
	ctx := context.Background()
	p := base + "app:"
	bucketClock := func() time.Time { return time.Unix(1_800_000_000, 0) }
	s := newStore(t, client, redisstore.Config{Prefix: p, ReplayNow: bucketClock})

	expires := time.UnixMilli(1_900_000_000_000)
	forget := time.UnixMilli(time.Now().Add(time.Hour).UnixMilli())
	rec := confirm.Record{Subject: "usr_1", Capability: "transfer", Digest: "dg", Audience: "aud", ExpiresAt: expires}
	if err := s.Confirm().Put(ctx, "tok1", rec, forget); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := s.Idempotency().Claim(ctx, "scope1", "1key", "fp", "claim", time.Minute, 10); !ok || err != nil {
		t.Fatalf("Claim: %v, %v", ok, err)
	}
	if fresh, err := s.Replay().CheckAndSet(ctx, "agentauth:jti:agt_1:j1", time.Minute); !fresh || err != nil {
		t.Fatalf("CheckAndSet: %v, %v", fresh, err)
	}
	if fresh, err := s.Replay().CheckAndSetFor(ctx, "agentauth:jti:agt_1:j2", time.Minute, "agt_1", "hst_1"); !fresh || err != nil {
		t.Fatalf("CheckAndSetFor: %v, %v", fresh, err)
	}
	l := s.Limiter().WithClock(func() time.Time { return time.UnixMicro(1_800_000_000_000_000) })
	if d, err := l.Allow(ctx, "agent:agt_1", ratelimit.PerMinute(60)); !d.Allowed || err != nil {
		t.Fatalf("Allow: %+v, %v", d, err)
	}
	if err := client.Set(ctx, p+"changes", "40", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Changes().Add(ctx); err != nil {
			t.Fatal(err)
		}
	}

	strs := map[string]string{
		p + "confirm:tok1":                       fmt.Sprintf(`{"s":"usr_1","c":"transfer","d":"dg","a":"aud","e":1900000000000,"f":%d,"u":false}`, forget.UnixMilli()),
		p + "idem:1key":                          `{"f":"fp","t":"claim"}`,
		p + "replay:agentauth:jti:agt_1:j1":      "",
		p + "replay:agentauth:jti:agt_1:j2":      "",
		p + "replay:share:agent:agt_1:180000000": "1",
		p + "replay:share:host:hst_1:180000000":  "1",
		p + "limit:agent:agt_1":                  "1800000001000000",
		p + "changes":                            "42",
	}
	scopeSet := p + "idem:scope:scope1"
	want := []string{scopeSet}
	for k, v := range strs {
		want = append(want, k)
		got, err := client.Get(ctx, k).Result()
		switch {
		case v == "" && (err != nil || !attemptName.MatchString(got)):
			// A recorded token id holds the name of its attempt.
			t.Errorf("%s holds %q (%v), want the name of an attempt", k, got, err)
		case v != "" && (err != nil || got != v):
			t.Errorf("%s holds %q (%v), want %q", k, got, err, v)
		}
	}
	slices.Sort(want)
	if got := keysUnder(t, client, base); !slices.Equal(got, want) {
		t.Errorf("keys written:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if members, err := client.ZRange(ctx, scopeSet, 0, -1).Result(); err != nil || !slices.Equal(members, []string{"1key"}) {
		t.Errorf("%s holds %q (%v), want the scoped key", scopeSet, members, err)
	}
}

// TestPrefixesReadOldKeys: with Config.Prefixes each store reads, under
// the prefix it is given, the keys its separate package wrote.
func TestPrefixesReadOldKeys(t *testing.T) {
	client, base := servicetest.Redis(t)
	ctx := context.Background()
	old := redisstore.Prefixes{Confirm: base + "c:", Idempotency: base + "i:", Replay: base + "r:", Limiter: base + "l:"}
	future := time.Now().Add(time.Hour).UnixMilli()
	for k, v := range map[string]string{
		old.Confirm + "tok1":                  fmt.Sprintf(`{"s":"usr_1","c":"transfer","d":"dg","a":"aud","e":%d,"f":%d,"u":false}`, future, future),
		old.Idempotency + "1key":              `{"f":"fp","t":"claim","d":true,"s":201,"h":{"Content-Type":"application/json"},"b":"{}"}`,
		old.Replay + "agentauth:jti:agt_1:j1": "1",
		old.Limiter + "agent:agt_1":           fmt.Sprint(time.Now().Add(time.Hour).UnixMicro()),
	} {
		if err := client.Set(ctx, k, v, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	s := newStore(t, client, redisstore.Config{Prefixes: &old})

	want := confirm.Record{Subject: "usr_1", Capability: "transfer", Digest: "dg", Audience: "aud", ExpiresAt: time.UnixMilli(future)}
	got, won, err := s.Confirm().Consume(ctx, "tok1", want, time.Now())
	if err != nil || !won || got == nil || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Errorf("Consume of an old token: %+v, %v, %v; want it spent", got, won, err)
	}
	ok, rec, err := s.Idempotency().Claim(ctx, "scope1", "1key", "fp", "other", time.Minute, 0)
	if err != nil || ok || rec == nil || !rec.Done || rec.Status != 201 || string(rec.Body) != "{}" {
		t.Errorf("Claim of an old answered key: %v, %+v, %v; want its answer", ok, rec, err)
	}
	if fresh, err := s.Replay().CheckAndSet(ctx, "agentauth:jti:agt_1:j1", time.Minute); fresh || err != nil {
		t.Errorf("an old token id: fresh = %v, %v; want replayed", fresh, err)
	}
	if d, err := s.Limiter().Allow(ctx, "agent:agt_1", ratelimit.PerMinute(60)); d.Allowed || err != nil {
		t.Errorf("an old exhausted limit: %+v, %v; want refused", d, err)
	}
	// Nothing was written beside the old keys.
	if keys := keysUnder(t, client, base); len(keys) != 4 {
		t.Errorf("keys after reading: %q", keys)
	}
}

func TestNewConfig(t *testing.T) {
	client, base := servicetest.Redis(t)
	ctx := context.Background()
	if _, err := redisstore.New(ctx, nil, redisstore.Config{Prefix: base}); err == nil {
		t.Error("New with a nil client succeeded")
	}
	_, err := redisstore.New(ctx, client, redisstore.Config{Prefix: base, Prefixes: &redisstore.Prefixes{Confirm: base}})
	if err == nil || !strings.Contains(err.Error(), "both Prefix and Prefixes") {
		t.Errorf("New with Prefix and Prefixes: %v; want a refusal", err)
	}
	s := newStore(t, client, redisstore.Config{Prefix: base})
	var (
		_ confirm.Store     = s.Confirm()
		_ idempotency.Store = s.Idempotency()
		_ ratelimit.Limiter = s.Limiter()
	)
	// One value per store, so that WithClock set on the Limiter holds.
	stores := func() []any { return []any{s.Confirm(), s.Idempotency(), s.Replay(), s.Limiter()} }
	if first, again := stores(), stores(); !slices.Equal(first, again) {
		t.Error("a Store hands out new stores on each call")
	}
}

// TestNewRefusesEvictingRedis: on a Redis whose maxmemory-policy evicts,
// or which will not say (CONFIG GET refused), New refuses to start unless
// the application accepts the risk.
func TestNewRefusesEvictingRedis(t *testing.T) {
	addr := servicetest.RedisServer(t, "--maxmemory", "4mb")
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	for _, policy := range []string{"volatile-lru", "allkeys-lru", "volatile-ttl"} {
		if err := client.ConfigSet(ctx, "maxmemory-policy", policy).Err(); err != nil {
			t.Fatal(err)
		}
		_, err := redisstore.New(ctx, client, redisstore.Config{Prefix: "r:"})
		if err == nil || !strings.Contains(err.Error(), "maxmemory-policy is "+policy) || !strings.Contains(err.Error(), "AcceptEviction") {
			t.Fatalf("New on %s: %v; want a refusal naming the policy and AcceptEviction", policy, err)
		}
		if _, err := redisstore.New(ctx, client, redisstore.Config{Prefix: "r:", AcceptEviction: true}); err != nil {
			t.Fatalf("New on %s accepting eviction: %v", policy, err)
		}
	}
	// A user without CONFIG, as managed services give.
	if err := client.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	limited := redis.NewClient(&redis.Options{Addr: addr, Username: "app", Password: "pw"})
	defer limited.Close()
	_, err := redisstore.New(ctx, limited, redisstore.Config{Prefix: "r:"})
	if err == nil || !strings.Contains(err.Error(), "cannot read Redis's maxmemory-policy") || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("New without CONFIG: %v; want a refusal saying the policy cannot be read", err)
	}
	if _, err := redisstore.New(ctx, limited, redisstore.Config{Prefix: "r:", AcceptEviction: true}); err != nil {
		t.Fatalf("New without CONFIG, accepting eviction: %v", err)
	}
	// The server this suite shares keeps Redis's default, noeviction.
	shared, _ := servicetest.Redis(t)
	if _, err := redisstore.New(ctx, shared, redisstore.Config{Prefix: "r:"}); err != nil {
		t.Fatalf("New on noeviction: %v", err)
	}
}
