package sqlstore

import (
	"sync"
	"time"

	"github.com/agentcap/agentcap/agentauth/store"
)

// readCacheMaxAge is how long a cached agent or host serves reads. The
// store's own writes end a cached record at once; the bound is for
// writes to the file by another process, which this one cannot see
// otherwise.
const readCacheMaxAge = time.Second

// readCacheMaxEntries bounds the records a cache holds; when it is full,
// it starts over empty.
const readCacheMaxEntries = 4096

// readCache keeps the agents and hosts read by id, the reads of every
// verified request, for the dialects whose file one process serves
// (providerDialect.CacheReads). Its records are valid while no write
// transaction of the store has ended since they were read (gen) and for
// at most readCacheMaxAge. A read takes the generation before it asks the
// database, and a write moves it on after its commit, so a record read
// while a write was under way is never served once that write has
// returned. Records are copied in and out: callers may change what they
// are given.
type readCache struct {
	mu     sync.Mutex
	gen    uint64
	agents map[string]cachedRecord[store.Agent]
	hosts  map[string]cachedRecord[store.Host]
}

// cachedRecord is a record with the generation and time it was read at.
type cachedRecord[T any] struct {
	v   *T
	gen uint64
	at  time.Time
}

func newReadCache() *readCache {
	return &readCache{agents: map[string]cachedRecord[store.Agent]{}, hosts: map[string]cachedRecord[store.Host]{}}
}

// generation is the generation a read about to ask the database is
// valid for.
func (c *readCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// changed ends every cached record: a write transaction has ended.
func (c *readCache) changed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.agents)
	clear(c.hosts)
}

func (c *readCache) agent(id string, now time.Time) *store.Agent {
	return lookup(c, c.agents, id, now, store.CloneAgent)
}

func (c *readCache) keepAgent(gen uint64, a *store.Agent, now time.Time) {
	keep(c, c.agents, gen, a.ID, store.CloneAgent(a), now)
}

func (c *readCache) host(id string, now time.Time) *store.Host {
	return lookup(c, c.hosts, id, now, store.CloneHost)
}

func (c *readCache) keepHost(gen uint64, h *store.Host, now time.Time) {
	keep(c, c.hosts, gen, h.ID, store.CloneHost(h), now)
}

// lookup returns a copy of the record of id in m while it is valid at
// now, or nil.
func lookup[T any](c *readCache, m map[string]cachedRecord[T], id string, now time.Time, clone func(*T) *T) *T {
	c.mu.Lock()
	r, ok := m[id]
	ok = ok && r.gen == c.gen
	c.mu.Unlock()
	if !ok || now.Sub(r.at) >= readCacheMaxAge || now.Before(r.at) {
		return nil
	}
	return clone(r.v)
}

// keep caches v, read at generation gen and time now, unless a write has
// ended since.
func keep[T any](c *readCache, m map[string]cachedRecord[T], gen uint64, id string, v *T, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(m) >= readCacheMaxEntries {
		clear(m)
	}
	m[id] = cachedRecord[T]{v: v, gen: gen, at: now}
}
