package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

type balance struct {
	Account string `json:"account"`
}

type cents struct {
	Cents int `json:"cents"`
}

// ExampleNew wires a provider and its capability location into one
// site: discovery, the provider endpoints, the approval page (with the
// development sign-in) and capability execution, all over one store.
func ExampleNew() {
	reg, err := core.NewRegistry(core.MustDefine("check_balance", "Read an account's balance.",
		func(_ context.Context, _ *auth.Identity, in balance) (cents, error) { return cents{1250}, nil }))
	if err != nil {
		panic(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()

	dev := provider.NewDevLogin(provider.User{ID: "alice", Name: "Alice"}, provider.User{ID: "bob", Name: "Bob"})
	prov, err := provider.New(provider.Config{
		Issuer:       issuer,
		ProviderName: "bank",
		Store:        store.NewMemory(nil),
		Registry:     reg,
		SignedInUser: dev.SignedInUser,
		SignInURL:    "/login",
	})
	if err != nil {
		panic(err)
	}
	exec, err := core.NewExecutor(reg, core.IdentityContext, core.Config{})
	if err != nil {
		panic(err)
	}
	// The provider verifies the agents of its capability location.
	location, err := httpx.New(exec, httpx.Config{Verifier: prov})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/login", dev)
	mux.Handle("/", prov.Handler(location))
	srv.Config.Handler = mux
	srv.Start()
	defer srv.Close()

	resp, err := http.Get(issuer + "/.well-known/agent-configuration")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Methods   []string          `json:"approval_methods"`
		Endpoints map[string]string `json:"endpoints"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		panic(err)
	}
	fmt.Println(doc.Methods, doc.Endpoints["register"], doc.Endpoints["execute"])
	// Output: [device_authorization] /agent/register /capability/execute
}
