package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/sqlstore"
)

// sqliteAudit is the audit store of a new SQLite file.
func sqliteAudit(t *testing.T) audit.Store {
	t.Helper()
	db, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "agentcap.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db.Audit()
}

// TestGroupCommit: concurrent Writes are committed together, and each
// learns its own record's fate: every record written returns nil and is
// read back, and a record whose id is taken fails alone with
// ErrDuplicateID while the others of its group are kept.
func TestGroupCommit(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { testGroupCommit(t, b.fresh(t)(t).Audit()) })
	}
}

func testGroupCommit(t *testing.T, s audit.Store) {
	ctx := context.Background()
	if err := s.Write(ctx, audit.Record{ID: "aud_taken", Event: "execution", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 32, 20
	var wg sync.WaitGroup
	errs := make([]error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				r := audit.Record{ID: fmt.Sprintf("aud_%02d_%02d", w, i), Event: "execution", Outcome: "ok", AgentID: fmt.Sprintf("agt_%d", w)}
				if w == 7 && i == 3 {
					r.ID = "aud_taken"
				}
				errs[w*each+i] = s.Write(ctx, r)
			}
		})
	}
	wg.Wait()
	for k, err := range errs {
		w, i := k/each, k%each
		switch {
		case w == 7 && i == 3:
			if !errors.Is(err, audit.ErrDuplicateID) {
				t.Errorf("the record with a taken id: %v, want ErrDuplicateID", err)
			}
		case err != nil:
			t.Errorf("record %d of writer %d: %v", i, w, err)
		}
	}
	for w := range writers {
		page, err := s.Query(ctx, audit.Query{AgentID: fmt.Sprintf("agt_%d", w), Limit: audit.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		want := each
		if w == 7 {
			want--
		}
		if len(page.Records) != want {
			t.Errorf("writer %d: %d records read back, want %d", w, len(page.Records), want)
		}
	}
}

// TestGroupCommitCancelled: a Write whose context is over returns its
// error and leaves the queue working for the others.
func TestGroupCommitCancelled(t *testing.T) {
	s := sqliteAudit(t)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Write(done, audit.Record{Event: "execution", Outcome: "ok"}); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled Write: %v", err)
	}
	if err := s.Write(context.Background(), audit.Record{ID: "aud_after", Event: "execution", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	page, err := s.Query(context.Background(), audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) == 0 || page.Records[0].ID != "aud_after" {
		t.Fatalf("records: %+v", page.Records)
	}
}

// TestGroupCommitWaitsForCompany: while Writes arrive faster than
// commits end, the Write that finds no commit under way waits a little
// for others before it commits. A lone one is committed when the wait
// ends, a group when it fills; each Write learns its own record's
// fate, and one whose context is over is refused without waiting and
// written by none.
func TestGroupCommitWaitsForCompany(t *testing.T) {
	ctx := context.Background()
	db, err := sqlstore.OpenSQLite(ctx, filepath.Join(t.TempDir(), "agentcap.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	sqlstore.MarkAuditBusy(db)
	s := db.Audit()
	if err := s.Write(ctx, audit.Record{ID: "aud_alone", Event: "execution", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Write(done, audit.Record{ID: "aud_cancelled", Event: "execution", Outcome: "ok"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled Write: %v, want context.Canceled", err)
	}
	const writers, each = 16, 10
	var wg sync.WaitGroup
	errs := make([]error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				errs[w*each+i] = s.Write(ctx, audit.Record{ID: fmt.Sprintf("aud_%02d_%02d", w, i), Event: "execution", Outcome: "ok"})
			}
		})
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			t.Errorf("record %d of writer %d: %v", k%each, k/each, err)
		}
	}
	page, err := s.Query(ctx, audit.Query{Limit: audit.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, r := range page.Records {
		ids[r.ID] = true
	}
	if len(page.Records) != writers*each+1 || !ids["aud_alone"] || ids["aud_cancelled"] {
		t.Fatalf("%d records read back (aud_alone %v, aud_cancelled %v); want %d with aud_alone and without aud_cancelled",
			len(page.Records), ids["aud_alone"], ids["aud_cancelled"], writers*each+1)
	}
}

// A group of records is written whole by one commit (one INSERT of
// several rows on PostgreSQL), or not at all when one of them cannot be.
func TestGroupInsert(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			db := b.fresh(t)(t)
			rec := func(id string) audit.Record {
				return audit.Record{ID: id, Event: "execution", Outcome: "ok", UserID: "u", Arguments: []byte(`{"n":1}`)}
			}
			if err := sqlstore.AuditInsertGroup(ctx, db, rec("a1"), rec("a2"), rec("a3")); err != nil {
				t.Fatal(err)
			}
			if err := sqlstore.AuditInsertGroup(ctx, db, rec("a4"), rec("a2")); err == nil {
				t.Fatal("a group with a taken id was written")
			}
			// Groups larger than one statement's on SQLite's kept
			// connection are written in a transaction: all or none too.
			var large []audit.Record
			for i := range 20 {
				large = append(large, rec(fmt.Sprintf("b%02d", i)))
			}
			if err := sqlstore.AuditInsertGroup(ctx, db, append(large[:19:19], rec("a1"))...); err == nil {
				t.Fatal("a large group with a taken id was written")
			}
			if err := sqlstore.AuditInsertGroup(ctx, db, large[2:]...); err != nil {
				t.Fatal(err)
			}
			page, err := db.Audit().Query(ctx, audit.Query{UserID: "u", Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range page.Records {
				ids = append(ids, r.ID)
				if string(r.Arguments) != `{"n":1}` {
					t.Errorf("record %s: arguments %s", r.ID, r.Arguments)
				}
			}
			var want []string
			for i := 19; i >= 2; i-- {
				want = append(want, fmt.Sprintf("b%02d", i))
			}
			want = append(want, "a3", "a2", "a1")
			if !slices.Equal(ids, want) {
				t.Errorf("records %q, want %q", ids, want)
			}
		})
	}
}
