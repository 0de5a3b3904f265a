package store_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func tp(d time.Duration) *time.Time { t := t0.Add(d); return &t }

func TestPolicyDeadlineAndLapsed(t *testing.T) {
	p := store.Policy{SessionTTL: 30 * time.Minute, MaxLifetime: 24 * time.Hour, AbsoluteLifetime: 7 * 24 * time.Hour}
	for _, tc := range []struct {
		name     string
		a        store.Agent
		deadline *time.Time
		at       time.Duration
		lapsed   string
	}{
		{"fresh, never used", store.Agent{Status: agentcap.StatusActive, CreatedAt: t0}, tp(30 * time.Minute), 29 * time.Minute, ""},
		{"idle exactly TTL", store.Agent{Status: agentcap.StatusActive, CreatedAt: t0}, tp(30 * time.Minute), 30 * time.Minute, agentcap.StatusExpired},
		{"last use counts", store.Agent{Status: agentcap.StatusActive, CreatedAt: t0, ActivatedAt: tp(time.Hour), LastUsedAt: tp(2 * time.Hour)}, tp(150 * time.Minute), 149 * time.Minute, ""},
		{"activation counts", store.Agent{Status: agentcap.StatusActive, CreatedAt: t0, ActivatedAt: tp(3 * time.Hour), LastUsedAt: tp(2 * time.Hour)}, tp(210 * time.Minute), 210 * time.Minute, agentcap.StatusExpired},
		{"max lifetime", store.Agent{Status: agentcap.StatusActive, CreatedAt: t0, ActivatedAt: tp(time.Hour), LastUsedAt: tp(25*time.Hour - time.Minute)}, tp(25 * time.Hour), 25 * time.Hour, agentcap.StatusExpired},
		{"absolute", store.Agent{Status: agentcap.StatusActive, CreatedAt: t0, ActivatedAt: tp(167*time.Hour + 50*time.Minute)}, tp(168 * time.Hour), 168 * time.Hour, agentcap.StatusRevoked},
		{"expired past absolute", store.Agent{Status: agentcap.StatusExpired, CreatedAt: t0}, tp(30 * time.Minute), 168 * time.Hour, agentcap.StatusRevoked},
		{"expired before absolute", store.Agent{Status: agentcap.StatusExpired, CreatedAt: t0}, tp(30 * time.Minute), 100 * time.Hour, ""},
		{"stored deadline", store.Agent{Status: agentcap.StatusActive, CreatedAt: t0, ExpiresAt: tp(time.Minute)}, tp(30 * time.Minute), time.Minute, agentcap.StatusExpired},
		{"pending never lapses here", store.Agent{Status: agentcap.StatusPending, CreatedAt: t0}, tp(30 * time.Minute), 1000 * time.Hour, ""},
		{"revoked stays", store.Agent{Status: agentcap.StatusRevoked, CreatedAt: t0}, tp(30 * time.Minute), 1000 * time.Hour, ""},
	} {
		d := p.Deadline(&tc.a)
		if (d == nil) != (tc.deadline == nil) || (d != nil && !d.Equal(*tc.deadline)) {
			t.Errorf("%s: Deadline = %v, want %v", tc.name, d, tc.deadline)
		}
		if got := p.Lapsed(&tc.a, t0.Add(tc.at)); got != tc.lapsed {
			t.Errorf("%s: Lapsed at +%v = %q, want %q", tc.name, tc.at, got, tc.lapsed)
		}
	}
	if d := (store.Policy{PendingTTL: time.Hour}).Deadline(&store.Agent{CreatedAt: t0}); d != nil {
		t.Errorf("no lifetime clocks: Deadline = %v", d)
	}
}

func TestStatusError(t *testing.T) {
	err := store.CheckStatus("agent", "agt_1", agentcap.StatusRevoked, []string{agentcap.StatusActive, agentcap.StatusPending})
	var se *store.StatusError
	if !errors.As(err, &se) || !errors.Is(err, store.ErrStatus) || se.Status != agentcap.StatusRevoked {
		t.Fatalf("CheckStatus = %v", err)
	}
	if got := err.Error(); got != `store: agent "agt_1" is revoked, not active or pending` {
		t.Errorf("message %q", got)
	}
	if err := store.CheckStatus("agent", "a", "active", []string{"active"}); err != nil {
		t.Error(err)
	}
}

func TestHashCode(t *testing.T) {
	if store.HashCode("") != "" {
		t.Error("the empty code has a digest")
	}
	h := store.HashCode("ABCD-1234")
	if len(h) != 43 || strings.Contains(h, "ABCD") || h == store.HashCode("abcd-1234") {
		t.Errorf("HashCode = %q", h)
	}
}

// FuzzPrepareAgentKey feeds arbitrary public JWKs, as a host JWT carries
// them, to the key check: it must never panic, and a key it accepts must
// be one the agentauth directory accepts too, named by its thumbprint.
func FuzzPrepareAgentKey(f *testing.F) {
	f.Add([]byte(agentauthtest.PublicJWK(make([]byte, 32))))
	f.Add([]byte(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`))
	f.Add([]byte(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","d":"x"}`))
	f.Add([]byte(`{"kty":"RSA"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, jwk []byte) {
		k, err := store.PrepareAgentKey(store.AgentKey{PublicKey: jwk})
		if err != nil {
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if len(k.Thumbprint) != 43 {
			t.Fatalf("thumbprint %q", k.Thumbprint)
		}
		d := agentauth.NewMemoryDirectory()
		if err := d.PutHost(&agentauth.Host{ID: "h", Status: agentcap.StatusActive, PublicKey: json.RawMessage(jwk)}); err != nil {
			t.Fatalf("the store accepted a key agentauth refuses: %v", err)
		}
	})
}
