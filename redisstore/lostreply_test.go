package redisstore_test

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/internal/readcheck"
	"github.com/agentcap/agentcap/internal/servicetest"
	"github.com/agentcap/agentcap/redisstore"
)

// replyLoss loses the answer to one command, as a network that drops
// between Redis and its client: once armed, the next command written
// runs on the server, its connection reads the start of the answer (so
// the command surely ran), then closes, and every read from then on
// reports io.EOF. go-redis then sends the command again on a new
// connection.
type replyLoss struct {
	armed atomic.Bool
	lost  atomic.Int64
	// between, when set, runs after an answer is lost and before the
	// command is sent again.
	between func()
}

func (l *replyLoss) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &lossyConn{Conn: c, loss: l}, nil
	}
}

func (l *replyLoss) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (l *replyLoss) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// arm makes the next command's answer lost, and returns a func that
// fails t unless exactly that answer was lost when it is called.
func (l *replyLoss) arm(t *testing.T) func() {
	t.Helper()
	before := l.lost.Load()
	l.armed.Store(true)
	return func() {
		t.Helper()
		if l.armed.Load() || l.lost.Load() != before+1 {
			t.Fatalf("the armed answer was not lost (armed %v, %d lost)", l.armed.Load(), l.lost.Load()-before)
		}
	}
}

type lossyConn struct {
	net.Conn
	loss *replyLoss
	// drop is set by the write whose answer is to be lost, dead once it
	// is.
	drop, dead bool
}

func (c *lossyConn) Write(p []byte) (int, error) {
	if c.loss.armed.CompareAndSwap(true, false) {
		c.drop = true
	}
	return c.Conn.Write(p)
}

func (c *lossyConn) Read(p []byte) (int, error) {
	if c.dead {
		return 0, io.EOF
	}
	if !c.drop {
		return c.Conn.Read(p)
	}
	c.drop, c.dead = false, true
	if _, err := c.Conn.Read(p); err != nil {
		return 0, err
	}
	_ = c.Conn.Close()
	c.loss.lost.Add(1)
	if c.loss.between != nil {
		c.loss.between()
	}
	return 0, io.EOF
}

// lossyStore returns a Store under a fresh prefix on a client of its own
// whose connections lose the answers loss is armed for, and the shared
// client of the tests.
func lossyStore(t *testing.T, loss *replyLoss, cfg redisstore.Config) (*redisstore.Store, *redis.Client, string) {
	t.Helper()
	shared, base := servicetest.Redis(t)
	client := redis.NewClient(&redis.Options{Addr: shared.Options().Addr})
	client.AddHook(loss)
	t.Cleanup(func() { _ = client.Close() })
	cfg.Prefix = base
	return newStore(t, client, cfg), shared, base
}

// A token id recorded by a run of the replay script whose answer was
// lost is answered fresh by the run go-redis sends again: the token is
// not refused as a replay of itself, and is refused when it comes back.
func TestReplayLostAnswer(t *testing.T) {
	loss := &replyLoss{}
	clock := func() time.Time { return time.Unix(1_800_000_000, 0) }
	st, shared, base := lossyStore(t, loss, redisstore.Config{ReplayNow: clock})
	c := st.Replay()
	ctx := context.Background()
	// The first runs load the scripts (EVALSHA, then EVAL), so that the
	// armed command below is the script itself.
	if _, err := c.CheckAndSet(ctx, "warm:plain", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CheckAndSetFor(ctx, "warm:owners", time.Minute, "agt_w", "hst_w"); err != nil {
		t.Fatal(err)
	}

	lost := loss.arm(t)
	if fresh, err := c.CheckAndSet(ctx, "agentauth:jti:agt_1:a", time.Minute); !fresh || err != nil {
		t.Fatalf("plain, answer lost: fresh %v, %v; want fresh", fresh, err)
	}
	lost()
	lost = loss.arm(t)
	if fresh, err := c.CheckAndSetFor(ctx, "agentauth:jti:agt_1:b", time.Minute, "agt_1", "hst_1"); !fresh || err != nil {
		t.Fatalf("owners, answer lost: fresh %v, %v; want fresh", fresh, err)
	}
	lost()
	for _, key := range []string{"agentauth:jti:agt_1:a", "agentauth:jti:agt_1:b"} {
		if fresh, err := c.CheckAndSetFor(ctx, key, time.Minute, "agt_1", "hst_1"); fresh || err != nil {
			t.Errorf("%s again: fresh %v, %v; want a replay", key, fresh, err)
		}
	}
	// The run sent again charged nothing more: agt_1 and hst_1 hold one id.
	for _, k := range []string{"share:agent:agt_1:180000000", "share:host:hst_1:180000000"} {
		if n, err := shared.Get(ctx, base+"replay:"+k).Result(); err != nil || n != "1" {
			t.Errorf("%s holds %q (%v), want 1", k, n, err)
		}
	}
}

// With a read check riding in the script, an id recorded by a run whose
// answer was lost is fresh even when the count of changes moves before
// the run is sent again: the run that recorded it found the count
// unmoved. The call is neither verified again nor refused as a replay.
func TestReplayLostAnswerCountMoved(t *testing.T) {
	loss := &replyLoss{}
	st, shared, base := lossyStore(t, loss, redisstore.Config{})
	c, changes := st.Replay(), st.Changes()
	ctx := context.Background()
	n, err := changes.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	record := func(key string) (*readcheck.Check, bool, error) {
		cctx, chk := readcheck.With(ctx)
		if !chk.Defer(changes, n) {
			t.Fatal("Defer refused the first question")
		}
		fresh, err := c.CheckAndSetFor(cctx, key, time.Minute, "agt_1", "hst_1")
		return chk, fresh, err
	}
	if _, _, err := record("warm"); err != nil {
		t.Fatal(err)
	}
	loss.between = func() {
		if err := shared.Incr(context.Background(), base+"changes").Err(); err != nil {
			t.Error(err)
		}
	}
	lost := loss.arm(t)
	chk, fresh, err := record("agentauth:jti:agt_1:a")
	lost()
	if _, _, pending := chk.Pending(); !fresh || err != nil || pending {
		t.Fatalf("answer lost, count moved: fresh %v, %v, pending %v; want fresh and settled", fresh, err, pending)
	}
	if m, err := changes.Count(ctx); err != nil || m != n+1 {
		t.Fatalf("count %d, %v; want it moved to %d", m, err, n+1)
	}
}

// Issuing and spending a confirmation token are each safe to send
// again: a lost answer to Put does not report the id recorded twice, and
// a lost answer to Consume still spends the token for this caller, once.
func TestConfirmLostAnswer(t *testing.T) {
	loss := &replyLoss{}
	st, _, _ := lossyStore(t, loss, redisstore.Config{})
	s := st.Confirm()
	ctx := context.Background()
	now := time.Now()
	rec := confirm.Record{Subject: "usr_1", Capability: "transfer", Digest: "dg", Audience: "aud", ExpiresAt: now.Add(time.Minute)}
	forget := now.Add(time.Hour)
	if err := s.Put(ctx, "warm", rec, forget); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Consume(ctx, "warm", rec, now); err != nil {
		t.Fatal(err)
	}

	lost := loss.arm(t)
	if err := s.Put(ctx, "tok1", rec, forget); err != nil {
		t.Fatalf("Put, answer lost: %v", err)
	}
	lost()
	// The id holds this record: another record under it is refused.
	other := rec
	other.Digest = "dg2"
	if err := s.Put(ctx, "tok1", other, forget); err == nil {
		t.Fatal("another record under tok1 was kept; want the id refused as recorded twice")
	}

	lost = loss.arm(t)
	got, won, err := s.Consume(ctx, "tok1", rec, now)
	lost()
	if err != nil || !won || got == nil || got.Used || got.Subject != "usr_1" || !got.ExpiresAt.Equal(time.UnixMilli(rec.ExpiresAt.UnixMilli())) {
		t.Fatalf("Consume, answer lost: %+v, %v, %v; want it spent by this call, as it was before", got, won, err)
	}
	if got, won, err := s.Consume(ctx, "tok1", rec, now); err != nil || won || got == nil || !got.Used {
		t.Fatalf("Consume again: %+v, %v, %v; want it used", got, won, err)
	}
}

// A claim on an idempotency key whose answer was lost is this call's:
// the Guard runs the call rather than waiting for itself.
func TestIdempotencyLostAnswer(t *testing.T) {
	loss := &replyLoss{}
	st, _, _ := lossyStore(t, loss, redisstore.Config{})
	g, err := idempotency.New(idempotency.Config{Store: st.Idempotency(), Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fp := idempotency.Fingerprint("transfer_money", []byte(`{"amount":10}`))
	if _, _, err := g.Begin(ctx, "agt_1", "warm", fp); err != nil {
		t.Fatal(err)
	}
	lost := loss.arm(t)
	claim, rec, err := g.Begin(ctx, "agt_1", "pay-1", fp)
	lost()
	if err != nil || claim == nil || rec != nil {
		t.Fatalf("Begin, answer lost: %v, %+v, %v; want a claim", claim, rec, err)
	}
	if err := claim.Complete(ctx, 200, nil, []byte(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	if c, rec, err := g.Begin(ctx, "agt_1", "pay-1", fp); err != nil || c != nil || rec == nil || string(rec.Body) != `{"ok":true}` {
		t.Fatalf("repeat: %v, %+v, %v; want the stored answer", c, rec, err)
	}
}
