package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// ExampleNotifierFunc offers CIBA (protocol §7.2): a client that prefers
// it, with a login hint the provider resolves, gets a "ciba" approval
// object, and the Notifier reaches the user with a link to review it.
func ExampleNotifierFunc() {
	reg := core.MustRegistry(core.MustDefine("check_balance", "Read an account's balance.",
		func(_ context.Context, _ struct{}, in balance) (cents, error) { return cents{1250}, nil }))
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	notified := make(chan provider.Notification, 1)
	prov, err := provider.New(provider.Config{
		Issuer: issuer, ProviderName: "bank", Store: store.NewMemory(nil), Registry: reg,
		Notifier: provider.NotifierFunc(func(_ context.Context, n provider.Notification) error {
			notified <- n // in an application: a push message, an e-mail
			return nil
		}),
		ResolveLoginHint: func(_ context.Context, hint string) (string, error) {
			if hint == "alice@bank.example" {
				return "user_alice", nil
			}
			return "", nil
		},
	})
	if err != nil {
		panic(err)
	}
	srv.Config.Handler = prov.Handler(nil)
	srv.Start()
	defer srv.Close()

	host := agentauthtest.NewHost(agentauthtest.Host{ID: "host"})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agent"})
	body, _ := json.Marshal(map[string]any{"name": "Budget helper", "capabilities": []string{"check_balance"},
		"preferred_method": "ciba", "login_hint": "alice@bank.example", "binding_message": "Check my balance"})
	req, _ := http.NewRequest(http.MethodPost, issuer+provider.PathRegister, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+host.Token(agentauthtest.Token{Audience: issuer, Agent: agent}))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Approval struct {
			Method         string `json:"method"`
			BindingMessage string `json:"binding_message"`
		} `json:"approval"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		panic(err)
	}
	n := <-notified
	fmt.Println(answer.Approval.Method, strings.HasPrefix(answer.Approval.BindingMessage, "Check my balance ["))
	fmt.Println(n.UserID, n.BindingMessage == answer.Approval.BindingMessage, strings.HasPrefix(n.ReviewURL, issuer+"/approve?request="))
	// Output:
	// ciba true
	// user_alice true true
}
