package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

type tickIn struct {
	N int `json:"n" minimum:"0" maximum:"10"`
}

type tick struct {
	Seq   int    `json:"seq" minimum:"1"`
	Label string `json:"label"`
}

type tickOut struct {
	Count int `json:"count"`
}

// ticker emits n chunks; n == 7 emits one that breaks the chunk schema.
var ticker = core.MustDefineStream("ticker", "Emit n ticks.",
	func(ctx context.Context, a app, in tickIn, emit *core.Emitter[tick]) (tickOut, error) {
		for i := 1; i <= in.N; i++ {
			seq := i
			if in.N == 7 && i == 3 {
				seq = 0
			}
			if err := emit.Emit(tick{Seq: seq, Label: a.User}); err != nil {
				if in.N == 7 {
					// Ignore the error: the executor must fail the call anyway.
					continue
				}
				return tickOut{}, err
			}
		}
		return tickOut{Count: in.N}, nil
	})

var slowJob = core.MustDefine("slow_job", "Wait for the context.",
	func(ctx context.Context, _ app, _ core.NoInput) (tickOut, error) {
		select {
		case <-ctx.Done():
			return tickOut{}, ctx.Err()
		case <-time.After(200 * time.Millisecond):
			return tickOut{Count: 1}, nil
		}
	}, core.WithAsync())

func streamExecutor(t *testing.T, timeout time.Duration) *core.Executor {
	t.Helper()
	return core.MustExecutor(core.MustRegistry(ticker, slowJob, core.MustDefine("echo", "Echo.", echo)),
		createContext, core.Config{Timeout: timeout})
}

func echo(_ context.Context, a app, in echoIn) (echoOut, error) {
	return echoOut{Text: in.Text, User: a.User}, nil
}

func TestStreamSinkReceivesValidatedChunks(t *testing.T) {
	e := streamExecutor(t, 0)
	var got []string
	ctx := core.WithStream(context.Background(), func(chunk json.RawMessage) error {
		got = append(got, string(chunk))
		return nil
	})
	data, err := e.Execute(ctx, "ticker", caller("u1"), []byte(`{"n":3}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"seq":1,"label":"u1"}`, `{"seq":2,"label":"u1"}`, `{"seq":3,"label":"u1"}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
	if string(data) != `{"count":3}` {
		t.Errorf("final result %s", data)
	}
}

func TestStreamWithoutSinkDropsChunks(t *testing.T) {
	e := streamExecutor(t, 0)
	out, err := core.Call(context.Background(), e, ticker, caller("u1"), tickIn{N: 2})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 2 {
		t.Errorf("count %d", out.Count)
	}
}

func TestStreamBadChunkFailsTheCall(t *testing.T) {
	e := streamExecutor(t, 0)
	var n int
	ctx := core.WithStream(context.Background(), func(json.RawMessage) error { n++; return nil })
	_, err := e.Execute(ctx, "ticker", caller("u1"), []byte(`{"n":7}`))
	if ce := coreErr(t, err); ce.Code != agentcap.CodeInternalError || ce.Stage != agentcap.StageHandler || ce.Message != "internal error" {
		t.Fatalf("err %v", err)
	}
	if n != 2 {
		t.Errorf("%d chunks reached the sink, want the 2 before the bad one", n)
	}
}

func TestStreamSinkErrorReachesHandler(t *testing.T) {
	e := streamExecutor(t, 0)
	gone := errors.New("client gone")
	ctx := core.WithStream(context.Background(), func(json.RawMessage) error { return gone })
	_, err := e.Execute(ctx, "ticker", caller("u1"), []byte(`{"n":2}`))
	if !errors.Is(err, gone) {
		t.Fatalf("err %v, want the sink's error as cause", err)
	}
}

func TestDefinitionReportsStreamAndAsync(t *testing.T) {
	if !ticker.Definition().Streams() || ticker.Definition().Async() {
		t.Error("ticker: want a stream, not async")
	}
	if slowJob.Definition().Streams() || !slowJob.Definition().Async() {
		t.Error("slow_job: want async, not a stream")
	}
	var chunk map[string]any
	if err := json.Unmarshal(ticker.Definition().ChunkSchema(), &chunk); err != nil || chunk["type"] != "object" {
		t.Errorf("chunk schema %s (%v)", ticker.Definition().ChunkSchema(), err)
	}
	if slowJob.Definition().ChunkSchema() != nil {
		t.Error("a capability that does not stream has a chunk schema")
	}
	if _, err := core.DefineStream("both", "Both.", func(context.Context, app, echoIn, *core.Emitter[tick]) (echoOut, error) {
		return echoOut{}, nil
	}, core.WithAsync()); err == nil {
		t.Error("a capability that streams and is async was defined")
	}
	if _, err := core.DefineStream[app, echoIn, chan int, echoOut]("bad_chunk", "Bad.", func(context.Context, app, echoIn, *core.Emitter[chan int]) (echoOut, error) {
		return echoOut{}, nil
	}); err == nil {
		t.Error("a chunk type without a schema was accepted")
	}
}

// Long-running capabilities are not cut by the executor's default
// timeout; ordinary ones are.
func TestLongRunningIgnoresDefaultTimeout(t *testing.T) {
	e := streamExecutor(t, 20*time.Millisecond)
	if _, err := e.Execute(context.Background(), "slow_job", caller("u1"), nil); err != nil {
		t.Fatalf("async capability: %v", err)
	}
}

func TestBatchRefusesStreamsAndJobs(t *testing.T) {
	e := streamExecutor(t, 0)
	res, err := e.ExecuteBatch(context.Background(), caller("u1"), []core.BatchCall{
		{ID: "a", Capability: "ticker", Arguments: json.RawMessage(`{"n":1}`)},
		{ID: "b", Capability: "slow_job"},
		{ID: "c", Capability: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res[:2] {
		if r.Err == nil || r.Err.Code != agentcap.CodeBatchUnsupported || string(r.Err.Code) != "batch_unsupported_result_type" || r.Err.HTTPStatus() != 400 ||
			r.Err.Stage != agentcap.StageLookup {
			t.Errorf("%s: %v", r.ID, r.Err)
		}
	}
	if res[2].Err != nil || string(res[2].Data) != `{"text":"hi","user":"u1"}` {
		t.Errorf("c: %s %v", res[2].Data, res[2].Err)
	}
}

func TestOnHandlerStartOnlyForCallsThatRun(t *testing.T) {
	e := streamExecutor(t, 0)
	for _, tc := range []struct {
		name, args string
		id         *auth.Identity
		want       int
	}{
		{"runs", `{"text":"x"}`, caller("u"), 1},
		{"bad input", `{"text":1}`, caller("u"), 0},
		{"refused context", `{"text":"x"}`, nil, 0},
	} {
		n := 0
		ctx := core.OnHandlerStart(context.Background(), func() { n++ })
		_, _ = e.Execute(ctx, "echo", tc.id, []byte(tc.args))
		if n != tc.want {
			t.Errorf("%s: start called %d times, want %d", tc.name, n, tc.want)
		}
	}
}

// Batch items share the request's context: cancelling it cancels every
// item still running.
func TestBatchItemsShareTheContext(t *testing.T) {
	started := make(chan struct{}, 3)
	block := core.MustDefine("block", "Wait for the end.",
		func(ctx context.Context, _ app, _ core.NoInput) (tickOut, error) {
			started <- struct{}{}
			<-ctx.Done()
			return tickOut{}, ctx.Err()
		})
	e := core.MustExecutor(core.MustRegistry(block), createContext, core.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for range 3 {
			<-started
		}
		cancel()
	}()
	res, err := e.ExecuteBatch(ctx, caller("u"), []core.BatchCall{{ID: "1", Capability: "block"}, {ID: "2", Capability: "block"}, {ID: "3", Capability: "block"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err == nil || r.Err.Code != agentcap.CodeCancelled {
			t.Errorf("%s: %v", r.ID, r.Err)
		}
	}
}
