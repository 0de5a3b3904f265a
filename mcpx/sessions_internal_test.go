package mcpx

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSessionTableAccounting opens SDK sessions straight into a table of
// two sessions, one per owner: a third owner is refused and nobody loses
// a session for it, an owner at its limit gives up its own, and a
// session that ends makes room.
func TestSessionTableAccounting(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "test"}, nil)
	session := func(id string) *mcp.ServerSession {
		t.Helper()
		ss, err := srv.Connect(context.Background(), &mcp.StreamableServerTransport{SessionID: id}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ss.Close() })
		return ss
	}
	tracked := func(tb *sessionTable) []string {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		var ids []string
		for _, id := range []string{"a1", "a2", "b1", "c1"} {
			if tb.byID[id] != nil {
				ids = append(ids, id)
			}
		}
		return ids
	}
	await := func(tb *sessionTable, want []string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !slices.Equal(tracked(tb), want) {
			if time.Now().After(deadline) {
				t.Fatalf("tracked %v, want %v", tracked(tb), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	tb := newSessionTable(2, 1, 0)
	a1, b1, c1, a2 := session("a1"), session("b1"), session("c1"), session("a2")
	for _, o := range []struct {
		ss    *mcp.ServerSession
		owner string
	}{{a1, "alice"}, {b1, "bob"}} {
		if err := tb.open(o.ss, o.owner); err != nil {
			t.Fatalf("%s: %v", o.ss.ID(), err)
		}
	}
	var je *jsonrpc.Error
	if err := tb.open(c1, "carol"); !errors.As(err, &je) || je.Code != codeTooManySessions {
		t.Errorf("a third owner in a full table: %v", err)
	}
	if got := tracked(tb); !slices.Equal(got, []string{"a1", "b1"}) || !tb.full("carol") || tb.full("alice") {
		t.Errorf("after the refusal: tracked %v, full for carol %v, for alice %v", got, tb.full("carol"), tb.full("alice"))
	}
	if err := tb.open(a2, "alice"); err != nil {
		t.Fatalf("alice at her limit: %v", err)
	}
	if got := tracked(tb); !slices.Equal(got, []string{"a2", "b1"}) {
		t.Errorf("after alice's second session: tracked %v", got)
	}
	ended := make(chan struct{})
	go func() { _ = a1.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("alice's first session was not closed")
	}
	_ = b1.Close()
	await(tb, []string{"a2"})
	if err := tb.open(c1, "carol"); err != nil {
		t.Errorf("carol after bob's session ended: %v", err)
	}
}
