package mcpx

import (
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap"
)

// codeTooManySessions is the JSON-RPC error of an initialize refused
// because the server holds Config.MaxSessions sessions: a server error
// of the range JSON-RPC 2.0 leaves to implementations.
const codeTooManySessions = -32000

// tooManySessions answers a request that would open a session beyond
// Config.MaxSessions.
var tooManySessions = agentcap.Unavailable("the server holds as many MCP sessions as it may; try again later", nil)

// sessionTable bounds the Streamable HTTP sessions the SDK keeps, each
// some 20 KB for as long as it lives: at most perOwner per session owner
// (opening one more closes the owner's least recently used), at most max
// in all (initialize is refused beyond), and a session with no request
// under way, its stream included, is closed after idle. The SDK's own
// SessionTimeout still closes a session that sees no POST, stream or
// not. A zero limit or idle means none.
type sessionTable struct {
	max, perOwner int
	idle          time.Duration

	mu      sync.Mutex
	tick    uint64
	byID    map[string]*liveSession
	byOwner map[string][]*liveSession
}

// liveSession is one initialized session as the table tracks it.
type liveSession struct {
	id, owner string
	ss        *mcp.ServerSession
	// used orders the owner's sessions by their last request.
	used uint64
	// busy counts the requests under way (a GET stream among them);
	// the idle timer runs only while it is zero.
	busy  int
	timer *time.Timer
}

func newSessionTable(max, perOwner int, idle time.Duration) *sessionTable {
	return &sessionTable{max: max, perOwner: perOwner, idle: idle,
		byID: map[string]*liveSession{}, byOwner: map[string][]*liveSession{}}
}

// full reports whether a new session of owner would be refused: the
// table is full, and owner has no session to give way for it.
func (t *sessionTable) full(owner string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.max > 0 && len(t.byID) >= t.max && (t.perOwner <= 0 || len(t.byOwner[owner]) < t.perOwner)
}

// open records ss, which owner is initializing, and closes the owner's
// least recently used session if that puts the owner over its limit. It
// refuses ss when the table is full even so. The table forgets ss when
// the session ends, however it ends (DELETE, time-out, eviction, a
// failed initialize).
func (t *sessionTable) open(ss *mcp.ServerSession, owner string) error {
	id := ss.ID()
	t.mu.Lock()
	if _, ok := t.byID[id]; ok || id == "" {
		// A second initialize on a session: the SDK refuses it.
		t.mu.Unlock()
		return nil
	}
	var evicted *liveSession
	mine := t.byOwner[owner]
	if t.perOwner > 0 && len(mine) >= t.perOwner {
		evicted = mine[0]
		for _, l := range mine[1:] {
			if l.used < evicted.used {
				evicted = l
			}
		}
	}
	live := len(t.byID)
	if evicted != nil {
		live--
	}
	if t.max > 0 && live >= t.max {
		t.mu.Unlock()
		return &jsonrpc.Error{Code: codeTooManySessions, Message: "the server holds as many sessions as it may; try again later"}
	}
	if evicted != nil {
		t.removeLocked(evicted)
	}
	t.tick++
	l := &liveSession{id: id, owner: owner, ss: ss, used: t.tick}
	if t.idle > 0 {
		l.timer = time.AfterFunc(t.idle, func() { _ = ss.Close() })
	}
	t.byID[id] = l
	t.byOwner[owner] = append(t.byOwner[owner], l)
	t.mu.Unlock()
	if evicted != nil {
		// Close waits for the evicted session's calls to return; the
		// new session need not.
		go evicted.ss.Close()
	}
	go func() {
		_ = ss.Wait()
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.byID[id] == l {
			t.removeLocked(l)
		}
	}()
	return nil
}

// removeLocked forgets l and stops its timer.
func (t *sessionTable) removeLocked(l *liveSession) {
	if l.timer != nil {
		l.timer.Stop()
	}
	delete(t.byID, l.id)
	mine := t.byOwner[l.owner]
	for i, m := range mine {
		if m == l {
			mine = append(mine[:i], mine[i+1:]...)
			break
		}
	}
	if len(mine) == 0 {
		delete(t.byOwner, l.owner)
	} else {
		t.byOwner[l.owner] = mine
	}
}

// begin notes a request of owner on session id, which pauses its idle
// timer; the returned function ends it. A session of another owner is
// left alone: the SDK refuses the request.
func (t *sessionTable) begin(id, owner string) func() {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.byID[id]
	if l == nil || l.owner != owner {
		return func() {}
	}
	t.tick++
	l.used = t.tick
	l.busy++
	if l.timer != nil {
		l.timer.Stop()
	}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		l.busy--
		if l.busy == 0 && l.timer != nil && t.byID[id] == l {
			l.timer.Reset(t.idle)
		}
	}
}

// trackSession is the part of ServeHTTP that keeps the table: a request
// on a session is noted while it runs, and a request that would open one
// more session beyond Config.MaxSessions is refused with 503 before the
// SDK builds it. It returns false when it answered the request itself.
func (s *Server) trackSession(w http.ResponseWriter, r *http.Request, owner string) (end func(), ok bool) {
	id := r.Header.Get("Mcp-Session-Id")
	if id != "" {
		return s.sessions.begin(id, owner), true
	}
	if r.Method == http.MethodPost && s.sessions.full(owner) {
		s.writeError(w, r, tooManySessions, nil)
		return nil, false
	}
	return func() {}, true
}

// openSession records the session an initialize request opens, in the
// receiving middleware, where the SDK hands over the session itself.
func (s *Server) openSession(req mcp.Request) error {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	extra := req.GetExtra()
	if !ok || extra == nil || extra.TokenInfo == nil {
		return nil
	}
	return s.sessions.open(ss, extra.TokenInfo.UserID)
}
