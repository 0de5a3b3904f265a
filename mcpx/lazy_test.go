package mcpx_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/mcpx"
)

// TestLazyExecutor checks an MCP server over a lazy executor: tools/list
// never builds it; a call while the build fails is an error result with
// httpx's temporarily_unavailable envelope, and the failure is not kept;
// concurrent first calls share one build.
func TestLazyExecutor(t *testing.T) {
	reg := core.MustRegistry(capabilities(newProbe(), adminOnly)...)
	var builds atomic.Int32
	var fail atomic.Bool
	fail.Store(true)
	gate := make(chan struct{})
	lazy := core.Lazy(reg, func(context.Context) (*core.Executor, error) {
		builds.Add(1)
		if fail.Load() {
			return nil, errors.New("database not reachable yet")
		}
		<-gate
		return core.NewExecutor(reg, newApp, core.Config{})
	})
	s, err := mcpx.New(lazy, mcpx.Config{PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	cs := inMemory(t, s, person("alice"))
	ctx := timeout(t)
	if tools := listAll(t, cs); len(tools) == 0 || builds.Load() != 0 {
		t.Fatalf("%d tools listed, %d builds", len(tools), builds.Load())
	}
	call := func() (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
	}
	for range 2 {
		res, err := call()
		if err != nil || !res.IsError {
			t.Fatalf("call while the build fails: %+v %v", res, err)
		}
		const want = `{"error":"temporarily_unavailable","message":"the service is starting or cannot run capabilities right now; retry later"}`
		raw, _ := json.Marshal(res.Meta[mcpx.MetaError])
		if got := text(t, res); got != want || string(raw) != want {
			t.Errorf("error envelope %s, _meta %s", got, raw)
		}
	}
	if n := builds.Load(); n != 2 {
		t.Errorf("%d builds for 2 failed calls: the failure was kept", n)
	}
	builds.Store(0)
	fail.Store(false)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			res, err := call()
			if err != nil || res.IsError {
				t.Errorf("first calls: %+v %v", res, err)
			}
		})
	}
	time.Sleep(50 * time.Millisecond) // let every first call reach the build
	close(gate)
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Errorf("concurrent first calls ran %d builds, want 1", n)
	}
}
