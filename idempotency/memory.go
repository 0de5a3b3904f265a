package idempotency

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// MemoryStore is a Store in the memory of one process. Expired keys are
// dropped when they are next claimed, when their scope reaches its bound,
// and all at once every so often.
type MemoryStore struct {
	mu   sync.Mutex
	keys map[string]*memEntry
	// scopes holds the keys of each scope, expired ones not yet dropped
	// included.
	scopes    map[string]map[string]struct{}
	now       func() time.Time
	lastSweep time.Time
}

type memEntry struct {
	rec     Record
	scope   string
	expires time.Time
}

var _ Store = (*MemoryStore)(nil)

// memSweepEvery is how often a claim also drops every expired key.
const memSweepEvery = time.Minute

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{keys: make(map[string]*memEntry), scopes: make(map[string]map[string]struct{}), now: time.Now}
}

func copyRecord(r Record) *Record {
	r.Header = maps.Clone(r.Header)
	r.Body = slices.Clone(r.Body)
	return &r
}

// drop forgets key. s.mu must be held.
func (s *MemoryStore) drop(key string, e *memEntry) {
	delete(s.keys, key)
	if ks := s.scopes[e.scope]; ks != nil {
		delete(ks, key)
		if len(ks) == 0 {
			delete(s.scopes, e.scope)
		}
	}
}

// live counts the unexpired keys of scope, dropping the expired ones, but
// only when it holds max or more keys in all: below that, the bound
// cannot be reached. s.mu must be held.
func (s *MemoryStore) live(scope string, now time.Time, max int) int {
	ks := s.scopes[scope]
	if len(ks) < max {
		return len(ks)
	}
	for k := range ks {
		if e := s.keys[k]; !now.Before(e.expires) {
			s.drop(k, e)
		}
	}
	return len(s.scopes[scope])
}

// Claim implements Store.
func (s *MemoryStore) Claim(_ context.Context, scope, key, fingerprint, token string, lease time.Duration, max int) (bool, *Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if now.Sub(s.lastSweep) > memSweepEvery {
		s.lastSweep = now
		for k, e := range s.keys {
			if !now.Before(e.expires) {
				s.drop(k, e)
			}
		}
	}
	if e, ok := s.keys[key]; ok {
		if now.Before(e.expires) {
			return false, copyRecord(e.rec), nil
		}
		s.drop(key, e)
	}
	if max > 0 && s.live(scope, now, max) >= max {
		return false, nil, ErrTooManyKeys
	}
	s.keys[key] = &memEntry{rec: Record{Fingerprint: fingerprint, Token: token}, scope: scope, expires: now.Add(lease)}
	ks := s.scopes[scope]
	if ks == nil {
		ks = make(map[string]struct{})
		s.scopes[scope] = ks
	}
	ks[key] = struct{}{}
	return true, nil, nil
}

// Complete implements Store.
func (s *MemoryStore) Complete(_ context.Context, _, key, token string, answer Record, ttl time.Duration) error {
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
func (s *MemoryStore) Release(_ context.Context, _, key, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.keys[key]; ok && e.rec.Token == token && !e.rec.Done {
		s.drop(key, e)
	}
	return nil
}
