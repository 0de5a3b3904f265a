package storetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/audit"
)

// Audit runs the suite of an audit.Store, one subtest per behaviour, each on a fresh store.
func Audit(t *testing.T, open func(t *testing.T) audit.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s audit.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"FillsIDAndTime", testFills},
		{"RefusesIncomplete", testIncomplete},
		{"DuplicateID", testDuplicateID},
		{"Filters", testFilters},
		{"TimeRange", testTimeRange},
		{"Pagination", testPagination},
		{"SameTimeOrderedByID", testSameTime},
		{"BadQueries", testBadQueries},
		{"Sweep", auditTestSweep},
		{"Export", testExport},
		{"ConcurrentWriters", auditTestConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

var auditBase = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func write(t *testing.T, s audit.Store, rs ...audit.Record) {
	t.Helper()
	for _, r := range rs {
		if err := s.Write(context.Background(), r); err != nil {
			t.Fatalf("write %+v: %v", r, err)
		}
	}
}

func query(t *testing.T, s audit.Store, q audit.Query) audit.Page {
	t.Helper()
	p, err := s.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("query %+v: %v", q, err)
	}
	return p
}

func ids(rs []audit.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func testRoundTrip(t *testing.T, s audit.Store) {
	full := audit.Record{
		ID: "r1", Time: auditBase.Add(1234567 * time.Nanosecond), Event: "transfer_money", Outcome: "constraint_violated",
		AgentID: "agent-1", HostID: "host-1", UserID: "alice", Capability: "transfer_money",
		ArgumentsDigest: "ab12", ConfirmationID: "conf-1", RequestID: "req-1", TraceID: "0af7651916cd43dd8448eb211c80319c",
		ClientIP: "192.0.2.7", Duration: 1500 * time.Microsecond, Detail: "a detail ✓",
		Arguments: json.RawMessage(`{"amount":5,"pin":"[redacted]"}`),
	}
	bare := audit.Record{ID: "r0", Time: auditBase, Event: audit.EventHostRegistered, Outcome: audit.OutcomeOK}
	write(t, s, full, bare)
	got := query(t, s, audit.Query{})
	want := full
	want.Time = auditBase.Add(1234 * time.Microsecond) // kept to the microsecond
	if diff := cmp.Diff([]audit.Record{want, bare}, got.Records); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if got.NextCursor != "" {
		t.Errorf("next cursor %q on the only page", got.NextCursor)
	}
}

func testFills(t *testing.T, s audit.Store) {
	before := time.Now().Add(-time.Second)
	write(t, s, audit.Record{Event: "e", Outcome: audit.OutcomeOK}, audit.Record{Event: "e", Outcome: audit.OutcomeOK})
	got := query(t, s, audit.Query{}).Records
	if len(got) != 2 || got[0].ID == "" || got[1].ID == "" || got[0].ID == got[1].ID {
		t.Fatalf("ids not filled: %+v", got)
	}
	for _, r := range got {
		if r.Time.Before(before) || r.Time.After(time.Now().Add(time.Second)) || r.Time.Location() != time.UTC {
			t.Errorf("time %v not filled with the present, in UTC", r.Time)
		}
	}
}

func testIncomplete(t *testing.T, s audit.Store) {
	for _, r := range []audit.Record{{Outcome: "ok"}, {Event: "e"}} {
		if err := s.Write(context.Background(), r); err == nil {
			t.Errorf("%+v accepted", r)
		}
	}
	if got := query(t, s, audit.Query{}).Records; len(got) != 0 {
		t.Errorf("incomplete records kept: %+v", got)
	}
}

func testDuplicateID(t *testing.T, s audit.Store) {
	write(t, s, audit.Record{ID: "x", Time: auditBase, Event: "e", Outcome: "ok"})
	err := s.Write(context.Background(), audit.Record{ID: "x", Time: auditBase, Event: "other", Outcome: "ok"})
	if !errors.Is(err, audit.ErrDuplicateID) {
		t.Fatalf("second write of id x: %v, want ErrDuplicateID", err)
	}
	if got := query(t, s, audit.Query{}).Records; len(got) != 1 || got[0].Event != "e" {
		t.Errorf("the first record changed: %+v", got)
	}
}

func testFilters(t *testing.T, s audit.Store) {
	write(t, s,
		audit.Record{ID: "1", Time: auditBase.Add(1 * time.Second), Event: "transfer", Outcome: "ok", UserID: "alice", AgentID: "a1", Capability: "transfer"},
		audit.Record{ID: "2", Time: auditBase.Add(2 * time.Second), Event: "transfer", Outcome: "unauthorized", UserID: "bob", AgentID: "b1", Capability: "transfer"},
		audit.Record{ID: "3", Time: auditBase.Add(3 * time.Second), Event: audit.EventPreview, Outcome: "ok", UserID: "alice", AgentID: "a2", Capability: "transfer"},
		audit.Record{ID: "4", Time: auditBase.Add(4 * time.Second), Event: "balance", Outcome: "ok", UserID: "alice", AgentID: "a1", Capability: "balance"},
		audit.Record{ID: "5", Time: auditBase.Add(5 * time.Second), Event: audit.EventAgentRevoked, Outcome: "ok", UserID: "alice", AgentID: "a1"},
	)
	for _, tc := range []struct {
		q    audit.Query
		want []string
	}{
		{audit.Query{}, []string{"5", "4", "3", "2", "1"}},
		{audit.Query{UserID: "alice"}, []string{"5", "4", "3", "1"}},
		{audit.Query{UserID: "carol"}, []string{}},
		{audit.Query{AgentID: "a1"}, []string{"5", "4", "1"}},
		{audit.Query{Capability: "transfer"}, []string{"3", "2", "1"}},
		{audit.Query{Event: "transfer"}, []string{"2", "1"}},
		{audit.Query{UserID: "alice", Capability: "transfer", Event: "transfer"}, []string{"1"}},
		{audit.Query{UserID: "alice", AgentID: "a1", Capability: "balance"}, []string{"4"}},
	} {
		if got := ids(query(t, s, tc.q).Records); !cmp.Equal(got, tc.want) {
			t.Errorf("%+v: got %v, want %v", tc.q, got, tc.want)
		}
	}
}

func testTimeRange(t *testing.T, s audit.Store) {
	for i := range 6 {
		write(t, s, audit.Record{ID: fmt.Sprint(i), Time: auditBase.Add(time.Duration(i) * time.Minute), Event: "e", Outcome: "ok"})
	}
	for _, tc := range []struct {
		since, until time.Time
		want         []string
	}{
		{auditBase.Add(2 * time.Minute), time.Time{}, []string{"5", "4", "3", "2"}},
		{time.Time{}, auditBase.Add(2 * time.Minute), []string{"1", "0"}},
		{auditBase.Add(time.Minute), auditBase.Add(4 * time.Minute), []string{"3", "2", "1"}},
		{auditBase.Add(3 * time.Minute), auditBase.Add(3 * time.Minute), []string{}},
	} {
		if got := ids(query(t, s, audit.Query{Since: tc.since, Until: tc.until}).Records); !cmp.Equal(got, tc.want) {
			t.Errorf("since %v until %v: got %v, want %v", tc.since, tc.until, got, tc.want)
		}
	}
}

func testPagination(t *testing.T, s audit.Store) {
	var want []string
	for i := range 23 {
		id := fmt.Sprintf("r%02d", i)
		user := "alice"
		if i%3 == 0 {
			user = "bob"
		}
		write(t, s, audit.Record{ID: id, Time: auditBase.Add(time.Duration(i) * time.Second), Event: "e", Outcome: "ok", UserID: user})
		if user == "alice" {
			want = append([]string{id}, want...)
		}
	}
	var got []string
	q := audit.Query{UserID: "alice", Limit: 4}
	pages := 0
	for {
		p := query(t, s, q)
		pages++
		if len(p.Records) > 4 {
			t.Fatalf("page of %d records, limit 4", len(p.Records))
		}
		got = append(got, ids(p.Records)...)
		// A record written after the listing began, newer than all, does
		// not shift the pages that follow.
		if pages == 1 {
			write(t, s, audit.Record{ID: "late", Time: auditBase.Add(time.Hour), Event: "e", Outcome: "ok", UserID: "alice"})
		}
		if p.NextCursor == "" {
			break
		}
		q.Cursor = p.NextCursor
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
	}
	if !cmp.Equal(got, want) {
		t.Errorf("pages gave %v, want %v", got, want)
	}
	if pages != 4 {
		t.Errorf("%d pages for 15 records by 4, want 4", pages)
	}
	// An exact multiple of the limit ends without an empty page.
	all := query(t, s, audit.Query{UserID: "bob", Limit: 8})
	if len(all.Records) != 8 || all.NextCursor != "" {
		t.Errorf("8 records with limit 8: %d records, cursor %q", len(all.Records), all.NextCursor)
	}
	// The default and the largest limits.
	for i := range audit.MaxLimit + 10 {
		write(t, s, audit.Record{ID: fmt.Sprintf("m%04d", i), Time: auditBase.Add(-time.Duration(i+1) * time.Second), Event: "many", Outcome: "ok"})
	}
	if n := len(query(t, s, audit.Query{Event: "many"}).Records); n != audit.DefaultLimit {
		t.Errorf("default page: %d records, want %d", n, audit.DefaultLimit)
	}
	if n := len(query(t, s, audit.Query{Event: "many", Limit: audit.MaxLimit + 5}).Records); n != audit.MaxLimit {
		t.Errorf("page over the maximum: %d records, want %d", n, audit.MaxLimit)
	}
}

func testSameTime(t *testing.T, s audit.Store) {
	for _, id := range []string{"b", "d", "a", "c", "e"} {
		write(t, s, audit.Record{ID: id, Time: auditBase, Event: "e", Outcome: "ok"})
	}
	var got []string
	q := audit.Query{Limit: 2}
	for {
		p := query(t, s, q)
		got = append(got, ids(p.Records)...)
		if p.NextCursor == "" {
			break
		}
		q.Cursor = p.NextCursor
	}
	if want := []string{"e", "d", "c", "b", "a"}; !cmp.Equal(got, want) {
		t.Errorf("records of one instant: got %v, want %v", got, want)
	}
}

func testBadQueries(t *testing.T, s audit.Store) {
	ctx := context.Background()
	if _, err := s.Query(ctx, audit.Query{Cursor: "not a cursor!"}); !errors.Is(err, audit.ErrInvalidCursor) {
		t.Errorf("bad cursor: %v", err)
	}
	// Ids and filters no text column can hold are refused before any
	// store query, so that no store fails on them.
	for _, id := range []string{"a\x00b", "\xff"} {
		c := audit.EncodeCursor(audit.Position{Time: auditBase, ID: id})
		if _, err := s.Query(ctx, audit.Query{Cursor: c}); !errors.Is(err, audit.ErrInvalidCursor) {
			t.Errorf("cursor of id %q: %v", id, err)
		}
		if _, err := s.Query(ctx, audit.Query{AgentID: id}); !errors.Is(err, audit.ErrInvalidQuery) {
			t.Errorf("agent filter %q: %v", id, err)
		}
	}
	if _, err := s.Query(ctx, audit.Query{Limit: -1}); !errors.Is(err, audit.ErrInvalidQuery) {
		t.Errorf("negative limit: %v", err)
	}
	if _, err := s.Query(ctx, audit.Query{Since: auditBase, Until: auditBase.Add(-time.Second)}); !errors.Is(err, audit.ErrInvalidQuery) {
		t.Errorf("reversed range: %v", err)
	}
}

func auditTestSweep(t *testing.T, s audit.Store) {
	for i := range 5 {
		write(t, s, audit.Record{ID: fmt.Sprint(i), Time: auditBase.Add(time.Duration(i) * time.Hour), Event: "e", Outcome: "ok"})
	}
	n, err := s.Sweep(context.Background(), auditBase.Add(2*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("sweep: %d, %v; want 2", n, err)
	}
	if got := ids(query(t, s, audit.Query{}).Records); !cmp.Equal(got, []string{"4", "3", "2"}) {
		t.Errorf("after the sweep: %v", got)
	}
	if n, err := s.Sweep(context.Background(), auditBase.Add(2*time.Hour)); err != nil || n != 0 {
		t.Errorf("second sweep: %d, %v", n, err)
	}
}

func testExport(t *testing.T, s audit.Store) {
	for i := range 7 {
		write(t, s, audit.Record{ID: fmt.Sprint(i), Time: auditBase.Add(time.Duration(i) * time.Second), Event: "e", Outcome: "ok",
			UserID: "alice", Arguments: json.RawMessage(`{"n":` + fmt.Sprint(i) + `}`)})
	}
	write(t, s, audit.Record{ID: "other", Time: auditBase, Event: "e", Outcome: "ok", UserID: "bob"})
	var buf bytes.Buffer
	n, err := audit.Export(context.Background(), s, audit.Query{UserID: "alice", Limit: 3}, &buf, 0)
	if err != nil || n != 7 {
		t.Fatalf("export: %d, %v", n, err)
	}
	sc := bufio.NewScanner(&buf)
	var got []string
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if string(r.Arguments) != `{"n":`+r.ID+`}` {
			t.Errorf("record %s arguments %s", r.ID, r.Arguments)
		}
		got = append(got, r.ID)
	}
	if want := []string{"6", "5", "4", "3", "2", "1", "0"}; !cmp.Equal(got, want) {
		t.Errorf("exported %v, want %v", got, want)
	}
	buf.Reset()
	if n, err := audit.Export(context.Background(), s, audit.Query{UserID: "alice"}, &buf, 2); err != nil || n != 2 || bytes.Count(buf.Bytes(), []byte("\n")) != 2 {
		t.Errorf("bounded export: %d, %v, %q", n, err, buf.String())
	}
}

func auditTestConcurrent(t *testing.T, s audit.Store) {
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r := audit.Record{Event: "e", Outcome: "ok", AgentID: fmt.Sprint(w), Detail: fmt.Sprint(i)}
				if err := s.Write(context.Background(), r); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var n int
	q := audit.Query{Limit: 30}
	seen := map[string]bool{}
	for {
		p := query(t, s, q)
		for _, r := range p.Records {
			if seen[r.ID] {
				t.Errorf("record %s listed twice", r.ID)
			}
			seen[r.ID] = true
		}
		n += len(p.Records)
		if p.NextCursor == "" {
			break
		}
		q.Cursor = p.NextCursor
	}
	if n != writers*each {
		t.Errorf("%d records kept, want %d", n, writers*each)
	}
}
