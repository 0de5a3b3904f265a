package sqlstore

import (
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/agentauth/store"
)

// TestProviderMigrationFiles: the provider's two directories hold the
// same files, and the steps run each of them, in order, as versions 6 on.
func TestProviderMigrationFiles(t *testing.T) {
	var names [2][]string
	for i, dir := range []string{"sqlite", "postgres"} {
		entries, err := fs.ReadDir(providerMigrations, "provider_migrations/"+dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			names[i] = append(names[i], e.Name())
		}
	}
	if diff := cmp.Diff(names[0], names[1]); diff != "" {
		t.Fatalf("sqlite and postgres files (-sqlite +postgres):\n%s", diff)
	}
	for _, d := range []*dialect{sqliteDialect, postgresDialect} {
		for i, name := range names[0] {
			got := steps[firstProviderVersion-1+i].stmts(d)
			if want := providerSQL(d.providerDir, name); len(got) != 1 || got[0] != want {
				t.Errorf("%s: version %d does not run %s", d.name, firstProviderVersion+i, name)
			}
		}
	}
	if len(steps) < firstProviderVersion-1+len(names[0]) {
		t.Errorf("%d steps, want the provider's %d files from version %d on", len(steps), len(names[0]), firstProviderVersion)
	}
}

var refTime = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestRebind(t *testing.T) {
	d := &providerDialect{Numbered: true}
	if got := d.rebind(`SELECT a FROM t WHERE b = ? AND c IN (?, ?)`); got != `SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)` {
		t.Errorf("rebind = %q", got)
	}
	if got := (&providerDialect{}).rebind(`x = ?`); got != `x = ?` {
		t.Errorf("unnumbered rebind = %q", got)
	}
}

// FuzzConstraintsCodec: what the store accepts reads back as the same
// bytes from the column encoding.
func FuzzConstraintsCodec(f *testing.F) {
	f.Add("amount", []byte(`{ "max": 1e3 }`), "currency", []byte(`{"in":["USD","\u00e9<&>"]}`))
	f.Add("a\"b", []byte(`"x"`), "", []byte(`[1, 2 ,3]`))
	f.Fuzz(func(t *testing.T, k1 string, v1 []byte, k2 string, v2 []byte) {
		in := map[string]json.RawMessage{k1: v1, k2: v2}
		gs, err := store.PrepareGrants([]store.Grant{{Capability: "c", Status: "active", Constraints: in}}, refTime)
		if err != nil {
			return
		}
		cons := gs[0].Constraints
		enc, _ := encodeConstraints(cons).(string)
		got, err := decodeConstraints(enc)
		if err != nil {
			t.Fatalf("decode %q: %v", enc, err)
		}
		if diff := cmp.Diff(cons, got); diff != "" {
			t.Fatalf("round trip of %q (-want +got):\n%s", enc, diff)
		}
		caps := []store.RequestedCapability{{Name: k1, Constraints: cons}, {Name: "plain"}}
		back, err := decodeCapabilities(encodeCapabilities(caps))
		if err != nil || !cmp.Equal(caps, back) {
			t.Fatalf("capabilities round trip: %v, %+v", err, back)
		}
		if strings.Contains(enc, "\n") && !strings.Contains(string(v1)+string(v2), "\n") {
			t.Fatalf("encoding added a newline: %q", enc)
		}
	})
}
