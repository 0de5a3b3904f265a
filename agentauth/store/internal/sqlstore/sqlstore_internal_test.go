package sqlstore

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/agentauth/store"
)

func TestMigrations(t *testing.T) {
	ms, err := Migrations(fstest.MapFS{
		"0002_more.sql": {Data: []byte("B")},
		"0001_init.sql": {Data: []byte("A")},
		"0010_late.sql": {Data: []byte("C")},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Migration{{1, "0001_init.sql", "A"}, {2, "0002_more.sql", "B"}, {10, "0010_late.sql", "C"}}
	if diff := cmp.Diff(want, ms); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"no number":   {"init.sql": {}},
		"zero":        {"0000_init.sql": {}},
		"not sql":     {"0001_init.txt": {}},
		"duplicate":   {"0001_a.sql": {}, "01_b.sql": {}},
		"a directory": {"0001_dir.sql/x": {}},
		"none":        {},
	} {
		if _, err := Migrations(fsys); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

var refTime = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestRebind(t *testing.T) {
	d := &Dialect{Numbered: true}
	if got := d.rebind(`SELECT a FROM t WHERE b = ? AND c IN (?, ?)`); got != `SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)` {
		t.Errorf("rebind = %q", got)
	}
	if got := (&Dialect{}).rebind(`x = ?`); got != `x = ?` {
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
