package confirm

import (
	"context"
	"errors"
	"sync"
	"time"
)

// MemoryStore is a Store in the memory of one process. Forgotten tokens
// are dropped all at once every so often.
type MemoryStore struct {
	mu        sync.Mutex
	tokens    map[string]*memEntry
	lastSweep time.Time
}

type memEntry struct {
	rec    Record
	forget time.Time
}

var _ Store = (*MemoryStore)(nil)

// memSweepEvery is how often a Put also drops every forgotten token.
const memSweepEvery = time.Minute

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{tokens: make(map[string]*memEntry)}
}

// Put implements Store.
func (s *MemoryStore) Put(_ context.Context, id string, rec Record, forget time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.Sub(s.lastSweep) > memSweepEvery {
		s.lastSweep = now
		for k, e := range s.tokens {
			if !now.Before(e.forget) {
				delete(s.tokens, k)
			}
		}
	}
	if _, ok := s.tokens[id]; ok {
		return errors.New("confirm: token id recorded twice")
	}
	rec.Used = false
	s.tokens[id] = &memEntry{rec: rec, forget: forget}
	return nil
}

// Consume implements Store.
func (s *MemoryStore) Consume(_ context.Context, id string, want Record, now time.Time) (*Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.tokens[id]
	if !ok || !now.Before(e.forget) {
		return nil, false, nil
	}
	prev := e.rec
	if !matches(prev, want, now) {
		return &prev, false, nil
	}
	e.rec.Used = true
	return &prev, true, nil
}
