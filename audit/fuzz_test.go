package audit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentcap/agentcap/audit"
)

// FuzzDecodeCursor feeds arbitrary cursors to DecodeCursor and to a
// store's Query: a cursor either decodes to a position whose id every
// store can hold and that encodes back to the same cursor, or is
// ErrInvalidCursor in both; a page that continues after a position
// holds only older records.
func FuzzDecodeCursor(f *testing.F) {
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	m := audit.NewMemory(nil)
	ctx := context.Background()
	for i, id := range []string{"a", "b", "c", "d"} {
		r := audit.Record{ID: id, Time: base.Add(time.Duration(i%2) * time.Second), Event: "e", Outcome: "ok"}
		if err := m.Write(ctx, r); err != nil {
			f.Fatal(err)
		}
	}
	for _, p := range []audit.Position{{Time: base, ID: "b"}, {Time: base.Add(time.Second), ID: "d"}, {Time: time.Unix(0, 0), ID: ":"}} {
		f.Add(audit.EncodeCursor(p))
	}
	for _, s := range []string{"", "not a cursor!", "MTox", "LTE6eA", "OTIyMzM3MjAzNjg1NDc3NTgwODox", "MTo", "MToA", "MTr_", "MTphAGI"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, c string) {
		p, err := audit.DecodeCursor(c)
		_, qerr := m.Query(ctx, audit.Query{Cursor: c, Limit: 1})
		if err != nil {
			if !errors.Is(err, audit.ErrInvalidCursor) {
				t.Fatalf("%q: %v", c, err)
			}
			if c != "" && !errors.Is(qerr, audit.ErrInvalidCursor) {
				t.Fatalf("%q: DecodeCursor refuses it, Query answers %v", c, qerr)
			}
			return
		}
		// Every store can compare the id with a text column.
		if p.ID == "" || !utf8.ValidString(p.ID) || strings.ContainsRune(p.ID, 0) || p.Time.Location() != time.UTC {
			t.Fatalf("%q decodes to %+v", c, p)
		}
		if again := audit.EncodeCursor(p); again != c {
			t.Fatalf("%q decodes to %+v, which encodes to %q", c, p, again)
		}
		page, err := m.Query(ctx, audit.Query{Cursor: c})
		if err != nil {
			t.Fatalf("%q: %v", c, err)
		}
		for _, r := range page.Records {
			if r.Time.After(p.Time) || (r.Time.Equal(p.Time) && r.ID >= p.ID) {
				t.Fatalf("%q: record %s at %v is not after %+v", c, r.ID, r.Time, p)
			}
		}
	})
}
