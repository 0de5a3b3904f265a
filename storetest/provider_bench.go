package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/store"
)

// BenchProvider runs the benchmarks of the store's hot paths, each on a fresh
// store from open: the directory read the verifier makes for every agent
// JWT, the activity record of every authenticated request, a grant
// update, and a registration.
func BenchProvider(b *testing.B, open func(b *testing.B) store.Store) {
	setup := func(b *testing.B) store.Store {
		s := open(b)
		if err := s.CreateHost(ctx, newHost("hst_1")); err != nil {
			b.Fatal(err)
		}
		a := newAgent("agt_1", "hst_1")
		for i := range 8 {
			a.Grants = append(a.Grants, store.Grant{Capability: fmt.Sprintf("cap_%d", i), Status: agentcap.StatusActive,
				Constraints: map[string]json.RawMessage{"amount": json.RawMessage(`{"max":1000}`)}})
		}
		if err := s.CreateAgent(ctx, a); err != nil {
			b.Fatal(err)
		}
		return s
	}
	b.Run("DirectoryAgent", func(b *testing.B) {
		s := setup(b)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Agent(ctx, "agt_1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("TouchAgent", func(b *testing.B) {
		s := setup(b)
		p := store.Policy{SessionTTL: time.Hour, MaxLifetime: 1000 * time.Hour}
		now := base
		b.ReportAllocs()
		for b.Loop() {
			now = now.Add(time.Millisecond)
			if err := s.TouchAgent(ctx, "agt_1", now, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PutGrants", func(b *testing.B) {
		s := setup(b)
		g := []store.Grant{{Capability: "cap_3", Status: agentcap.StatusActive, Constraints: map[string]json.RawMessage{"amount": json.RawMessage(`{"max":5}`)}}}
		b.ReportAllocs()
		for b.Loop() {
			if err := s.PutGrants(ctx, "agt_1", g); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CreateAgent", func(b *testing.B) {
		s := setup(b)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			i++
			a := newAgent(fmt.Sprintf("agt_bench_%d", i), "hst_1")
			a.Grants = []store.Grant{{Capability: "read", Status: agentcap.StatusActive}}
			if err := s.CreateAgent(ctx, a); err != nil {
				b.Fatal(err)
			}
		}
	})
}
