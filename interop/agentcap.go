//go:build interop

package interop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

// agentcapUser is the user who approves at the agentcap provider.
const agentcapUser = "user_interop"

// replayCoder is implemented by providers whose answer to a replayed
// agent JWT is not the protocol's invalid_jwt.
type replayCoder interface {
	// ReplayCode is the error code the provider answers a replayed
	// agent JWT with at its default location.
	ReplayCode() string
}

// ReplayCode implements replayCoder: the reference provider answers
// jti_replay (see README.md).
func (r *reference) ReplayCode() string { return "jti_replay" }

// agentcapProvider is agentcap's own provider (package
// agentauth/provider) with the same capabilities and policy as the
// reference harness, served on a loopback port by this process.
type agentcapProvider struct {
	prov     *provider.Provider
	srv      *http.Server
	issuer   string
	location string
}

type echoIO struct {
	Message string `json:"message"`
}

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

type transferIn struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

type transferOut struct {
	TransferID string  `json:"transfer_id"`
	Amount     float64 `json:"amount"`
	Currency   string  `json:"currency"`
}

// newAgentcapProvider starts agentcap's provider on a free loopback port,
// with agentcap_echo located at location, which the caller serves.
func newAgentcapProvider(location string) (*agentcapProvider, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	issuer := "http://" + ln.Addr().String()
	var transfers int
	var mu = make(chan struct{}, 1)
	reg, err := core.NewRegistry(
		core.MustDefine("echo", "Return the message it was given.",
			func(_ context.Context, _ struct{}, in echoIO) (echoIO, error) { return in, nil }),
		core.MustDefine("add", "Add two numbers.",
			func(_ context.Context, _ struct{}, in addIn) (addOut, error) { return addOut{in.A + in.B}, nil }),
		core.MustDefine("transfer", "Move money between accounts.",
			func(_ context.Context, _ struct{}, in transferIn) (transferOut, error) {
				mu <- struct{}{}
				transfers++
				n := transfers
				<-mu
				return transferOut{fmt.Sprintf("tr_%d", n), in.Amount, in.Currency}, nil
			}, core.WithRisk(core.RiskHigh)),
		core.MustDefine(locationCapability, "Echo, executed by an agentcap resource server.",
			func(_ context.Context, _ struct{}, in echoIO) (echoIO, error) { return in, nil },
			core.WithLocation(location)),
	)
	if err != nil {
		ln.Close()
		return nil, err
	}
	prov, err := provider.New(provider.Config{
		Issuer:       issuer,
		ProviderName: "agentcap-interop",
		Description:  "agentcap's provider under the interop suite",
		Store:        store.NewMemory(nil),
		Registry:     reg,
		Policy: provider.Policy{
			// As in the reference harness: autonomous hosts get echo
			// and add; delegated agents always ask the user.
			HostDefaults: func(_ context.Context, h provider.NewHost) []string {
				if h.Mode == agentcap.ModeAutonomous {
					return []string{"echo", "add"}
				}
				return nil
			},
		},
		PollInterval: time.Second,
		// CIBA requests reach the approving user through their list of
		// pending requests (Decide); nothing else needs telling.
		Notifier: provider.NotifierFunc(func(context.Context, provider.Notification) error { return nil }),
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	exec, err := core.NewExecutor(reg, noContext, core.Config{})
	if err != nil {
		ln.Close()
		return nil, err
	}
	// The provider verifies its agents' tokens at its own location.
	loc, err := httpx.New(exec, httpx.Config{Verifier: prov})
	if err != nil {
		ln.Close()
		return nil, err
	}
	a := &agentcapProvider{prov: prov, issuer: issuer, location: location}
	a.srv = &http.Server{Handler: prov.Handler(loc), ReadHeaderTimeout: 10 * time.Second}
	go a.srv.Serve(ln)
	return a, nil
}

// Close stops the provider.
func (a *agentcapProvider) Close() error { return a.srv.Close() }

// Name implements providerUnderTest.
func (a *agentcapProvider) Name() string { return "agentcap" }

// URL implements providerUnderTest.
func (a *agentcapProvider) URL() string { return a.issuer }

// Issuer implements providerUnderTest.
func (a *agentcapProvider) Issuer() string { return a.issuer }

// Location implements providerUnderTest.
func (a *agentcapProvider) Location() string { return a.location }

// Decide implements providerUnderTest through the provider's approval API, as the
// approval page does for a signed-in user: by user code for device
// authorization, and for a CIBA request (which has none) by the id of
// the agent's request among those waiting for the user. The interop
// capabilities have no webauthn strength, so no presence confirmation is
// involved.
func (a *agentcapProvider) Decide(ctx context.Context, d decision) error {
	dec := provider.Decision{
		UserCode:     d.UserCode,
		UserID:       agentcapUser,
		Deny:         d.Deny,
		Capabilities: d.Capabilities,
	}
	if d.UserCode == "" {
		aps, err := a.prov.UserApprovals(ctx, agentcapUser)
		if err != nil {
			return err
		}
		for _, ap := range aps {
			if ap.AgentID == d.AgentID {
				dec.ApprovalID = ap.ID
			}
		}
		if dec.ApprovalID == "" {
			return errors.New("interop: no request of agent " + d.AgentID + " waits for the user")
		}
	}
	return a.prov.Decide(ctx, dec)
}

// noContext is the context function of the interop capabilities, which
// need nothing of the caller's.
func noContext(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) {
	return struct{}{}, nil
}
