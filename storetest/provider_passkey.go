package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/agentauth/store"
)

func testPasskeys(t *testing.T, s store.Store) {
	pk := func(id, user string, created time.Duration) *store.Passkey {
		return &store.Passkey{ID: id, UserID: user, UserHandle: "handle-" + user, Name: "key " + id,
			Credential: json.RawMessage(`{"id":"` + id + `","counter":0}`), CreatedAt: at(created)}
	}
	for _, p := range []*store.Passkey{pk("cred_b", "alice", time.Second), pk("cred_a", "alice", 0), pk("cred_c", "bob", 0)} {
		must(t, s.CreatePasskey(ctx, p))
	}
	wantIs(t, "duplicate credential id, other user", s.CreatePasskey(ctx, pk("cred_a", "bob", 0)), store.ErrConflict)
	for name, p := range map[string]*store.Passkey{
		"no id":         {UserID: "alice", UserHandle: "h", Credential: json.RawMessage(`{}`)},
		"no user":       {ID: "x", UserHandle: "h", Credential: json.RawMessage(`{}`)},
		"no handle":     {ID: "x", UserID: "alice", Credential: json.RawMessage(`{}`)},
		"bad JSON":      {ID: "x", UserID: "alice", UserHandle: "h", Credential: json.RawMessage(`{`)},
		"NUL in a name": {ID: "x", UserID: "alice", UserHandle: "h", Name: "a\x00b", Credential: json.RawMessage(`{}`)},
	} {
		wantIs(t, name, s.CreatePasskey(ctx, p), store.ErrInvalid)
	}

	got, err := s.ListPasskeys(ctx, "alice")
	must(t, err)
	want := []*store.Passkey{pk("cred_a", "alice", 0), pk("cred_b", "alice", time.Second)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ListPasskeys(alice) (-want +got):\n%s", d)
	}
	if got, err := s.ListPasskeys(ctx, "carol"); err != nil || got == nil || len(got) != 0 {
		t.Errorf("ListPasskeys(carol) = %v, %v; want an empty slice", got, err)
	}

	used := json.RawMessage(`{"id":"cred_a","counter":7}`)
	must(t, s.UsePasskey(ctx, "alice", "cred_a", used, at(time.Minute)))
	must(t, s.RenamePasskey(ctx, "alice", "cred_b", "phone"))
	wantIs(t, "another user's passkey used", s.UsePasskey(ctx, "bob", "cred_a", used, at(time.Minute)), store.ErrNotFound)
	wantIs(t, "another user's passkey renamed", s.RenamePasskey(ctx, "bob", "cred_a", "mine"), store.ErrNotFound)
	wantIs(t, "another user's passkey deleted", s.DeletePasskey(ctx, "bob", "cred_a"), store.ErrNotFound)
	wantIs(t, "unknown passkey", s.DeletePasskey(ctx, "alice", "cred_z"), store.ErrNotFound)
	wantIs(t, "credential not JSON", s.UsePasskey(ctx, "alice", "cred_a", json.RawMessage(`x`), at(0)), store.ErrInvalid)
	got, err = s.ListPasskeys(ctx, "alice")
	must(t, err)
	want[0].Credential, want[0].LastUsedAt = used, ptr(at(time.Minute))
	want[1].Name = "phone"
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("after use and rename (-want +got):\n%s", d)
	}

	must(t, s.DeletePasskey(ctx, "alice", "cred_a"))
	got, err = s.ListPasskeys(ctx, "alice")
	must(t, err)
	if len(got) != 1 || got[0].ID != "cred_b" {
		t.Errorf("after delete: %v, want cred_b alone", got)
	}
	// A deleted credential id may be registered again.
	must(t, s.CreatePasskey(ctx, pk("cred_a", "alice", 2*time.Second)))
}

func testNonces(t *testing.T, s store.Store) {
	later := time.Now().Add(time.Hour)
	must(t, s.UseNonce(ctx, "n1", later))
	wantIs(t, "nonce used twice", s.UseNonce(ctx, "n1", later), store.ErrConflict)
	must(t, s.UseNonce(ctx, "n2", later))
	wantIs(t, "empty nonce", s.UseNonce(ctx, "", later), store.ErrInvalid)
	// A nonce whose time is up is forgotten, and may be used again.
	past := time.Now().Add(-time.Second)
	must(t, s.UseNonce(ctx, "old", past))
	must(t, s.UseNonce(ctx, "old", past))
	r, err := s.Sweep(ctx, time.Now(), store.Policy{})
	must(t, err)
	if r.NoncesDeleted != 1 {
		t.Errorf("Sweep deleted %d nonces, want 1 (the expired one)", r.NoncesDeleted)
	}
	wantIs(t, "live nonce after a sweep", s.UseNonce(ctx, "n1", later), store.ErrConflict)
}
