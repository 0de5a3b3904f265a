package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/jobs"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

type countIn struct {
	N int `json:"n" minimum:"1"`
}

type seqChunk struct {
	Seq int `json:"seq"`
}

// longCLI is a location with a stream and a job for the execute command.
type longCLI struct {
	p     *provider
	gate  chan struct{}
	ended chan error
}

func newLongCLI(t *testing.T) *longCLI {
	t.Helper()
	l := &longCLI{gate: make(chan struct{}), ended: make(chan error, 2)}
	defs := []core.Definer{
		core.MustDefineStream("ticks", "Emit ticks.",
			func(ctx context.Context, _ struct{}, in countIn, emit *core.Emitter[seqChunk]) (countIn, error) {
				for i := 1; i <= in.N; i++ {
					if err := emit.Emit(seqChunk{Seq: i}); err != nil {
						return countIn{}, err
					}
					if i == 1 {
						select {
						case <-l.gate:
						case <-ctx.Done():
							return countIn{}, ctx.Err()
						}
					}
				}
				return in, nil
			}),
		core.MustDefine("report", "Build a report, as a job.",
			func(ctx context.Context, _ struct{}, in countIn) (countIn, error) {
				select {
				case <-l.gate:
					l.ended <- nil
					return in, nil
				case <-ctx.Done():
					l.ended <- ctx.Err()
					return countIn{}, ctx.Err()
				}
			}, core.WithAsync()),
	}
	m, err := jobs.New(jobs.Config{PollInterval: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	l.p = newProviderWith(t, defs, agentauthtest.Options{LongRunning: httpx.LongRunning{Jobs: m}})
	return l
}

// notifyWriter is a command's stdout that reports each write as it
// happens.
type notifyWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes chan string
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes <- string(p)
	return w.buf.Write(p)
}

// runCLI runs one command line under ctx with the given stdout, its
// client's waits recorded in waits.
func runCLI(ctx context.Context, state string, stdout *notifyWriter, waits *[]time.Duration, mu *sync.Mutex, args ...string) (int, string) {
	var errOut bytes.Buffer
	c := &cli{stdout: stdout, stderr: &errOut, getenv: func(k string) string {
		if k == "AGENTCAP_STATE" {
			return state
		}
		return ""
	}, clientConfig: func(cfg *client.Config) {
		cfg.Sleep = func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			*waits = append(*waits, d)
			mu.Unlock()
			return ctx.Err()
		}
	}}
	return c.run(ctx, args), errOut.String()
}

func connectCLI(t *testing.T, p *provider, caps ...string) string {
	t.Helper()
	state := t.TempDir()
	args := []string{"connect", p.URL, "--insecure-loopback", "--mode", "delegated"}
	for _, c := range caps {
		args = append(args, "--capability", c)
	}
	if code, out, errOut := agentcap(t, state, args...); code != 0 {
		t.Fatalf("connect: exit %d\n%s%s", code, out, errOut)
	}
	return state
}

// Events are printed as they arrive: the first is on stdout while the
// capability is still running.
func TestExecuteStreamPrintsEventsAsTheyArrive(t *testing.T) {
	l := newLongCLI(t)
	state := connectCLI(t, l.p, "ticks")
	out := &notifyWriter{writes: make(chan string, 16)}
	var mu sync.Mutex
	var waits []time.Duration
	done := make(chan int, 1)
	go func() {
		code, errOut := runCLI(context.Background(), state, out, &waits, &mu, "execute", "ticks", "--args", `{"n":2}`, "--insecure-loopback")
		if code != 0 {
			t.Errorf("exit %d: %s", code, errOut)
		}
		done <- code
	}()
	select {
	case first := <-out.writes:
		if first != "data: {\"seq\":1}\n" {
			t.Errorf("first output %q", first)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing printed while the stream was open")
	}
	l.gate <- struct{}{}
	<-done
	out.mu.Lock()
	defer out.mu.Unlock()
	if got := out.buf.String(); got != "data: {\"seq\":1}\ndata: {\"seq\":2}\ndone: {\"n\":2}\n" {
		t.Errorf("output %q", got)
	}
}

// The command polls a job, never sooner than the location's Retry-After,
// and prints the result.
func TestExecuteAsyncHonoursRetryAfter(t *testing.T) {
	l := newLongCLI(t)
	state := connectCLI(t, l.p, "report")
	out := &notifyWriter{writes: make(chan string, 16)}
	var mu sync.Mutex
	var waits []time.Duration
	go func() {
		for {
			mu.Lock()
			n := len(waits)
			mu.Unlock()
			if n >= 3 {
				l.gate <- struct{}{}
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	code, errOut := runCLI(context.Background(), state, out, &waits, &mu, "execute", "report", "--args", `{"n":5}`, "--insecure-loopback", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := out.buf.String(); got != "{\"n\":5}\n" {
		t.Errorf("output %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, d := range waits {
		if d < 4*time.Second {
			t.Errorf("polled after %v, before the 4 s the location asked for (%v)", d, waits)
		}
	}
}

// Ctrl-C (the command's context ending, as signal.NotifyContext does in
// main) while a job runs cancels the job with DELETE.
func TestExecuteAsyncInterruptCancelsTheJob(t *testing.T) {
	l := newLongCLI(t)
	state := connectCLI(t, l.p, "report")
	out := &notifyWriter{writes: make(chan string, 16)}
	var mu sync.Mutex
	var waits []time.Duration
	ctx, interrupt := context.WithCancel(context.Background())
	go func() {
		for {
			mu.Lock()
			n := len(waits)
			mu.Unlock()
			if n >= 2 {
				interrupt()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	code, errOut := runCLI(ctx, state, out, &waits, &mu, "execute", "report", "--args", `{"n":5}`, "--insecure-loopback")
	if code != 1 || !strings.Contains(errOut, "context canceled") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	select {
	case err := <-l.ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the job ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the job was not cancelled")
	}
}
