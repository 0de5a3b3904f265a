// Package mcpcancel keeps an MCP server from answering a request that its
// client canceled. The specification asks a receiver of
// notifications/cancelled not to send a response for the canceled
// request, and a client may reuse the id once it has canceled it; the
// SDK cancels the handler's context but still writes whatever the
// handler returns. Transport wraps a stream transport (stdio, an
// io.Reader and io.Writer pair, in-memory pipes) so that the response to
// a call is dropped once its cancellation has been read.
//
// The wrapper hides the SDK's private hooks of the connection it wraps.
// Over stdio that costs one check: the SDK no longer learns the
// negotiated version on the connection, so it takes JSON-RPC batches at
// every version instead of refusing them from 2025-06-18 on. A batch
// whose call is canceled would wait for that call's answer, which never
// comes; batches exist only up to 2025-03-26, whose clients seldom send
// them and cancel within them less.
package mcpcancel

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	methodCancelled  = "notifications/cancelled"
	methodInitialize = "initialize"
)

// Transport returns t with the responses to canceled calls dropped. The
// SDK's HTTP server transports are returned as they are: over HTTP a
// client cancels by closing the call's response stream, and their
// connections carry behaviour a wrapper would hide.
func Transport(t mcp.Transport) mcp.Transport {
	switch t.(type) {
	case *mcp.StreamableServerTransport, *mcp.SSEServerTransport, transport:
		return t
	}
	return transport{t}
}

// transport wraps the connections of a transport.
type transport struct{ inner mcp.Transport }

func (t transport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{Connection: c, calls: map[jsonrpc.ID]bool{}}, nil
}

// SupportsProtocolVersion passes the inner transport's answer on, so that
// wrapping changes no version the server offers.
func (t transport) SupportsProtocolVersion(version string) bool {
	if s, ok := t.inner.(mcp.ProtocolVersionSupporter); ok {
		return s.SupportsProtocolVersion(version)
	}
	return true
}

// conn tracks the calls read and not yet answered, and which of them
// were canceled.
type conn struct {
	mcp.Connection

	mu sync.Mutex
	// calls maps the id of every call in flight to whether its client
	// canceled it.
	calls map[jsonrpc.ID]bool
}

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok {
		return msg, err
	}
	switch {
	case req.IsCall():
		// initialize must not be canceled, so its answer always goes.
		if req.Method != methodInitialize {
			c.mu.Lock()
			c.calls[req.ID] = false
			c.mu.Unlock()
		}
	case req.Method == methodCancelled:
		if id, ok := canceledID(req.Params); ok {
			c.mu.Lock()
			// A cancellation of a call already answered, or never made,
			// is ignored: the id may come again for another call.
			if _, inFlight := c.calls[id]; inFlight {
				c.calls[id] = true
			}
			c.mu.Unlock()
		}
	}
	return msg, nil
}

func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		canceled := c.calls[resp.ID]
		delete(c.calls, resp.ID)
		c.mu.Unlock()
		if canceled {
			return nil
		}
	}
	return c.Connection.Write(ctx, msg)
}

// canceledID reads the request id of a notifications/cancelled.
func canceledID(params json.RawMessage) (jsonrpc.ID, bool) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || p.RequestID == nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	return id, err == nil && id.IsValid()
}
