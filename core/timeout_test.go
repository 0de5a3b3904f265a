package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/core"
)

// runWith executes a capability whose handler is h, with the given timeout.
func runWith(t *testing.T, ctx context.Context, timeout time.Duration, h func(context.Context, app, core.NoInput) (echoOut, error)) error {
	t.Helper()
	def := core.MustDefine("probe", "Probes its context.", h, core.WithTimeout(timeout))
	e := mustExec(t, core.Config{}, def)
	_, err := e.Execute(ctx, "probe", caller("a"), nil)
	return err
}

func TestTimeoutContext(t *testing.T) {
	t.Run("handler never looks at its context", func(t *testing.T) {
		if err := runWith(t, context.Background(), time.Hour, func(context.Context, app, core.NoInput) (echoOut, error) {
			return echoOut{Text: "ok"}, nil
		}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("deadline reported at once", func(t *testing.T) {
		before := time.Now()
		var deadline time.Time
		var ok bool
		if err := runWith(t, context.Background(), time.Minute, func(ctx context.Context, _ app, _ core.NoInput) (echoOut, error) {
			deadline, ok = ctx.Deadline()
			return echoOut{}, nil
		}); err != nil {
			t.Fatal(err)
		}
		if !ok || deadline.Before(before.Add(time.Minute)) || deadline.After(time.Now().Add(time.Minute)) {
			t.Errorf("Deadline = %v, %v", deadline, ok)
		}
	})

	t.Run("parent deadline earlier", func(t *testing.T) {
		// Long enough for the stages before the handler to finish on a
		// loaded machine, so that the deadline falls inside the handler.
		parent, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		want, _ := parent.Deadline()
		err := runWith(t, parent, time.Hour, func(ctx context.Context, _ app, _ core.NoInput) (echoOut, error) {
			if got, _ := ctx.Deadline(); !got.Equal(want) {
				t.Errorf("Deadline = %v, want the parent's %v", got, want)
			}
			<-ctx.Done()
			return echoOut{}, ctx.Err()
		})
		if ce := coreErr(t, err); ce.Code != agentcap.CodeTimeout || ce.Stage != agentcap.StageHandler {
			t.Fatalf("got %+v", ce)
		}
	})

	t.Run("handler waits on Done and times out", func(t *testing.T) {
		err := runWith(t, context.Background(), 10*time.Millisecond, func(ctx context.Context, _ app, _ core.NoInput) (echoOut, error) {
			select {
			case <-ctx.Done():
				return echoOut{}, ctx.Err()
			case <-time.After(5 * time.Second):
				return echoOut{}, errors.New("the deadline never came")
			}
		})
		if ce := coreErr(t, err); ce.Code != agentcap.CodeTimeout || ce.HTTPStatus() != 504 {
			t.Fatalf("got %+v", ce)
		}
	})

	t.Run("handler checks Err after the deadline without waiting", func(t *testing.T) {
		err := runWith(t, context.Background(), 5*time.Millisecond, func(ctx context.Context, _ app, _ core.NoInput) (echoOut, error) {
			time.Sleep(15 * time.Millisecond)
			return echoOut{}, ctx.Err()
		})
		if ce := coreErr(t, err); ce.Code != agentcap.CodeTimeout {
			t.Fatalf("got %+v", ce)
		}
	})

	t.Run("parent canceled while the handler waits", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		defer cancel()
		started := make(chan struct{})
		go func() {
			<-started
			cancel()
		}()
		err := runWith(t, parent, time.Hour, func(ctx context.Context, _ app, _ core.NoInput) (echoOut, error) {
			close(started)
			<-ctx.Done()
			return echoOut{}, ctx.Err()
		})
		if ce := coreErr(t, err); ce.Code != agentcap.CodeCancelled || ce.Stage != agentcap.StageHandler {
			t.Fatalf("got %+v", ce)
		}
	})

	t.Run("goroutine outliving the call", func(t *testing.T) {
		type seen struct {
			doneClosed bool
			err        error
		}
		waiter := make(chan seen, 1)
		late := make(chan seen, 1)
		var kept context.Context
		release := make(chan struct{})
		if err := runWith(t, context.Background(), time.Hour, func(ctx context.Context, _ app, _ core.NoInput) (echoOut, error) {
			kept = ctx
			// One goroutine waits on Done during the call, another first
			// touches the context after it.
			go func() {
				<-ctx.Done()
				waiter <- seen{true, ctx.Err()}
			}()
			go func() {
				<-release
				select {
				case <-ctx.Done():
					late <- seen{true, ctx.Err()}
				default:
					late <- seen{false, ctx.Err()}
				}
			}()
			return echoOut{}, nil
		}); err != nil {
			t.Fatal(err)
		}
		close(release)
		for name, ch := range map[string]chan seen{"waiting": waiter, "late": late} {
			select {
			case s := <-ch:
				if !s.doneClosed || !errors.Is(s.err, context.Canceled) {
					t.Errorf("%s goroutine saw Done closed=%v, Err=%v; want a canceled context", name, s.doneClosed, s.err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s goroutine never saw the end of the call", name)
			}
		}
		if !errors.Is(kept.Err(), context.Canceled) {
			t.Errorf("Err after the call = %v", kept.Err())
		}
	})

	t.Run("no timeout", func(t *testing.T) {
		def := core.MustDefine("probe", "Probes its context.", func(ctx context.Context, _ app, _ core.NoInput) (echoOut, error) {
			if _, ok := ctx.Deadline(); ok {
				t.Error("a deadline was set though the timeout is disabled")
			}
			return echoOut{}, nil
		})
		e := mustExec(t, core.Config{Timeout: -1}, def)
		if _, err := e.Execute(context.Background(), "probe", caller("a"), nil); err != nil {
			t.Fatal(err)
		}
	})
}
