package sqlstore

import (
	"sync"
	"time"

	"github.com/agentcap/agentcap/agentauth/store"
)

// readCacheMaxAge is how long a cached agent or host serves reads. The
// store's own writes end a cached record at once, and so do the writes
// of other instances that move the shared count of changes; the bound
// is for writes this process cannot see otherwise: to an SQLite file by
// another process, or by an instance that stopped between its commit
// and moving the count.
const readCacheMaxAge = time.Second

// readCacheMaxEntries bounds the records a cache holds; when it is full,
// it starts over empty.
const readCacheMaxEntries = 4096

// readCache keeps the agents and hosts read by id, the reads of every
// verified request, for the dialects whose file one process serves
// (providerDialect.CacheReads) and for a store given a shared count of
// changes (DB.SetChanges). Its records are valid while no write
// transaction of the store has ended since they were read (gen), while
// the shared count is where it was when they were read, and for at most
// readCacheMaxAge. A read takes the generations before it asks the
// database, and a write moves them on after its commit, so a record read
// while a write was under way is never served once that write has
// returned, in this process or, through the shared count, in any other.
// Records are copied in and out: callers may change what they are given.
//
// A write that changes one agent's row and grants only (changeAgent:
// activation, reactivation, the touch of every verified request once a
// second) ends that agent's record alone, through a generation of its
// own (agentGen), so that the touches of many agents do not empty the
// cache for all.
type readCache struct {
	mu       sync.Mutex
	gen      uint64
	agentGen map[string]uint64
	agents   map[string]cachedRecord[store.Agent]
	hosts    map[string]cachedRecord[store.Host]
}

// cachedRecord is a record with the generations and time it was read at.
type cachedRecord[T any] struct {
	v   *T
	gen cacheGen
	at  time.Time
}

// cacheGen is the store's generation, the record's own (an agent's;
// zero for hosts) and the shared count of changes (zero without one) at
// a read.
type cacheGen struct{ all, own, shared uint64 }

func newReadCache() *readCache {
	return &readCache{agentGen: map[string]uint64{},
		agents: map[string]cachedRecord[store.Agent]{}, hosts: map[string]cachedRecord[store.Host]{}}
}

// agentGeneration and hostGeneration are the generations a read of the
// agent or host id about to ask the database is valid for, with the
// shared count n read before it.
func (c *readCache) agentGeneration(id string, n uint64) cacheGen {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cacheGen{c.gen, c.agentGen[id], n}
}

func (c *readCache) hostGeneration(n uint64) cacheGen {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cacheGen{all: c.gen, shared: n}
}

// changed ends every cached record: a write transaction has ended.
func (c *readCache) changed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.agentGen)
	clear(c.agents)
	clear(c.hosts)
}

// changedAgent ends the cached record of agent id: a write transaction
// that changed that agent alone has ended.
func (c *readCache) changedAgent(id string) {
	c.mu.Lock()
	if len(c.agentGen) >= readCacheMaxEntries {
		c.mu.Unlock()
		c.changed()
		return
	}
	defer c.mu.Unlock()
	c.agentGen[id]++
	delete(c.agents, id)
}

// agent and host return a copy of the record of id valid with the shared
// count n at now, or nil.
func (c *readCache) agent(id string, now time.Time, n uint64) *store.Agent {
	c.mu.Lock()
	r, ok := c.agents[id]
	ok = ok && r.gen == cacheGen{c.gen, c.agentGen[id], n}
	c.mu.Unlock()
	return valid(r, ok, now, store.CloneAgent)
}

// keptPair returns copies of the agent id and its host as kept, with the
// shared count they were read at, whatever the count is now: both kept at
// the store's current generations and at the same count, and young enough
// at now.
func (c *readCache) keptPair(id string, now time.Time) (*store.Agent, *store.Host, uint64, bool) {
	c.mu.Lock()
	r, ok := c.agents[id]
	ok = ok && r.gen.all == c.gen && r.gen.own == c.agentGen[id]
	var hr cachedRecord[store.Host]
	if ok {
		hr, ok = c.hosts[r.v.HostID]
		ok = ok && hr.gen.all == c.gen && hr.gen.shared == r.gen.shared
	}
	c.mu.Unlock()
	a, h := valid(r, ok, now, store.CloneAgent), valid(hr, ok, now, store.CloneHost)
	if a == nil || h == nil {
		return nil, nil, 0, false
	}
	return a, h, r.gen.shared, true
}

func (c *readCache) keepAgent(gen cacheGen, a *store.Agent, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen.all == c.gen && gen.own == c.agentGen[a.ID] {
		keep(c.agents, a.ID, cachedRecord[store.Agent]{store.CloneAgent(a), gen, now})
	}
}

func (c *readCache) host(id string, now time.Time, n uint64) *store.Host {
	c.mu.Lock()
	r, ok := c.hosts[id]
	ok = ok && r.gen == cacheGen{all: c.gen, shared: n}
	c.mu.Unlock()
	return valid(r, ok, now, store.CloneHost)
}

func (c *readCache) keepHost(gen cacheGen, h *store.Host, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen.all == c.gen {
		keep(c.hosts, h.ID, cachedRecord[store.Host]{store.CloneHost(h), gen, now})
	}
}

// valid returns a copy of r, found (ok) with the current generations,
// while it is young enough at now, or nil.
func valid[T any](r cachedRecord[T], ok bool, now time.Time, clone func(*T) *T) *T {
	if !ok || now.Sub(r.at) >= readCacheMaxAge || now.Before(r.at) {
		return nil
	}
	return clone(r.v)
}

// keep puts r in m, which starts over empty when full; c.mu is held.
func keep[T any](m map[string]cachedRecord[T], id string, r cachedRecord[T]) {
	if len(m) >= readCacheMaxEntries {
		clear(m)
	}
	m[id] = r
}
