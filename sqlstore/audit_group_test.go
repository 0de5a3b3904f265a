package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
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

// TestGroupCommit: on SQLite, concurrent Writes are committed together, and each
// learns its own record's fate: every record written returns nil and is
// read back, and a record whose id is taken fails alone with
// ErrDuplicateID while the others of its group are kept.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	s := sqliteAudit(t)
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
