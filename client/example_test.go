package client_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agentcap/agentcap/client"
)

func ExampleClient_Discover() {
	var issuer string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		fmt.Fprintf(w, `{"version":"1.0-draft","provider_name":"bank","issuer":%q,"algorithms":["Ed25519"],
			"modes":["delegated"],"endpoints":{"register":"/agent/register","execute":"/capability/execute"}}`, issuer)
	}))
	defer srv.Close()
	issuer = srv.URL

	c, err := client.New(client.Config{AllowInsecureLoopback: true, Keys: client.NewMemoryKeyStore()})
	if err != nil {
		panic(err)
	}
	d, err := c.Discover(context.Background(), srv.URL)
	if err != nil {
		panic(err)
	}
	register, _ := d.EndpointURL("register")
	fmt.Println(d.ProviderName, d.Version)
	fmt.Println(register == srv.URL+"/agent/register", d.DefaultLocationURL() == srv.URL+"/capability/execute")
	// Output:
	// bank 1.0-draft
	// true true
}

func ExampleCapabilityRequest() {
	reqs := []client.CapabilityRequest{
		{Name: "check_balance"},
		{Name: "transfer", Constraints: map[string]json.RawMessage{"amount": json.RawMessage(`{"max":1000}`)}},
	}
	b, _ := json.Marshal(reqs)
	fmt.Println(string(b))
	// Output: ["check_balance",{"name":"transfer","constraints":{"amount":{"max":1000}}}]
}

func ExampleDefaultNamespace() {
	fmt.Println(client.DefaultNamespace("bank", "accounts.list"))
	// Output: bank__accounts_list
}

func ExampleThumbprint() {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	tp, _ := client.Thumbprint(key.Public().(ed25519.PublicKey))
	fmt.Println(len(tp))
	// Output: 43
}

func ExampleStream_Events() {
	body := "event: data\ndata: {\"n\":1}\n\nevent: done\ndata: {\"total\":1}\n\n"
	for ev, err := range client.NewStream(strings.NewReader(body)).Events() {
		if err != nil {
			panic(err)
		}
		fmt.Println(ev.Type, ev.Data)
	}
	// Output:
	// data {"n":1}
	// done {"total":1}
}
