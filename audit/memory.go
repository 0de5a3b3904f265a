package audit

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// memory is the Store of NewMemory.
type memory struct {
	mu      sync.RWMutex
	records []Record // ordered by time, then id, oldest first
	now     func() time.Time
}

var _ Store = (*memory)(nil)

// NewMemory returns an empty Store held in memory, for tests and
// single-process applications that need no durable trail. It fills
// record times from now; nil means time.Now.
func NewMemory(now func() time.Time) Store {
	if now == nil {
		now = time.Now
	}
	return &memory{now: now}
}

func compareRecords(a Record, t time.Time, id string) int {
	if c := a.Time.Compare(t); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, id)
}

// Write implements Sink.
func (m *memory) Write(ctx context.Context, r Record) error {
	r, err := Prepare(r, m.now())
	if err != nil {
		return err
	}
	r.Arguments = slices.Clone(r.Arguments)
	m.mu.Lock()
	defer m.mu.Unlock()
	i, found := slices.BinarySearchFunc(m.records, r, func(a, b Record) int { return compareRecords(a, b.Time, b.ID) })
	if found {
		return errDuplicateID(r.ID)
	}
	m.records = slices.Insert(m.records, i, r)
	return nil
}

// Query implements Store.
func (m *memory) Query(ctx context.Context, q Query) (Page, error) {
	q, after, err := q.Normalize()
	if err != nil {
		return Page{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	end := len(m.records)
	if after != nil {
		end, _ = slices.BinarySearchFunc(m.records, *after, func(a Record, p Position) int { return compareRecords(a, p.Time, p.ID) })
	}
	var page Page
	for i := end - 1; i >= 0; i-- {
		r := m.records[i]
		if !q.Since.IsZero() && r.Time.Before(q.Since) {
			break
		}
		if !matches(r, q) {
			continue
		}
		if len(page.Records) == q.Limit {
			last := page.Records[len(page.Records)-1]
			page.NextCursor = EncodeCursor(Position{Time: last.Time, ID: last.ID})
			break
		}
		r.Arguments = slices.Clone(r.Arguments)
		page.Records = append(page.Records, r)
	}
	return page, nil
}

func matches(r Record, q Query) bool {
	return (q.UserID == "" || r.UserID == q.UserID) &&
		(q.AgentID == "" || r.AgentID == q.AgentID) &&
		(q.Capability == "" || r.Capability == q.Capability) &&
		(q.Event == "" || r.Event == q.Event) &&
		(q.Until.IsZero() || r.Time.Before(q.Until))
}

// Sweep implements Store.
func (m *memory) Sweep(ctx context.Context, before time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, _ := slices.BinarySearchFunc(m.records, before, func(a Record, t time.Time) int {
		if a.Time.Before(t) {
			return -1
		}
		return 1
	})
	m.records = slices.Delete(m.records, 0, i)
	return int64(i), nil
}

// Close implements Store; it keeps the records.
func (m *memory) Close() error { return nil }
