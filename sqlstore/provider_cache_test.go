package sqlstore_test

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/sqlstore"
)

// cachedStore is a provider store on a new SQLite file with one host and
// one active agent, its clock at *now.
func cachedStore(t *testing.T, now *time.Time) (store.Store, string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cache.db")
	db, err := sqlstore.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	var mu sync.Mutex
	db.SetClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return *now })
	st := db.Provider()
	at := *now
	if err := st.CreateHost(ctx, &store.Host{ID: "hst_1", PublicKey: []byte(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`),
		UserID: "usr_1", Status: agentcap.StatusActive}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateAgent(ctx, &store.Agent{ID: "agt_1", HostID: "hst_1", UserID: "usr_1", Mode: agentcap.ModeDelegated,
		Status: agentcap.StatusActive, AgentKey: store.AgentKey{PublicKey: []byte(`{"kty":"OKP","crv":"Ed25519","x":"Nr8rW_Ygq2CbHlQ7F_G8yp-UCrsjw5a25F9jpWodgUw"}`)},
		ActivatedAt: &at, Grants: []store.Grant{{Capability: "balance", Status: agentcap.StatusActive}}}); err != nil {
		t.Fatal(err)
	}
	return st, path
}

// The store's own writes end its cached agents and hosts at once: a
// revocation or a host's new status is what the next read returns.
func TestReadCacheEndsWithWrites(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st, _ := cachedStore(t, &now)
	for range 2 { // the second read is served from the cache
		if a, err := st.GetAgent(ctx, "agt_1"); err != nil || a.Status != agentcap.StatusActive {
			t.Fatalf("GetAgent: %+v, %v", a, err)
		}
		if h, err := st.GetHost(ctx, "hst_1"); err != nil || h.Status != agentcap.StatusActive {
			t.Fatalf("GetHost: %+v, %v", h, err)
		}
	}
	if err := st.UpdateAgentStatus(ctx, "agt_1", []string{agentcap.StatusActive}, agentcap.StatusRevoked); err != nil {
		t.Fatal(err)
	}
	if a, err := st.GetAgent(ctx, "agt_1"); err != nil || a.Status != agentcap.StatusRevoked {
		t.Fatalf("after the revocation, GetAgent: %+v, %v; want revoked", a, err)
	}
	if _, err := st.UpdateHostStatus(ctx, "hst_1", []string{agentcap.StatusActive}, agentcap.StatusRevoked); err != nil {
		t.Fatal(err)
	}
	if h, err := st.GetHost(ctx, "hst_1"); err != nil || h.Status != agentcap.StatusRevoked {
		t.Fatalf("after the host's revocation, GetHost: %+v, %v; want revoked", h, err)
	}
	// A failed write ends the cached records too.
	if _, err := st.GetAgent(ctx, "agt_1"); err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateAgentStatus(ctx, "agt_1", []string{agentcap.StatusActive}, agentcap.StatusRevoked); err == nil {
		t.Fatal("revoking an agent that is not active: no error")
	}
	if a, err := st.GetAgent(ctx, "agt_1"); err != nil || a.Status != agentcap.StatusRevoked {
		t.Fatalf("GetAgent: %+v, %v", a, err)
	}
}

// A record handed out is the caller's: changing it changes neither the
// cache nor the next read.
func TestReadCacheCopies(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st, _ := cachedStore(t, &now)
	for range 3 { // read, then from the cache twice
		a, err := st.GetAgent(ctx, "agt_1")
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != agentcap.StatusActive || a.Grants[0].Status != agentcap.StatusActive {
			t.Fatalf("GetAgent: %+v", a)
		}
		a.Status, a.Grants[0].Status = agentcap.StatusRevoked, agentcap.StatusRevoked
		h, err := st.GetHost(ctx, "hst_1")
		if err != nil {
			t.Fatal(err)
		}
		if h.UserID != "usr_1" {
			t.Fatalf("GetHost: %+v", h)
		}
		h.UserID = "someone else"
	}
}

// A write to the file by another process, which the store cannot see,
// is read once the cached record is readCacheMaxAge old.
func TestReadCacheSeesOtherWritersWithinASecond(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st, path := cachedStore(t, &now)
	if _, err := st.GetAgent(ctx, "agt_1"); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, `UPDATE agentauth_agents SET status = 'revoked' WHERE id = 'agt_1'`); err != nil {
		t.Fatal(err)
	}
	if a, err := st.GetAgent(ctx, "agt_1"); err != nil || a.Status != agentcap.StatusActive {
		t.Fatalf("within the second, GetAgent: %+v, %v; want the cached active agent", a, err)
	}
	now = now.Add(time.Second)
	if a, err := st.GetAgent(ctx, "agt_1"); err != nil || a.Status != agentcap.StatusRevoked {
		t.Fatalf("a second later, GetAgent: %+v, %v; want revoked", a, err)
	}
}

// Reads racing with writes never return, after a write has returned, a
// record read before it.
func TestReadCacheUnderConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st, _ := cachedStore(t, &now)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := st.GetAgent(ctx, "agt_1"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 50 {
		name := fmt.Sprintf("name %d", i)
		if err := st.SetAgentName(ctx, "agt_1", name); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if a, err := st.GetAgent(ctx, "agt_1"); err != nil || a.Name != name {
				t.Fatalf("after naming the agent %q, GetAgent: %q, %v", name, a.Name, err)
			}
		}
	}
	close(stop)
	wg.Wait()
}

// A write of one agent (its touch, here) ends that agent's cached record
// at once and leaves the others': another agent's record, changed in the
// file behind the store's back, is still served from the cache.
func TestReadCacheAgentWrites(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st, path := cachedStore(t, &now)
	at := now
	if err := st.CreateAgent(ctx, &store.Agent{ID: "agt_2", HostID: "hst_1", UserID: "usr_1", Mode: agentcap.ModeDelegated,
		Status: agentcap.StatusActive, AgentKey: store.AgentKey{PublicKey: newPublicJWK(t)},
		ActivatedAt: &at}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"agt_1", "agt_2"} {
		if a, err := st.GetAgent(ctx, id); err != nil || a.LastUsedAt != nil {
			t.Fatalf("GetAgent(%s): %+v, %v", id, a, err)
		}
	}
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, `UPDATE agentauth_agents SET name = 'changed elsewhere' WHERE id = 'agt_2'`); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Millisecond)
	if err := st.TouchAgent(ctx, "agt_1", now, store.Policy{SessionTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if a, err := st.GetAgent(ctx, "agt_1"); err != nil || a.LastUsedAt == nil || !a.LastUsedAt.Equal(now) {
		t.Fatalf("after its touch, GetAgent(agt_1): %+v, %v; want last used %v", a, err, now)
	}
	if a, err := st.GetAgent(ctx, "agt_2"); err != nil || a.Name != "" {
		t.Fatalf("GetAgent(agt_2): %+v, %v; want the record cached before agt_1's touch", a, err)
	}
	// A write of the whole store (a host's status) ends every record.
	if _, err := st.UpdateHostStatus(ctx, "hst_1", []string{agentcap.StatusActive}, agentcap.StatusRevoked); err != nil {
		t.Fatal(err)
	}
	if a, err := st.GetAgent(ctx, "agt_2"); err != nil || a.Name != "changed elsewhere" {
		t.Fatalf("after the host's revocation, GetAgent(agt_2): %+v, %v; want the record read again", a, err)
	}
}

// newPublicJWK is the public JWK of a new Ed25519 key.
func newPublicJWK(t *testing.T) []byte {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(`{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`)
}
