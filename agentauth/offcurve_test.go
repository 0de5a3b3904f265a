package agentauth_test

import (
	"context"
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// offCurveJWK is a well-formed Ed25519 JWK whose x encodes no curve point
// (no point has y = 2): no signature can verify under it.
var offCurveJWK = func() []byte {
	x := make([]byte, 32)
	x[0] = 2
	return []byte(`{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(x) + `"}`)
}()

// fixedDirectory serves records as they are, unvalidated, like a store
// written by something else.
type fixedDirectory struct {
	host  *agentauth.Host
	agent *agentauth.Agent
}

func (d fixedDirectory) Host(_ context.Context, id string) (*agentauth.Host, error) {
	if id != d.host.ID {
		return nil, agentauth.ErrNotFound
	}
	return d.host, nil
}

func (d fixedDirectory) Agent(_ context.Context, id string) (*agentauth.Agent, error) {
	if id != d.agent.ID {
		return nil, agentauth.ErrNotFound
	}
	return d.agent, nil
}

func TestOffCurveAgentKey(t *testing.T) {
	host := agentauthtest.NewHost("hst_oc", agentauthtest.WithUser("user_alice"),
		agentauthtest.WithRandom(rand.NewChaCha8([32]byte{3})), agentauthtest.WithClock(htClock))
	agent := host.NewAgent("agt_oc").Grant("check_balance", nil)
	rec := agent.Record()
	rec.PublicKey = offCurveJWK

	mem := agentauth.NewMemoryDirectory()
	if err := mem.PutHost(host.Record()); err != nil {
		t.Fatal(err)
	}
	if err := mem.PutAgent(rec); err == nil {
		t.Error("a MemoryDirectory accepted an agent key that is no curve point")
	}

	// A directory that holds one anyway: the token is refused as
	// unverifiable (401), not reported as a server fault (500).
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{
		Directory: fixedDirectory{host: host.Record(), agent: rec},
		Audiences: []string{htAudience}, Now: htClock,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Session(context.Background(), agent.Token(htAudience))
	var ae *core.AppError
	if !errors.As(err, &ae) || ae.Status != 401 || ae.Code != agentauth.CodeInvalidJWT {
		t.Fatalf("got %v, want 401 invalid_jwt", err)
	}
}
