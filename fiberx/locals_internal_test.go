package fiberx

import (
	"context"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

type ctxKey struct{}

// TestSnapshotLocals checks that the snapshot holds the Locals and only
// them: Fiber's own entry for the user context is not copied, so a
// request without Locals gets the user context itself.
func TestSnapshotLocals(t *testing.T) {
	app := fiber.New()
	c := app.AcquireCtx(&fasthttp.RequestCtx{})
	defer app.ReleaseCtx(c)
	user := context.WithValue(context.Background(), ctxKey{}, "user")
	c.SetUserContext(user)
	if got := snapshotLocals(c); got != user {
		t.Fatalf("without Locals the snapshot is %#v, want the user context itself", got)
	}
	c.Locals("tenant", "acme")
	c.Locals(ctxKey{}, "local wins")
	lc, ok := snapshotLocals(c).(localsContext)
	if !ok {
		t.Fatal("with Locals the snapshot is not a localsContext")
	}
	if len(lc.locals) != 2 {
		t.Errorf("snapshot holds %d entries, want the 2 Locals: %v", len(lc.locals), lc.locals)
	}
	if got := lc.Value("tenant"); got != "acme" {
		t.Errorf("tenant %v", got)
	}
	if got := lc.Value(ctxKey{}); got != "local wins" {
		t.Errorf("a Local and a user context value under one key: %v", got)
	}
	if got := lc.Value(fiberUserContext); got != nil {
		t.Errorf("Fiber's own entry reached the snapshot: %v", got)
	}
}
