package mcpcancel

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeConn hands out the messages of in and records what is written.
type fakeConn struct {
	in      []jsonrpc.Message
	written []jsonrpc.Message
}

func (f *fakeConn) Read(context.Context) (jsonrpc.Message, error) {
	m := f.in[0]
	f.in = f.in[1:]
	return m, nil
}

func (f *fakeConn) Write(_ context.Context, m jsonrpc.Message) error {
	f.written = append(f.written, m)
	return nil
}

func (f *fakeConn) Close() error      { return nil }
func (f *fakeConn) SessionID() string { return "" }

type fakeTransport struct{ c *fakeConn }

func (t fakeTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

func id(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	i, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func call(t *testing.T, v any, method string) *jsonrpc.Request {
	return &jsonrpc.Request{ID: id(t, v), Method: method, Params: json.RawMessage(`{}`)}
}

func cancel(raw string) *jsonrpc.Request {
	return &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":` + raw + `}`)}
}

func answer(t *testing.T, v any) *jsonrpc.Response {
	return &jsonrpc.Response{ID: id(t, v), Result: json.RawMessage(`{}`)}
}

// TestCanceledCallsGoUnanswered: once a call's cancellation is read, its
// answer is not written; every other answer is, whatever the order.
func TestCanceledCallsGoUnanswered(t *testing.T) {
	f := &fakeConn{in: []jsonrpc.Message{
		call(t, 0.0, "initialize"),
		call(t, 1.0, "tools/call"),
		call(t, "two", "tools/call"),
		call(t, 3.0, "tools/call"),
		cancel(`1`),
		cancel(`"two"`),
		cancel(`0`),       // initialize is not canceled
		cancel(`9`),       // never made
		cancel(`{"x":1}`), // not an id
		cancel(`null`),    // no id
		call(t, 4.0, "tools/call"),
		cancel(`4`),
		// After its answer, a cancellation of 3 is too late, and 3 may be
		// used again.
		cancel(`3`),
		call(t, 3.0, "tools/call"),
	}}
	c, err := Transport(fakeTransport{f}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	read := func(n int) {
		for range n {
			if _, err := c.Read(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	write := func(m jsonrpc.Message) {
		if err := c.Write(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	read(10)
	write(answer(t, 0.0))
	write(answer(t, 1.0))
	write(answer(t, "two"))
	write(answer(t, 3.0))
	// A notification the server sends goes out.
	write(&jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{}`)})
	read(2)
	write(answer(t, 4.0))
	read(2)
	write(answer(t, 3.0))

	var got []any
	for _, m := range f.written {
		switch m := m.(type) {
		case *jsonrpc.Response:
			got = append(got, m.ID.Raw())
		case *jsonrpc.Request:
			got = append(got, m.Method)
		}
	}
	want := []any{int64(0), int64(3), "notifications/progress", int64(3)}
	if !slices.Equal(got, want) {
		t.Errorf("written %v, want %v", got, want)
	}
}

// TestHTTPTransportsAreLeftAlone: the SDK's HTTP server transports carry
// cancellation in the request stream and are not wrapped; a wrapped
// transport is not wrapped twice.
func TestHTTPTransportsAreLeftAlone(t *testing.T) {
	for _, tr := range []mcp.Transport{&mcp.StreamableServerTransport{}, &mcp.SSEServerTransport{}} {
		if got := Transport(tr); got != tr {
			t.Errorf("%T was wrapped", tr)
		}
	}
	w := Transport(&mcp.StdioTransport{})
	if Transport(w) != w {
		t.Error("a wrapped transport was wrapped again")
	}
	if !w.(mcp.ProtocolVersionSupporter).SupportsProtocolVersion("2026-07-28") {
		t.Error("wrapping stdio took 2026-07-28 away")
	}
}
