package idempotency

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// MemoryStore is a Store in the memory of one process. Expired keys are
// dropped when they are next claimed, and all at once every so often.
type MemoryStore struct {
	mu        sync.Mutex
	keys      map[string]*memEntry
	now       func() time.Time
	lastSweep time.Time
}

type memEntry struct {
	rec     Record
	expires time.Time
}

var _ Store = (*MemoryStore)(nil)

// memSweepEvery is how often a claim also drops every expired key.
const memSweepEvery = time.Minute

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{keys: make(map[string]*memEntry), now: time.Now}
}

func copyRecord(r Record) *Record {
	r.Header = maps.Clone(r.Header)
	r.Body = slices.Clone(r.Body)
	return &r
}

// Claim implements Store.
func (s *MemoryStore) Claim(_ context.Context, key, fingerprint, token string, lease time.Duration) (bool, *Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if now.Sub(s.lastSweep) > memSweepEvery {
		s.lastSweep = now
		for k, e := range s.keys {
			if !now.Before(e.expires) {
				delete(s.keys, k)
			}
		}
	}
	if e, ok := s.keys[key]; ok && now.Before(e.expires) {
		return false, copyRecord(e.rec), nil
	}
	s.keys[key] = &memEntry{rec: Record{Fingerprint: fingerprint, Token: token}, expires: now.Add(lease)}
	return true, nil, nil
}

// Complete implements Store.
func (s *MemoryStore) Complete(_ context.Context, key, token string, answer Record, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.keys[key]
	if !ok || e.rec.Token != token || e.rec.Done {
		return nil
	}
	answer.Fingerprint, answer.Token, answer.Done = e.rec.Fingerprint, token, true
	answer.Header = maps.Clone(answer.Header)
	answer.Body = slices.Clone(answer.Body)
	e.rec = answer
	e.expires = s.now().Add(ttl)
	return nil
}

// Release implements Store.
func (s *MemoryStore) Release(_ context.Context, key, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.keys[key]; ok && e.rec.Token == token && !e.rec.Done {
		delete(s.keys, key)
	}
	return nil
}
