package endtoend_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/jobs"
	"github.com/agentcap/agentcap/testing/agentauthtest"
	"github.com/agentcap/agentcap/testing/captest"
)

// The client against agentcap's own location for each answer shape:
// event streams, async jobs (with Retry-After and cancellation) and
// idempotency keys.

type tickIn struct {
	N int `json:"n" minimum:"1"`
}

type tick struct {
	Seq int `json:"seq"`
}

type moveIn struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

type moveOut struct {
	OK bool `json:"ok"`
}

type longWorld struct {
	gate     chan struct{}
	reportTo chan error
	moved    atomic.Int32
}

func (w *longWorld) capabilities() []core.Definer {
	return []core.Definer{
		core.MustDefineStream("ticks", "Emit ticks.",
			func(ctx context.Context, _ struct{}, in tickIn, emit *core.Emitter[tick]) (tickIn, error) {
				for i := 1; i <= in.N; i++ {
					if err := emit.Emit(tick{Seq: i}); err != nil {
						return tickIn{}, err
					}
					if i == 1 {
						select {
						case <-w.gate:
						case <-ctx.Done():
							return tickIn{}, ctx.Err()
						}
					}
				}
				return in, nil
			}),
		core.MustDefine("report", "Build a report, as a job.",
			func(ctx context.Context, _ struct{}, in tickIn) (tickIn, error) {
				select {
				case <-w.gate:
					w.reportTo <- nil
					return in, nil
				case <-ctx.Done():
					w.reportTo <- ctx.Err()
					return tickIn{}, ctx.Err()
				}
			}, core.WithAsync()),
		core.MustDefine("move", "Move money once.",
			func(_ context.Context, _ struct{}, in moveIn) (moveOut, error) {
				w.moved.Add(1)
				return moveOut{OK: true}, nil
			}),
	}
}

func newLongProvider(t *testing.T) (*provider, *longWorld) {
	t.Helper()
	w := &longWorld{gate: make(chan struct{}), reportTo: make(chan error, 4)}
	m, err := jobs.New(jobs.Config{PollInterval: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	guard, err := idempotency.New(idempotency.Config{})
	if err != nil {
		t.Fatal(err)
	}
	exec := captest.NewExecutor(t, captest.Static(struct{}{}), core.Config{}, w.capabilities()...)
	loc := agentauthtest.NewServer(t, exec, agentauth.Config{},
		agentauthtest.Options{LongRunning: httpx.LongRunning{Jobs: m, Idempotency: guard}})
	return newProvider(t, loc), w
}

func TestExecuteStreamAgainstLocation(t *testing.T) {
	p, w := newLongProvider(t)
	a, _ := connect(t, p, "ticks")
	res, err := a.Execute(context.Background(), "ticks", map[string]int{"n": 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stream == nil {
		t.Fatalf("no stream: %s", res.Data)
	}
	var got []string
	for ev, err := range res.Stream.Events() {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Type+" "+ev.Data)
		if len(got) == 1 {
			// The handler waits for this: the event arrived while it ran.
			w.gate <- struct{}{}
		}
	}
	want := []string{`data {"seq":1}`, `data {"seq":2}`, `data {"seq":3}`, `done {"n":3}`}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

func TestExecuteAsyncAgainstLocation(t *testing.T) {
	p, w := newLongProvider(t)
	a, sl := connect(t, p, "report")
	go func() {
		// Let the client poll a few times before the job ends.
		for len(sl.waits()) < 3 {
			time.Sleep(time.Millisecond)
		}
		w.gate <- struct{}{}
	}()
	res, err := a.Execute(context.Background(), "report", map[string]int{"n": 7})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Data) != `{"n":7}` {
		t.Errorf("result %s", res.Data)
	}
	<-w.reportTo
	// The location asks for 3 s between polls (retry_after and
	// Retry-After); the client never polls sooner.
	waits := sl.waits()
	if len(waits) < 3 {
		t.Fatalf("waits %v", waits)
	}
	for _, d := range waits {
		if d < 3*time.Second {
			t.Errorf("polled after %v, before the server's Retry-After of 3s (waits %v)", d, waits)
		}
	}
}

func TestExecuteAsyncCancelDeletesTheJob(t *testing.T) {
	p, w := newLongProvider(t)
	a, sl := connect(t, p, "report")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(sl.waits()) < 2 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := a.Execute(ctx, "report", map[string]int{"n": 1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	select {
	case err := <-w.reportTo:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the job ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the job was not cancelled")
	}
}

func TestExecuteIdempotentAgainstLocation(t *testing.T) {
	p, w := newLongProvider(t)
	a, _ := connect(t, p, "move")
	for range 3 {
		res, err := a.Execute(context.Background(), "move", map[string]any{"amount": 5, "currency": "EUR"}, client.WithIdempotencyKey("move-1"))
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Data) != `{"ok":true}` {
			t.Errorf("result %s", res.Data)
		}
	}
	if n := w.moved.Load(); n != 1 {
		t.Errorf("the handler ran %d times", n)
	}
	_, err := a.Execute(context.Background(), "move", map[string]any{"amount": 6, "currency": "EUR"}, client.WithIdempotencyKey("move-1"))
	if !client.IsCode(err, agentcap.CodeIdempotencyKeyReused) {
		t.Errorf("reused key: %v", err)
	}
}
