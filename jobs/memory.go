package jobs

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/agentcap/agentcap/core"
)

// MemoryStore is a Store in the memory of one process. Jobs do not
// survive the process and cannot be polled on another instance: use
// package sqlstore for that.
type MemoryStore struct {
	mu   sync.Mutex
	jobs map[string]*Record
	// owners holds the ids of each owner's jobs.
	owners map[string]map[string]struct{}
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{jobs: make(map[string]*Record), owners: make(map[string]map[string]struct{})}
}

func cloneRecord(r *Record) *Record {
	c := *r
	c.Result = slices.Clone(r.Result)
	if r.Failure != nil {
		f := *r.Failure
		c.Failure = &f
	}
	if r.Progress != nil {
		p := *r.Progress
		c.Progress = &p
	}
	return &c
}

// Create implements Store.
func (s *MemoryStore) Create(_ context.Context, rec *Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.jobs[rec.ID]; ok {
		return ErrExists
	}
	s.jobs[rec.ID] = cloneRecord(rec)
	ids := s.owners[rec.Owner]
	if ids == nil {
		ids = make(map[string]struct{})
		s.owners[rec.Owner] = ids
	}
	ids[rec.ID] = struct{}{}
	return nil
}

// CountOwner implements Store.
func (s *MemoryStore) CountOwner(_ context.Context, owner string, now time.Time) (int, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pending, kept := 0, 0
	for id := range s.owners[owner] {
		switch r := s.jobs[id]; {
		case r.State == StatePending:
			pending++
			kept++
		case !r.Expires.Before(now):
			kept++
		}
	}
	return pending, kept, nil
}

// Get implements Store.
func (s *MemoryStore) Get(_ context.Context, id string) (*Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.jobs[id]
	if !ok {
		return nil, ErrNotFound
	}
	return cloneRecord(r), nil
}

func (r *Record) apply(out Outcome, now time.Time) {
	r.State = out.State
	r.Result = slices.Clone(out.Result)
	r.Failure = nil
	if out.Failure != nil {
		f := *out.Failure
		r.Failure = &f
	}
	r.Expires = out.Expires
	r.Updated = now
}

// Finish implements Store.
func (s *MemoryStore) Finish(_ context.Context, id string, out Outcome, now time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.jobs[id]
	if !ok || r.State != StatePending {
		return false, nil
	}
	r.apply(out, now)
	return true, nil
}

// SetProgress implements Store.
func (s *MemoryStore) SetProgress(_ context.Context, id string, p core.Progress, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.jobs[id]; ok && r.State == StatePending {
		r.Progress = &p
		r.Updated = now
	}
	return nil
}

// Renew implements Store.
func (s *MemoryStore) Renew(_ context.Context, instance string, ids []string, leaseUntil, now time.Time) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []string
	for _, id := range ids {
		r, ok := s.jobs[id]
		if !ok || r.State != StatePending || r.Instance != instance {
			gone = append(gone, id)
			continue
		}
		r.LeaseUntil = leaseUntil
	}
	return gone, nil
}

// ExpireLeases implements Store.
func (s *MemoryStore) ExpireLeases(_ context.Context, now time.Time, out Outcome) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.jobs {
		if r.State == StatePending && r.LeaseUntil.Before(now) {
			r.apply(out, now)
			n++
		}
	}
	return n, nil
}

// Sweep implements Store.
func (s *MemoryStore) Sweep(_ context.Context, now time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, r := range s.jobs {
		if r.State != StatePending && r.Expires.Before(now) {
			delete(s.jobs, id)
			if ids := s.owners[r.Owner]; ids != nil {
				delete(ids, id)
				if len(ids) == 0 {
					delete(s.owners, r.Owner)
				}
			}
			n++
		}
	}
	return n, nil
}
