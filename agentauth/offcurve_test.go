package agentauth_test

import (
	"context"
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
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
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_oc", UserID: "user_alice", Rand: rand.NewChaCha8([32]byte{3}), Clock: htClock})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agt_oc"}).Grant("check_balance", nil)
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
	_, err = v.Session(context.Background(), agent.Token(agentauthtest.Token{Audience: htAudience}))
	var ae *agentcap.Error
	if !errors.As(err, &ae) || ae.HTTPStatus() != 401 || ae.Code != agentcap.CodeInvalidJWT {
		t.Fatalf("got %v, want 401 invalid_jwt", err)
	}
}
