package httpx_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

// Example_lazy serves capabilities whose executor needs something slow
// or fallible at start (a database pool, say): the registry is known at
// once, so listing works before the executor exists, and the first
// execution builds it.
func Example_lazy() {
	ping := core.MustDefine("ping", "Answer pong",
		func(_ context.Context, db string, _ core.NoInput) (struct {
			From string `json:"from"`
		}, error) {
			return struct {
				From string `json:"from"`
			}{db}, nil
		})
	reg := core.MustRegistry(ping)
	lazy := core.Lazy(reg, func(ctx context.Context) (*core.Executor, error) {
		fmt.Println("building the executor")
		db := "primary" // open the pool here; an error is retried by the next call
		return core.NewExecutor(reg,
			func(context.Context, *auth.Identity, *core.Definition, any) (string, error) { return db, nil },
			core.Config{})
	})
	h, err := httpx.New(lazy, httpx.Config{
		Verifier: auth.VerifierFunc(func(context.Context, *auth.Request) (*auth.Identity, error) {
			return &auth.Identity{Subject: "demo"}, nil
		}),
	})
	if err != nil {
		panic(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/capability/list", nil))
	fmt.Print(rec.Code, " built: ", lazy.Built() != nil, "\n")

	for range 2 {
		req := httptest.NewRequest("POST", "/capability/execute", strings.NewReader(`{"capability":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Print(rec.Code, " ", rec.Body.String())
	}
	// Output:
	// 200 built: false
	// building the executor
	// 200 {"data":{"from":"primary"}}
	// 200 {"data":{"from":"primary"}}
}
