package mcpx

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

type waitOut struct {
	Done bool `json:"done"`
}

// TestCanceledCallGoesUnanswered speaks JSON-RPC to Run's transport over
// pipes: after notifications/cancelled for a call under way, the call's
// context is canceled and no response for it is written, although the
// handler returns one (the SDK alone writes it). A logging transport
// outside Run's tells when the SDK has handed the canceled call's answer
// on, so the check needs no timing.
func TestCanceledCallGoesUnanswered(t *testing.T) {
	started, ended := make(chan struct{}, 1), make(chan error, 1)
	reg := core.MustRegistry(core.MustDefine("wait", "Wait until canceled.",
		func(ctx context.Context, _ struct{}, _ core.NoInput) (waitOut, error) {
			started <- struct{}{}
			<-ctx.Done()
			ended <- ctx.Err()
			return waitOut{}, ctx.Err()
		}))
	exec, err := core.NewExecutor(reg, func(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) {
		return struct{}{}, nil
	}, core.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(exec, Config{})
	if err != nil {
		t.Fatal(err)
	}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	logR, logW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var id *auth.Identity
	done := make(chan error, 1)
	go func() {
		done <- s.newMCPServer(&id).Run(ctx, &mcp.LoggingTransport{
			Transport: stream(&mcp.IOTransport{Reader: inR, Writer: outW}),
			Writer:    logW,
		})
	}()
	defer func() {
		inW.Close()
		cancel()
		<-done
	}()
	lines := func(r io.Reader) <-chan string {
		ch := make(chan string, 64)
		go func() {
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				ch <- sc.Text()
			}
			close(ch)
		}()
		return ch
	}
	out, logs := lines(outR), lines(logR)
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// next returns the next line of ch holding want.
	next := func(ch <-chan string, want string) string {
		t.Helper()
		timer := time.NewTimer(10 * time.Second)
		defer timer.Stop()
		for {
			select {
			case l, ok := <-ch:
				if !ok {
					t.Fatalf("the stream ended before %s", want)
				}
				if strings.Contains(l, want) {
					return l
				}
			case <-timer.C:
				t.Fatalf("no %s", want)
			}
		}
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	next(out, `"id":1`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait"}}`)
	<-started
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"the user gave up"}}`)
	if err := <-ended; err != context.Canceled {
		t.Fatalf("the call ended with %v", err)
	}
	// The SDK handed on its answer to the canceled call...
	next(logs, `write: {"jsonrpc":"2.0","id":2,`)
	// ...and what reached the pipe before a later answer holds none.
	send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	for {
		l := next(out, `"id":`)
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(l), &msg); err != nil {
			t.Fatal(err)
		}
		if string(msg.ID) == "2" {
			t.Fatalf("the canceled call was answered: %s", l)
		}
		if string(msg.ID) == "3" {
			break
		}
	}
}
