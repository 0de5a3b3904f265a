package sqlstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/internal/readcheck"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/sqlstore"
)

// counter is a count of changes in memory (sqlstore.Changes) whose reads
// and moves fail while countErr or addErr is set.
type counter struct {
	mu               sync.Mutex
	n                uint64
	counts, adds     int
	countErr, addErr error
}

func (c *counter) Count(context.Context) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts++
	return c.n, c.countErr
}

func (c *counter) Add(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.addErr != nil {
		return c.addErr
	}
	c.adds++
	c.n++
	return nil
}

func (c *counter) set(countErr, addErr error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.countErr, c.addErr = countErr, addErr
}

func (c *counter) moved() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.adds
}

// sharedInstances are two instances of the provider's records on one
// database, sharing a count of changes, with one active host and agent.
type sharedInstances struct {
	a, b  store.Store
	count *counter
	// raw changes the database behind both instances' backs.
	raw func(query string)
}

// openShared opens two instances on PostgreSQL or on one SQLite file.
func openShared(t *testing.T, backend string, now *time.Time) sharedInstances {
	t.Helper()
	ctx := context.Background()
	var open func() *sqlstore.DB
	switch backend {
	case "postgres":
		newPool := servicetest.PostgresSchema(t)
		open = func() *sqlstore.DB {
			db, err := sqlstore.NewPostgres(ctx, newPool())
			if err != nil {
				t.Fatal(err)
			}
			return db
		}
	default:
		path := filepath.Join(t.TempDir(), "shared.db")
		open = func() *sqlstore.DB {
			db, err := sqlstore.OpenSQLite(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			return db
		}
	}
	c := &counter{}
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return *now }
	var dbs [2]*sqlstore.DB
	for i := range dbs {
		dbs[i] = open()
		t.Cleanup(func() { _ = dbs[i].Close() })
		dbs[i].SetClock(clock)
		dbs[i].SetChanges(c)
	}
	s := sharedInstances{a: dbs[0].Provider(), b: dbs[1].Provider(), count: c, raw: func(query string) {
		t.Helper()
		if _, err := dbs[0].SQL().ExecContext(ctx, query); err != nil {
			t.Fatal(err)
		}
	}}
	at := *now
	if err := s.a.CreateHost(ctx, &store.Host{ID: "hst_1", PublicKey: newPublicJWK(t), UserID: "usr_1", Status: agentcap.StatusActive}); err != nil {
		t.Fatal(err)
	}
	if err := s.a.CreateAgent(ctx, &store.Agent{ID: "agt_1", HostID: "hst_1", UserID: "usr_1", Mode: agentcap.ModeDelegated,
		Status: agentcap.StatusActive, AgentKey: store.AgentKey{PublicKey: newPublicJWK(t)}, Name: "first",
		ActivatedAt: &at, Grants: []store.Grant{{Capability: "balance", Status: agentcap.StatusActive}}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// agentAndHost reads agent agt_1 and its host as the verifier does.
func agentAndHost(t *testing.T, st store.Store) (*store.Agent, *store.Host) {
	t.Helper()
	a, h, err := st.(store.AgentHostReader).GetAgentAndHost(context.Background(), "agt_1")
	if err != nil {
		t.Fatal(err)
	}
	if h == nil {
		t.Fatal("GetAgentAndHost: no host")
	}
	return a, h
}

// eachShared runs test on two instances of each backend (openShared),
// their clock at *now, from 2026-05-01 12:00 UTC on.
func eachShared(t *testing.T, test func(t *testing.T, s sharedInstances, now *time.Time)) {
	for _, backend := range []string{"postgres", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
			test(t, openShared(t, backend, &now), &now)
		})
	}
}

// Instances sharing a count of changes serve the agents and hosts they
// read from memory, and the write of any instance ends every instance's
// copies at once.
func TestSharedChangesEndOtherInstancesCopies(t *testing.T) {
	eachShared(t, func(t *testing.T, s sharedInstances, now *time.Time) {
		ctx := context.Background()
		agentAndHost(t, s.a)
		// Changed behind the instances' backs: a's copy is served.
		s.raw(`UPDATE agentauth_agents SET name = 'unseen' WHERE id = 'agt_1'`)
		if a, _ := agentAndHost(t, s.a); a.Name != "first" {
			t.Fatalf("GetAgentAndHost from the cache: name %q, want the copy's %q", a.Name, "first")
		}
		if a, err := s.a.GetAgent(ctx, "agt_1"); err != nil || a.Name != "first" {
			t.Fatalf("GetAgent from the cache: %+v, %v", a, err)
		}
		// b revokes the agent: a refuses it at once.
		if err := s.b.UpdateAgentStatus(ctx, "agt_1", []string{agentcap.StatusActive}, agentcap.StatusRevoked); err != nil {
			t.Fatal(err)
		}
		if a, _ := agentAndHost(t, s.a); a.Status != agentcap.StatusRevoked || a.Name != "unseen" {
			t.Fatalf("after b's revocation, a reads %s %q; want revoked %q", a.Status, a.Name, "unseen")
		}
		// And the host.
		if _, h := agentAndHost(t, s.a); h.Status != agentcap.StatusActive {
			t.Fatalf("host %s", h.Status)
		}
		if h, err := s.a.GetHost(ctx, "hst_1"); err != nil || h.Status != agentcap.StatusActive {
			t.Fatalf("GetHost: %+v, %v", h, err)
		}
		if _, err := s.b.UpdateHostStatus(ctx, "hst_1", []string{agentcap.StatusActive}, agentcap.StatusRevoked); err != nil {
			t.Fatal(err)
		}
		if _, h := agentAndHost(t, s.a); h.Status != agentcap.StatusRevoked {
			t.Fatalf("after b's revocation of the host, a reads it %s", h.Status)
		}
		if h, err := s.a.GetHost(ctx, "hst_1"); err != nil || h.Status != agentcap.StatusRevoked {
			t.Fatalf("after b's revocation of the host, GetHost: %+v, %v", h, err)
		}
	})
}

// A touch that keeps the agent active does not move the count; the
// other writes do. The instance that touched reads its agent again.
func TestSharedChangesTouchIsQuiet(t *testing.T) {
	eachShared(t, func(t *testing.T, s sharedInstances, now *time.Time) {
		ctx := context.Background()
		agentAndHost(t, s.a)
		before := s.count.moved()
		*now = now.Add(10 * time.Millisecond)
		if err := s.a.TouchAgent(ctx, "agt_1", *now, store.Policy{SessionTTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if got := s.count.moved(); got != before {
			t.Fatalf("a touch moved the count %d times", got-before)
		}
		if a, _ := agentAndHost(t, s.a); a.LastUsedAt == nil || !a.LastUsedAt.Equal(*now) {
			t.Fatalf("after its touch, a reads last use %v, want %v", a.LastUsedAt, *now)
		}
		// A touch that expires the agent does move it.
		*now = now.Add(2 * time.Hour)
		if err := s.b.TouchAgent(ctx, "agt_1", *now, store.Policy{SessionTTL: time.Hour}); !errors.Is(err, store.ErrStatus) {
			t.Fatalf("touching an idle agent: %v, want it expired", err)
		}
		if got := s.count.moved(); got != before+1 {
			t.Fatalf("the touch that expired the agent moved the count %d times, want once", got-before)
		}
		if err := s.b.SetAgentName(ctx, "agt_1", "renamed"); err != nil {
			t.Fatal(err)
		}
		if got := s.count.moved(); got != before+2 {
			t.Fatalf("a rename moved the count %d times, want once", got-before-1)
		}
	})
}

// Without the count, an instance reads the database; when the count
// cannot be moved on after a commit, the write says so.
func TestSharedChangesFailures(t *testing.T) {
	eachShared(t, func(t *testing.T, s sharedInstances, now *time.Time) {
		ctx := context.Background()
		agentAndHost(t, s.a)
		down := errors.New("count down")
		s.count.set(down, nil)
		s.raw(`UPDATE agentauth_agents SET name = 'direct' WHERE id = 'agt_1'`)
		if a, _ := agentAndHost(t, s.a); a.Name != "direct" {
			t.Fatalf("with the count down, GetAgentAndHost: name %q, want the database's", a.Name)
		}
		if a, err := s.a.GetAgent(ctx, "agt_1"); err != nil || a.Name != "direct" {
			t.Fatalf("with the count down, GetAgent: %+v, %v", a, err)
		}
		s.count.set(nil, down)
		err := s.b.SetAgentName(ctx, "agt_1", "committed")
		if !errors.Is(err, down) || !strings.Contains(err.Error(), "committed") {
			t.Fatalf("rename with the count stuck: %v; want an error saying the write is committed", err)
		}
		s.count.set(nil, nil)
		*now = now.Add(time.Second) // a's copy has aged out
		if a, _ := agentAndHost(t, s.a); a.Name != "committed" {
			t.Fatalf("after the rename, a reads %q", a.Name)
		}
	})
}

// A cached agent whose deadline has passed is read again rather than
// refused: another instance's touch may have moved the deadline on
// without moving the count.
func TestSharedChangesRereadLapsedCopies(t *testing.T) {
	eachShared(t, func(t *testing.T, s sharedInstances, now *time.Time) {
		ctx := context.Background()
		policy := store.Policy{SessionTTL: 500 * time.Millisecond}
		if err := s.a.TouchAgent(ctx, "agt_1", *now, policy); err != nil {
			t.Fatal(err)
		}
		if a, _ := agentAndHost(t, s.a); a.ExpiresAt == nil || !a.ExpiresAt.Equal(now.Add(500*time.Millisecond)) {
			t.Fatalf("deadline %v", a.ExpiresAt)
		}
		*now = now.Add(400 * time.Millisecond)
		if err := s.b.TouchAgent(ctx, "agt_1", *now, policy); err != nil {
			t.Fatal(err)
		}
		*now = now.Add(200 * time.Millisecond) // past a's copy's deadline, before the stored one
		a, _ := agentAndHost(t, s.a)
		if a.Status != agentcap.StatusActive || a.ExpiresAt == nil || !now.Before(*a.ExpiresAt) {
			t.Fatalf("a reads the agent %s, deadline %v, at %v; want b's later deadline", a.Status, a.ExpiresAt, *now)
		}
		if got, err := s.a.GetAgent(ctx, "agt_1"); err != nil || !got.ExpiresAt.Equal(*a.ExpiresAt) {
			t.Fatalf("GetAgent: %+v, %v", got, err)
		}
	})
}

// A read with a read check in its context is served the kept agent and
// host without reading the count, and leaves the check pending at the
// count they were read at: another instance's write since makes the
// check report ErrMoved. Without a copy to serve, or with one that would
// be refused, the count is read first and nothing is left pending.
func TestSharedChangesDeferToReadCheck(t *testing.T) {
	eachShared(t, func(t *testing.T, s sharedInstances, now *time.Time) {
		ctx := context.Background()
		deferred := func() (*readcheck.Check, *store.Agent, int) {
			t.Helper()
			s.count.mu.Lock()
			before := s.count.counts
			s.count.mu.Unlock()
			cctx, chk := readcheck.With(ctx)
			a, h, err := s.a.(store.AgentHostReader).GetAgentAndHost(cctx, "agt_1")
			if err != nil || h == nil || h.ID != "hst_1" {
				t.Fatalf("GetAgentAndHost with a read check: %+v, %+v, %v", a, h, err)
			}
			s.count.mu.Lock()
			defer s.count.mu.Unlock()
			return chk, a, s.count.counts - before
		}
		// Nothing kept yet: the count is read, nothing deferred.
		chk, _, counts := deferred()
		if _, _, pending := chk.Pending(); pending || counts != 1 {
			t.Fatalf("first read: pending %v after %d reads of the count; want a read of the count and nothing pending", pending, counts)
		}
		// Kept: served without reading the count, the check pending at it.
		chk, a, counts := deferred()
		src, gen, pending := chk.Pending()
		if !pending || counts != 0 || src != readcheck.Counter(s.count) || gen != s.count.n || a.Name != "first" {
			t.Fatalf("kept read: pending %v at %d of %v after %d reads of the count; want pending at %d without a read", pending, gen, src, counts, s.count.n)
		}
		if err := chk.Verify(ctx); err != nil {
			t.Fatalf("check with the count unmoved: %v", err)
		}
		// b revokes the agent: a serves its copy to a read check, whose
		// check then finds the count moved; a plain read sees the revocation.
		chk, a, _ = deferred()
		if err := s.b.UpdateAgentStatus(ctx, "agt_1", []string{agentcap.StatusActive}, agentcap.StatusRevoked); err != nil {
			t.Fatal(err)
		}
		if err := chk.Verify(ctx); !errors.Is(err, readcheck.ErrMoved) || a.Status != agentcap.StatusActive {
			t.Fatalf("check after b's revocation: %v (served %s); want ErrMoved", err, a.Status)
		}
		if a, _ := agentAndHost(t, s.a); a.Status != agentcap.StatusRevoked {
			t.Fatalf("plain read after b's revocation: %s", a.Status)
		}
		// A kept agent that would be refused is read again, the count first.
		chk, a, counts = deferred()
		if _, _, pending := chk.Pending(); pending || counts != 1 || a.Status != agentcap.StatusRevoked {
			t.Fatalf("kept revoked agent: pending %v after %d reads of the count, %s", pending, counts, a.Status)
		}
	})
}
