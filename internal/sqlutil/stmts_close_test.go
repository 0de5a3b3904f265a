package sqlutil_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentcap/agentcap/internal/sqlutil"
)

// gate is a database/sql connector whose statements of gateQuery prepare
// and close when the test says: a preparation waits until the gate's
// number of them are under way (two, so that two Prepared calls both
// miss the cache and both prepare), and the first of the query's
// statements to close waits, once closing is closed, until release is.
type gate struct {
	closing chan struct{}
	release chan struct{}

	mu        sync.Mutex
	preparing int
	together  int
	all       chan struct{}
	closeOnce sync.Once
}

// gateQuery is the query the tests' gates hold up.
const gateQuery = "SELECT gate"

// gated returns a gate on gateQuery that lets together preparations
// through at once, and statements kept on a database behind it.
func gated(t *testing.T, together int) (*gate, *sqlutil.Stmts) {
	t.Helper()
	g := &gate{together: together,
		closing: make(chan struct{}), release: make(chan struct{}), all: make(chan struct{})}
	db := sql.OpenDB(g)
	t.Cleanup(func() { db.Close() })
	return g, sqlutil.NewStmts(db, true)
}

// gateWait bounds every wait of the gate, so that a Stmts that gets it
// wrong fails the test instead of hanging it.
const gateWait = 10 * time.Second

func (g *gate) Connect(context.Context) (driver.Conn, error) { return gateConn{g}, nil }
func (g *gate) Driver() driver.Driver                        { return gateDriver{g} }

type gateDriver struct{ g *gate }

func (d gateDriver) Open(string) (driver.Conn, error) { return gateConn(d), nil }

type gateConn struct{ g *gate }

func (c gateConn) Prepare(query string) (driver.Stmt, error) {
	g := c.g
	if query == gateQuery {
		g.mu.Lock()
		g.preparing++
		if g.preparing == g.together {
			close(g.all)
		}
		g.mu.Unlock()
		select {
		case <-g.all:
		case <-time.After(gateWait):
			return nil, errors.New("gate: the other preparations never came")
		}
	}
	return gateStmt{g: g, query: query}, nil
}

func (gateConn) Close() error              { return nil }
func (gateConn) Begin() (driver.Tx, error) { return nil, errors.New("gate: no transactions") }

type gateStmt struct {
	g     *gate
	query string
}

func (s gateStmt) Close() error {
	if s.query != gateQuery {
		return nil
	}
	var err error
	s.g.closeOnce.Do(func() {
		close(s.g.closing)
		select {
		case <-s.g.release:
		case <-time.After(gateWait):
			err = errors.New("gate: never released")
		}
	})
	return err
}

func (gateStmt) NumInput() int { return -1 }
func (gateStmt) Exec([]driver.Value) (driver.Result, error) {
	return nil, errors.New("gate: nothing to run")
}
func (gateStmt) Query([]driver.Value) (driver.Rows, error) {
	return nil, errors.New("gate: nothing to run")
}

// TestStmtsClosesOutsideLock: when two callers prepare one query at
// once, the one that finds the other's statement kept closes its own
// without holding the cache's lock. Closing a statement waits for each
// connection it was prepared on, one of which may be running a write
// that waits for a transaction, and that transaction may itself be
// waiting to read the cache: under the lock, all three would wait for
// one another until the write's busy timeout.
func TestStmtsClosesOutsideLock(t *testing.T) {
	g, c := gated(t, 2)
	ctx := context.Background()

	var wg sync.WaitGroup
	var got [2]*sql.Stmt
	for i := range got {
		wg.Go(func() {
			st, err := c.Prepared(ctx, gateQuery)
			if err != nil {
				t.Error(err)
			}
			got[i] = st
		})
	}
	select {
	case <-g.closing:
	case <-time.After(gateWait):
		t.Fatal("neither caller closed a duplicate statement")
	}

	// The duplicate's close is waiting: the cache must still answer.
	found := make(chan *sql.Stmt, 1)
	go func() {
		st, err := c.Prepared(ctx, gateQuery)
		if err != nil {
			t.Error(err)
		}
		found <- st
	}()
	var kept *sql.Stmt
	select {
	case kept = <-found:
	case <-time.After(gateWait):
		t.Error("Prepared waited for another caller's statement to close: the cache's lock is held while closing")
	}
	close(g.release)
	wg.Wait()
	if kept == nil {
		kept = <-found
	}

	if got[0] == nil || got[0] != got[1] || got[0] != kept {
		t.Errorf("callers got statements %p, %p and %p; want one statement for all", got[0], got[1], kept)
	}
	if n := c.Len(); n != 1 {
		t.Errorf("Len = %d, want 1", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStmtsCloseOutsideLock: Close closes the statements without holding
// the cache's lock, for the same reason; meanwhile Prepared answers that
// the statements are closed.
func TestStmtsCloseOutsideLock(t *testing.T) {
	g, c := gated(t, 1)
	ctx := context.Background()
	if _, err := c.Prepared(ctx, gateQuery); err != nil {
		t.Fatal(err)
	}

	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case <-g.closing:
	case <-time.After(gateWait):
		t.Fatal("Close did not close the statement")
	}
	answered := make(chan error, 1)
	go func() {
		_, err := c.Prepared(ctx, gateQuery)
		answered <- err
	}()
	select {
	case err := <-answered:
		if !errors.Is(err, sqlutil.ErrStmtsClosed) {
			t.Errorf("Prepared during Close: %v, want ErrStmtsClosed", err)
		}
	case <-time.After(gateWait):
		t.Error("Prepared waited for Close to close the statements: the cache's lock is held while closing")
	}
	close(g.release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if n := c.Len(); n != 0 {
		t.Errorf("Len after Close = %d, want 0", n)
	}
}
