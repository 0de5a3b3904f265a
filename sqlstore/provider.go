package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/internal/readcheck"
	"github.com/agentcap/agentcap/internal/sqlutil"
)

// providerStore holds the Agent Auth provider's records (store.Store):
// hosts, agents and their grants, approval requests, passkeys and
// nonces, in the tables agentauth_*. It is also the directory the
// verifier reads (agentauth.Directory).
//
// Reads that need a consistent view of an agent and its grants are
// single statements; every write is one transaction that first locks the
// row it decides on (SELECT ... FOR UPDATE on PostgreSQL; on SQLite the
// writes of this process queue on a mutex and begin IMMEDIATE), so that
// compare-and-set and read-modify-write are atomic. On SQLite the
// statements of the paths every authenticated request takes (the agent
// and host reads of the verifier, the touch of the agent) are prepared
// once, and the verifier's reads run without a context watcher.
type providerStore struct {
	db    *sql.DB
	d     *providerDialect
	stmts *sqlutil.Stmts
	// agentByID and hostByID are the texts of the verifier's reads, and
	// agentHostByID that of both at once (GetAgentAndHost).
	agentByID, hostByID, agentHostByID string
	now                                func() time.Time
	writeMu                            sync.Mutex
	// cache holds the agents and hosts read by id; nil unless
	// d.CacheReads or changes is set.
	cache *readCache
	// changes is the count of changes shared with the other instances
	// writing these records (DB.SetChanges), or nil.
	changes Changes
}

// newProviderStore returns a providerStore over db, whose schema migrate
// has brought up to date.
func newProviderStore(db *sql.DB, d *providerDialect) *providerStore {
	s := &providerStore{db: db, d: d, stmts: sqlutil.NewStmts(db, d.PrepareStatements), now: time.Now}
	s.agentByID, s.hostByID = s.agentsQuery(`a.id = ?`), s.hostQuery(`id = ?`)
	s.agentHostByID = s.d.rebind(`SELECT ` + agentColumns + `, ` + joinedHostColumns + `, ` + grantColumns + `
		FROM agentauth_agents a JOIN agentauth_hosts h ON h.id = a.host_id LEFT JOIN agentauth_grants g ON g.agent_id = a.id
		WHERE a.id = ? ORDER BY g.capability`)
	if d.CacheReads {
		s.cache = newReadCache()
	}
	// The touch's statements run in transactions only, where a statement
	// is not prepared on its first use (see sqlutil.Stmts): they are
	// prepared here. One that cannot be runs unprepared, and fails then
	// if the database does.
	_ = s.stmts.Prepare(context.Background(), s.agentByID, s.d.rebind(lockAgentSQL+d.ForUpdate), s.d.rebind(writeAgentSQL))
	return s
}

// withClock makes s read bookkeeping times (created_at when left zero,
// updated_at, and the present that the directory compares expiry with)
// from now instead of time.Now, and returns s.
func (s *providerStore) withClock(now func() time.Time) *providerStore {
	if now != nil {
		s.now = now
	}
	return s
}

// Close does nothing: the store's resources are the DB's. DB.Close closes the
// prepared statements.
func (*providerStore) Close() error { return nil }

func (s *providerStore) stamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// committed carries an error that must reach the caller after the
// transaction's changes are committed: an agent that TouchAgent expires
// stays expired although the call fails.
type committed struct{ err error }

// Error implements error.
func (c *committed) Error() string { return c.err.Error() }

// tx runs fn in a write transaction. fn's error rolls back, unless it is
// a *committed, whose inner error is returned after the commit.
func (s *providerStore) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.txThen(ctx, s.changed, nil, fn)
}

// changed ends every record the store's cache holds.
func (s *providerStore) changed() {
	if s.cache != nil {
		s.cache.changed()
	}
}

// txThen is tx, calling ended once the transaction is over (committed
// or not) instead of ending every cached record: for writes that change
// less than the whole store. After a commit it moves the shared count of
// changes on, unless quiet, called then, reports that the write changed
// nothing the other instances must see at once.
func (s *providerStore) txThen(ctx context.Context, ended func(), quiet func() bool, fn func(tx *sql.Tx) error) error {
	if s.d.SerializeWrites {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %s: begin: %w", s.d.Name, err)
	}
	// Whatever becomes of the transaction, the records cached before it
	// ends are not served after.
	defer ended()
	err = fn(tx)
	var keep *committed
	if err != nil && !errors.As(err, &keep) {
		_ = tx.Rollback()
		return err
	}
	if cerr := tx.Commit(); cerr != nil {
		return fmt.Errorf("store: %s: commit: %w", s.d.Name, cerr)
	}
	if s.changes != nil && (quiet == nil || !quiet()) {
		if err := s.changes.Add(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("store: %s: the write is committed, but other instances may serve the records it changed for up to %v: the count of changes did not move: %w",
				s.d.Name, readCacheMaxAge, err)
		}
	}
	if keep != nil {
		return keep.err
	}
	return nil
}

func (s *providerStore) dbErr(err error) error {
	return fmt.Errorf("store: %s: %w", s.d.Name, err)
}

func notFound(kind, id string) error {
	return fmt.Errorf("store: %s %q: %w", kind, id, store.ErrNotFound)
}

func conflict(format string, args ...any) error {
	return fmt.Errorf("%w: %s", store.ErrConflict, fmt.Sprintf(format, args...))
}

func exec(ctx context.Context, tx *sql.Tx, d *providerDialect, q string, args ...any) (int64, error) {
	res, err := tx.ExecContext(ctx, d.rebind(q), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// ---- hosts ----

const hostColumns = `id, name, public_key, jwks_url, thumbprint, user_id, default_capabilities, oauth_client, status,
	activated_at, expires_at, last_used_at, created_at, updated_at`

// joinedHostColumns is hostColumns in a statement that names the hosts
// table h.
var joinedHostColumns = "h." + strings.Join(strings.Split(strings.Join(strings.Fields(hostColumns), " "), ", "), ", h.")

func scanHost(sc interface{ Scan(...any) error }) (*store.Host, error) {
	var r hostRow
	if err := sc.Scan(r.dest()...); err != nil {
		return nil, err
	}
	return r.host()
}

// hostRow holds the columns of hostColumns as a row is scanned.
type hostRow struct {
	h                               store.Host
	pub, jwks                       sql.NullString
	caps                            string
	activated, expires, used, c, up dbTime
}

// dest is the destinations of hostColumns, in their order.
func (r *hostRow) dest() []any {
	h := &r.h
	return []any{&h.ID, &h.Name, &r.pub, &r.jwks, &h.Thumbprint, &h.UserID, &r.caps, &h.OAuthClient, &h.Status,
		&r.activated, &r.expires, &r.used, &r.c, &r.up}
}

// host is the host scanned.
func (r *hostRow) host() (*store.Host, error) {
	h := r.h
	if r.pub.Valid {
		h.PublicKey = json.RawMessage(r.pub.String)
	}
	h.JWKSURL = r.jwks.String
	var err error
	if h.DefaultCapabilities, err = decodeStrings(r.caps); err != nil {
		return nil, err
	}
	h.ActivatedAt, h.ExpiresAt, h.LastUsedAt = r.activated.ptr(), r.expires.ptr(), r.used.ptr()
	h.CreatedAt, h.UpdatedAt = r.c.t, r.up.t
	return &h, nil
}

// hostQuery reads a host where where holds.
func (s *providerStore) hostQuery(where string) string {
	return s.d.rebind(`SELECT ` + hostColumns + ` FROM agentauth_hosts WHERE ` + where)
}

// readContext is the context of a point read outside a transaction:
// ctx, or, under providerDialect.DetachReads, one that is never canceled
// once ctx is found live.
func (s *providerStore) readContext(ctx context.Context) (context.Context, error) {
	if !s.d.DetachReads {
		return ctx, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

func (s *providerStore) hostWhere(ctx context.Context, what, id, where string, arg any) (*store.Host, error) {
	q := s.hostByID
	if where != `id = ?` {
		q = s.hostQuery(where)
	} else if rctx, err := s.readContext(ctx); err != nil {
		return nil, s.dbErr(err)
	} else {
		ctx = rctx
	}
	row := s.stmts.QueryRow(ctx, nil, q, arg)
	h, err := scanHost(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(what, id)
	}
	if err != nil {
		return nil, s.dbErr(err)
	}
	return h, nil
}

// Host implements agentauth.Directory.
func (s *providerStore) Host(ctx context.Context, id string) (*agentauth.Host, error) {
	h, err := s.GetHost(ctx, id)
	if err != nil {
		return nil, err
	}
	return h.DirectoryHost(), nil
}

// GetHost implements store.Store.
func (s *providerStore) GetHost(ctx context.Context, id string) (*store.Host, error) {
	if s.cache == nil {
		return s.hostWhere(ctx, "host", id, `id = ?`, id)
	}
	if err := ctx.Err(); err != nil {
		// As a read from the database would.
		return nil, s.dbErr(err)
	}
	n, ok := s.sharedCount(ctx)
	if !ok {
		return s.hostWhere(ctx, "host", id, `id = ?`, id)
	}
	return s.cachedHost(ctx, id, s.now(), n)
}

// cachedHost is GetHost through the cache, valid with the shared count n.
func (s *providerStore) cachedHost(ctx context.Context, id string, now time.Time, n uint64) (*store.Host, error) {
	if h := s.cache.host(id, now, n); h != nil {
		return h, nil
	}
	gen := s.cache.hostGeneration(n)
	h, err := s.hostWhere(ctx, "host", id, `id = ?`, id)
	if err == nil {
		s.cache.keepHost(gen, h, now)
	}
	return h, err
}

// sharedCount returns the shared count of changes the cache's records
// must have been read at to be served: zero without one. ok is false
// when the count cannot be read: the caller reads the database and
// caches nothing.
func (s *providerStore) sharedCount(ctx context.Context) (n uint64, ok bool) {
	if s.changes == nil {
		return 0, true
	}
	n, err := s.changes.Count(ctx)
	return n, err == nil
}

// HostByThumbprint implements store.Store.
func (s *providerStore) HostByThumbprint(ctx context.Context, thumbprint string) (*store.Host, error) {
	return s.hostWhere(ctx, "host with thumbprint", thumbprint, `thumbprint = ?`, thumbprint)
}

// HostByKeyThumbprint implements store.Store.
func (s *providerStore) HostByKeyThumbprint(ctx context.Context, thumbprint string) (*agentauth.Host, error) {
	h, err := s.HostByThumbprint(ctx, thumbprint)
	if err != nil {
		return nil, err
	}
	return h.DirectoryHost(), nil
}

// HostByJWKSURL implements store.Store.
func (s *providerStore) HostByJWKSURL(ctx context.Context, url string) (*store.Host, error) {
	return s.hostWhere(ctx, "host with JWKS URL", url, `jwks_url = ?`, url)
}

// CreateHost implements store.Store.
func (s *providerStore) CreateHost(ctx context.Context, h *store.Host) error {
	c, err := store.PrepareHost(h, s.now())
	if err != nil {
		return err
	}
	var pub any
	if len(c.PublicKey) > 0 {
		pub = string(c.PublicKey)
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := exec(ctx, tx, s.d, `INSERT INTO agentauth_hosts (`+hostColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.Name, pub, nullString(c.JWKSURL), c.Thumbprint, c.UserID, encodeStrings(c.DefaultCapabilities), c.OAuthClient, c.Status,
			s.d.tp(c.ActivatedAt), s.d.tp(c.ExpiresAt), s.d.tp(c.LastUsedAt), s.d.t(c.CreatedAt), s.d.t(c.UpdatedAt))
		if err != nil {
			if s.d.IsUnique(err) {
				return conflict("host %q, its thumbprint or its JWKS URL exists", c.ID)
			}
			return s.dbErr(err)
		}
		return nil
	})
}

// lockHost locks a host row and returns the columns asked for.
func (s *providerStore) lockHost(ctx context.Context, tx *sql.Tx, id, lock, cols string, dst ...any) error {
	err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT `+cols+` FROM agentauth_hosts WHERE id = ?`+lock), id).Scan(dst...)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("host", id)
	}
	if err != nil {
		return s.dbErr(err)
	}
	return nil
}

// UpdateHostStatus implements store.Store.
func (s *providerStore) UpdateHostStatus(ctx context.Context, id string, from []string, to string) (int, error) {
	if err := store.CheckHostStatus(to); err != nil {
		return 0, err
	}
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var status string
		if err := s.lockHost(ctx, tx, id, s.d.ForUpdate, `status`, &status); err != nil {
			return err
		}
		if err := store.CheckStatus("host", id, status, from); err != nil {
			return err
		}
		now := s.d.t(s.stamp())
		if _, err := exec(ctx, tx, s.d, `UPDATE agentauth_hosts SET status = ?, updated_at = ? WHERE id = ?`, to, now, id); err != nil {
			return s.dbErr(err)
		}
		if to != agentcap.StatusRevoked && to != agentcap.StatusRejected {
			return nil
		}
		var err error
		n, err = exec(ctx, tx, s.d, `UPDATE agentauth_agents SET status = ?, updated_at = ?
			WHERE host_id = ? AND status IN ('pending', 'active', 'expired')`, to, now, id)
		if err != nil {
			return s.dbErr(err)
		}
		return nil
	})
	return int(n), err
}

// LinkHostUser implements store.Store.
func (s *providerStore) LinkHostUser(ctx context.Context, id, userID string) ([]string, error) {
	if userID == "" {
		return nil, fmt.Errorf("%w: user id is empty", store.ErrInvalid)
	}
	var claimed []string
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var current string
		if err := s.lockHost(ctx, tx, id, s.d.ForUpdate, `user_id`, &current); err != nil {
			return err
		}
		switch current {
		case userID:
			return nil
		case "":
		default:
			return conflict("host %q is linked to another user", id)
		}
		now := s.d.t(s.stamp())
		if _, err := exec(ctx, tx, s.d, `UPDATE agentauth_hosts SET user_id = ?, updated_at = ? WHERE id = ?`, userID, now, id); err != nil {
			return s.dbErr(err)
		}
		rows, err := tx.QueryContext(ctx, s.d.rebind(`SELECT id FROM agentauth_agents
			WHERE host_id = ? AND mode = 'autonomous' AND status IN ('pending', 'active', 'expired') ORDER BY id`+s.d.ForUpdate), id)
		if err != nil {
			return s.dbErr(err)
		}
		for rows.Next() {
			var aid string
			if err := rows.Scan(&aid); err != nil {
				rows.Close()
				return s.dbErr(err)
			}
			claimed = append(claimed, aid)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return s.dbErr(err)
		}
		for _, aid := range claimed {
			if _, err := exec(ctx, tx, s.d, `UPDATE agentauth_agents SET status = 'claimed', user_id = ?, updated_at = ? WHERE id = ?`, userID, now, aid); err != nil {
				return s.dbErr(err)
			}
			if _, err := exec(ctx, tx, s.d, `UPDATE agentauth_grants SET status = 'denied', denied_by = ?, reason = ?, updated_at = ? WHERE agent_id = ?`,
				store.ClaimedBy, store.ClaimedReason, now, aid); err != nil {
				return s.dbErr(err)
			}
		}
		if _, err := exec(ctx, tx, s.d, `UPDATE agentauth_agents SET user_id = ?, updated_at = ?
			WHERE host_id = ? AND mode = 'delegated' AND user_id = ''`, userID, now, id); err != nil {
			return s.dbErr(err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// SetHostDefaultCapabilities implements store.Store.
func (s *providerStore) SetHostDefaultCapabilities(ctx context.Context, id string, capabilities []string) error {
	if err := store.CheckCapabilityNames(capabilities); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		n, err := exec(ctx, tx, s.d, `UPDATE agentauth_hosts SET default_capabilities = ?, updated_at = ? WHERE id = ?`,
			encodeStrings(capabilities), s.d.t(s.stamp()), id)
		if err != nil {
			return s.dbErr(err)
		}
		if n == 0 {
			return notFound("host", id)
		}
		return nil
	})
}

// RotateHostKey implements store.Store.
func (s *providerStore) RotateHostKey(ctx context.Context, id, fromThumbprint string, publicKey json.RawMessage, thumbprint string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var jwks sql.NullString
		var current string
		if err := s.lockHost(ctx, tx, id, s.d.ForUpdate, `jwks_url, thumbprint`, &jwks, &current); err != nil {
			return err
		}
		tp, err := store.CheckHostKey(jwks.String, publicKey, thumbprint)
		if err != nil {
			return err
		}
		if current != fromThumbprint {
			return conflict("host %q key was rotated already", id)
		}
		q, args := `UPDATE agentauth_hosts SET thumbprint = ?, updated_at = ? WHERE id = ?`, []any{tp, s.d.t(s.stamp()), id}
		if !jwks.Valid {
			q, args = `UPDATE agentauth_hosts SET thumbprint = ?, public_key = ?, updated_at = ? WHERE id = ?`, []any{tp, string(publicKey), s.d.t(s.stamp()), id}
		}
		if _, err := exec(ctx, tx, s.d, q, args...); err != nil {
			if s.d.IsUnique(err) {
				return conflict("a host with thumbprint %q exists", tp)
			}
			return s.dbErr(err)
		}
		return nil
	})
}

// TouchHost implements store.Store.
func (s *providerStore) TouchHost(ctx context.Context, id string, now time.Time) error {
	t := s.d.t(now.UTC().Truncate(time.Microsecond))
	return s.tx(ctx, func(tx *sql.Tx) error {
		n, err := exec(ctx, tx, s.d, `UPDATE agentauth_hosts
			SET last_used_at = CASE WHEN last_used_at IS NULL OR last_used_at < ? THEN ? ELSE last_used_at END, updated_at = ?
			WHERE id = ?`, t, t, s.d.t(s.stamp()), id)
		if err != nil {
			return s.dbErr(err)
		}
		if n == 0 {
			return notFound("host", id)
		}
		return nil
	})
}

// ---- agents ----

const agentColumns = `a.id, a.name, a.host_id, a.user_id, a.mode, a.status, a.public_key, a.jwks_url, a.kid, a.thumbprint,
	a.last_used_at, a.activated_at, a.expires_at, a.created_at, a.updated_at`

const grantColumns = `g.capability, g.status, g.constraints, g.granted_by, g.denied_by, g.reason, g.expires_at, g.created_at, g.updated_at`

// agentsQuery reads agents with their grants where where holds.
func (s *providerStore) agentsQuery(where string) string {
	return s.d.rebind(`SELECT ` + agentColumns + `, ` + grantColumns + `
		FROM agentauth_agents a LEFT JOIN agentauth_grants g ON g.agent_id = a.id
		WHERE ` + where + ` ORDER BY a.created_at, a.id, g.capability`)
}

// agentsWhere reads agents with their grants in one statement, so that
// the agent and its grants come from one snapshot.
// where is one of a few constant texts, and tx nil for a read outside a
// transaction.
func (s *providerStore) agentsWhere(ctx context.Context, tx *sql.Tx, where string, args ...any) ([]*store.Agent, error) {
	q := s.agentByID
	if where != `a.id = ?` {
		q = s.agentsQuery(where)
	} else if tx == nil {
		rctx, err := s.readContext(ctx)
		if err != nil {
			return nil, s.dbErr(err)
		}
		ctx = rctx
	}
	rows, err := s.stmts.Query(ctx, tx, q, args...)
	if err != nil {
		return nil, s.dbErr(err)
	}
	defer rows.Close()
	var out []*store.Agent
	var r agentRow
	for rows.Next() {
		r = agentRow{}
		if err := rows.Scan(append(r.agentDest(), r.grantDest()...)...); err != nil {
			return nil, s.dbErr(err)
		}
		if out, err = r.collect(out); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err)
	}
	return out, nil
}

// agentRow holds the columns of agentColumns and grantColumns as a row
// is scanned.
type agentRow struct {
	a                                        store.Agent
	pub, tp                                  sql.NullString
	used, activated, expires, c, up          dbTime
	gcap, gstatus, gcons, gby, gdeny, reason sql.NullString
	gexpires, gcreated, gupdated             dbTime
}

// agentDest is the destinations of agentColumns, in their order.
func (r *agentRow) agentDest() []any {
	a := &r.a
	return []any{&a.ID, &a.Name, &a.HostID, &a.UserID, &a.Mode, &a.Status, &r.pub, &a.JWKSURL, &a.KID, &r.tp,
		&r.used, &r.activated, &r.expires, &r.c, &r.up}
}

// grantDest is the destinations of grantColumns, in their order.
func (r *agentRow) grantDest() []any {
	return []any{&r.gcap, &r.gstatus, &r.gcons, &r.gby, &r.gdeny, &r.reason, &r.gexpires, &r.gcreated, &r.gupdated}
}

// collect adds the row to out, the agents of the rows before it, sorted
// by agent: a new agent, or a grant of the last one.
func (r *agentRow) collect(out []*store.Agent) ([]*store.Agent, error) {
	if len(out) == 0 || out[len(out)-1].ID != r.a.ID {
		a := r.a
		if r.pub.Valid {
			a.PublicKey = json.RawMessage(r.pub.String)
		}
		a.Thumbprint = r.tp.String
		a.LastUsedAt, a.ActivatedAt, a.ExpiresAt = r.used.ptr(), r.activated.ptr(), r.expires.ptr()
		a.CreatedAt, a.UpdatedAt = r.c.t, r.up.t
		a.Grants = []store.Grant{}
		out = append(out, &a)
	}
	if !r.gcap.Valid {
		return out, nil
	}
	cons, err := decodeConstraints(r.gcons.String)
	if err != nil {
		return nil, err
	}
	last := out[len(out)-1]
	last.Grants = append(last.Grants, store.Grant{
		Capability: r.gcap.String, Status: r.gstatus.String, Constraints: cons,
		GrantedBy: r.gby.String, DeniedBy: r.gdeny.String, Reason: r.reason.String,
		ExpiresAt: r.gexpires.ptr(), CreatedAt: r.gcreated.t, UpdatedAt: r.gupdated.t,
	})
	return out, nil
}

func (s *providerStore) oneAgent(ctx context.Context, tx *sql.Tx, what, id, where string, args ...any) (*store.Agent, error) {
	as, err := s.agentsWhere(ctx, tx, where, args...)
	if err != nil {
		return nil, err
	}
	if len(as) == 0 {
		return nil, notFound(what, id)
	}
	return as[0], nil
}

// Agent implements agentauth.Directory.
func (s *providerStore) Agent(ctx context.Context, id string) (*agentauth.Agent, error) {
	a, err := s.GetAgent(ctx, id)
	if err != nil {
		return nil, err
	}
	return a.DirectoryAgent(s.now()), nil
}

// GetAgent implements store.Store.
func (s *providerStore) GetAgent(ctx context.Context, id string) (*store.Agent, error) {
	if s.cache == nil {
		return s.oneAgent(ctx, nil, "agent", id, `a.id = ?`, id)
	}
	if err := ctx.Err(); err != nil {
		// As a read from the database would.
		return nil, s.dbErr(err)
	}
	n, ok := s.sharedCount(ctx)
	if !ok {
		return s.oneAgent(ctx, nil, "agent", id, `a.id = ?`, id)
	}
	return s.cachedAgent(ctx, id, s.now(), n)
}

// cachedAgent is GetAgent through the cache, valid with the shared count
// n.
func (s *providerStore) cachedAgent(ctx context.Context, id string, now time.Time, n uint64) (*store.Agent, error) {
	if a := s.keptAgent(id, now, n); a != nil {
		return a, nil
	}
	gen := s.cache.agentGeneration(id, n)
	a, err := s.oneAgent(ctx, nil, "agent", id, `a.id = ?`, id)
	if err == nil {
		s.cache.keepAgent(gen, a, now)
	}
	return a, err
}

// keptAgent returns the cached agent id valid with the shared count n at
// now, or nil; under a shared count, only a servable one.
func (s *providerStore) keptAgent(id string, now time.Time, n uint64) *store.Agent {
	a := s.cache.agent(id, now, n)
	if a == nil || (s.changes != nil && !servable(a, now)) {
		return nil
	}
	return a
}

// servable reports whether a, found in the cache under a shared count
// of changes (nil if not found), may answer a read at now: only an agent
// that is active and not past its deadline is. One that would be refused
// is read again, since the touches of other instances move an agent's
// clocks on without moving the count: its cached deadline may have
// passed when its stored one has not. (Without a shared count, this
// process makes every touch, and each ends the agent's cached record.)
func servable(a *store.Agent, now time.Time) bool {
	return a != nil && a.Status == agentcap.StatusActive && (a.ExpiresAt == nil || now.Before(*a.ExpiresAt))
}

// GetAgentAndHost implements store.AgentHostReader: the agent, its
// grants and its host in one statement, or, from the cache where the
// store keeps one, two reads of memory (after one read of the shared
// count, when there is one). Under a shared count, a context carrying a
// read check (the provider's session checks) is served the kept pair
// without that read, and the question of whether the count moved since
// they were read is left to the check (see internal/readcheck).
func (s *providerStore) GetAgentAndHost(ctx context.Context, id string) (*store.Agent, *store.Host, error) {
	if s.cache == nil {
		return s.agentAndHost(ctx, id)
	}
	if err := ctx.Err(); err != nil {
		// As a read from the database would.
		return nil, nil, s.dbErr(err)
	}
	if chk := readcheck.From(ctx); chk != nil && s.changes != nil {
		now := s.now()
		if a, h, n, ok := s.cache.keptPair(id, now); ok && servable(a, now) && chk.Defer(s.changes, n) {
			return a, h, nil
		}
	}
	n, ok := s.sharedCount(ctx)
	if !ok {
		return s.agentAndHost(ctx, id)
	}
	now := s.now()
	if a := s.keptAgent(id, now, n); a != nil {
		if h := s.cache.host(a.HostID, now, n); h != nil {
			return a, h, nil
		}
	}
	// On a miss, both in one statement, kept at the generations taken
	// before it.
	agentGen, hostGen := s.cache.agentGeneration(id, n), s.cache.hostGeneration(n)
	a, h, err := s.agentAndHost(ctx, id)
	if err == nil {
		s.cache.keepAgent(agentGen, a, now)
		if h != nil {
			s.cache.keepHost(hostGen, h, now)
		}
	}
	return a, h, err
}

// agentAndHost reads the agent id, its grants and its host in one
// statement.
func (s *providerStore) agentAndHost(ctx context.Context, id string) (*store.Agent, *store.Host, error) {
	rctx, err := s.readContext(ctx)
	if err != nil {
		return nil, nil, s.dbErr(err)
	}
	rows, err := s.stmts.Query(rctx, nil, s.agentHostByID, id)
	if err != nil {
		return nil, nil, s.dbErr(err)
	}
	defer rows.Close()
	var (
		out []*store.Agent
		r   agentRow
		hr  hostRow
	)
	for rows.Next() {
		r, hr = agentRow{}, hostRow{}
		if err := rows.Scan(append(append(r.agentDest(), hr.dest()...), r.grantDest()...)...); err != nil {
			return nil, nil, s.dbErr(err)
		}
		if out, err = r.collect(out); err != nil {
			return nil, nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, s.dbErr(err)
	}
	if len(out) == 0 {
		// No such agent, or, where foreign keys are not enforced, an
		// agent whose host is gone: GetAgent tells which.
		a, err := s.oneAgent(ctx, nil, "agent", id, `a.id = ?`, id)
		if err != nil {
			return nil, nil, err
		}
		return a, nil, nil
	}
	h, err := hr.host()
	if err != nil {
		return nil, nil, err
	}
	return out[0], h, nil
}

// AgentByThumbprint implements store.Store.
func (s *providerStore) AgentByThumbprint(ctx context.Context, hostID, thumbprint string) (*store.Agent, error) {
	return s.oneAgent(ctx, nil, "agent with thumbprint", thumbprint, `a.host_id = ? AND a.thumbprint = ?`, hostID, thumbprint)
}

// ListAgents implements store.Store.
func (s *providerStore) ListAgents(ctx context.Context, hostID string) ([]*store.Agent, error) {
	as, err := s.agentsWhere(ctx, nil, `a.host_id = ?`, hostID)
	if as == nil && err == nil {
		as = []*store.Agent{}
	}
	return as, err
}

// CreateAgent implements store.Store.
func (s *providerStore) CreateAgent(ctx context.Context, a *store.Agent) error {
	c, err := store.PrepareAgent(a, s.now())
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		// The shared lock keeps the host from being revoked until this
		// agent is in, so the revocation's cascade cannot miss it.
		var status string
		if err := s.lockHost(ctx, tx, c.HostID, s.d.ForShare, `status`, &status); err != nil {
			return err
		}
		if status == agentcap.StatusRevoked || status == agentcap.StatusRejected {
			return &store.StatusError{Kind: "host", ID: c.HostID, Status: status, Want: []string{agentcap.StatusActive, agentcap.StatusPending}}
		}
		var pub any
		if len(c.PublicKey) > 0 {
			pub = string(c.PublicKey)
		}
		_, err := exec(ctx, tx, s.d, `INSERT INTO agentauth_agents (id, name, host_id, user_id, mode, status, public_key, jwks_url, kid, thumbprint,
			last_used_at, activated_at, expires_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.Name, c.HostID, c.UserID, c.Mode, c.Status, pub, c.JWKSURL, c.KID, nullString(c.Thumbprint),
			s.d.tp(c.LastUsedAt), s.d.tp(c.ActivatedAt), s.d.tp(c.ExpiresAt), s.d.t(c.CreatedAt), s.d.t(c.UpdatedAt))
		if err != nil {
			if s.d.IsUnique(err) {
				return conflict("agent %q, or an agent with its key under host %q, exists", c.ID, c.HostID)
			}
			return s.dbErr(err)
		}
		return s.insertGrants(ctx, tx, c.ID, c.Grants, false)
	})
}

// insertGrants writes grants; upsert replaces an agent's grant for the
// same capability, keeping its created_at.
func (s *providerStore) insertGrants(ctx context.Context, tx *sql.Tx, agentID string, gs []store.Grant, upsert bool) error {
	q := `INSERT INTO agentauth_grants (agent_id, capability, status, constraints, granted_by, denied_by, reason, expires_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	if upsert {
		q += ` ON CONFLICT (agent_id, capability) DO UPDATE SET status = excluded.status, constraints = excluded.constraints,
			granted_by = excluded.granted_by, denied_by = excluded.denied_by, reason = excluded.reason,
			expires_at = excluded.expires_at, updated_at = excluded.updated_at`
	}
	for _, g := range gs {
		if _, err := exec(ctx, tx, s.d, q, agentID, g.Capability, g.Status, encodeConstraints(g.Constraints),
			g.GrantedBy, g.DeniedBy, g.Reason, s.d.tp(g.ExpiresAt), s.d.t(g.CreatedAt), s.d.t(g.UpdatedAt)); err != nil {
			return s.dbErr(err)
		}
	}
	return nil
}

// lockAgent locks an agent row. Row locks cannot reach the nullable side
// of an outer join, so the agent is locked first and read with its
// grants afterwards, in the same transaction.
func (s *providerStore) lockAgent(ctx context.Context, tx *sql.Tx, id string) (*store.Agent, error) {
	var got string
	err := s.stmts.QueryRow(ctx, tx, s.d.rebind(lockAgentSQL+s.d.ForUpdate), id).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("agent", id)
	}
	if err != nil {
		return nil, s.dbErr(err)
	}
	return s.oneAgent(ctx, tx, "agent", id, `a.id = ?`, id)
}

// UpdateAgentStatus implements store.Store.
func (s *providerStore) UpdateAgentStatus(ctx context.Context, id string, from []string, to string) error {
	if err := store.CheckAgentStatus(to); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		var status string
		err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT status FROM agentauth_agents WHERE id = ?`+s.d.ForUpdate), id).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("agent", id)
		}
		if err != nil {
			return s.dbErr(err)
		}
		if err := store.CheckStatus("agent", id, status, from); err != nil {
			return err
		}
		if _, err := exec(ctx, tx, s.d, `UPDATE agentauth_agents SET status = ?, updated_at = ? WHERE id = ?`, to, s.d.t(s.stamp()), id); err != nil {
			return s.dbErr(err)
		}
		return nil
	})
}

// lockAgentSQL selects an agent to lock it, before the dialect's
// ForUpdate; writeAgentSQL writes back what changeAgent changes.
const (
	lockAgentSQL  = `SELECT id FROM agentauth_agents WHERE id = ?`
	writeAgentSQL = `UPDATE agentauth_agents SET status = ?, user_id = ?, last_used_at = ?, activated_at = ?, expires_at = ?, updated_at = ?
			WHERE id = ?`
)

// changeAgent locks an agent, runs fn on it and writes back its status,
// user and clocks (and its grants when grants is set). An error from fn
// rolls back, unless fn changed the status, which is then kept. A touch
// (clocks set) that leaves the status as it was does not move the shared
// count of changes: the other instances' copies of the agent only have
// older clocks, which make them read it again rather than trust it
// longer (see servable).
func (s *providerStore) changeAgent(ctx context.Context, id string, grants, touch bool, fn func(a *store.Agent) error) error {
	ended := s.changed
	if s.cache != nil {
		// It writes agent id's row and grants, nothing else.
		ended = func() { s.cache.changedAgent(id) }
	}
	statusKept := false
	quiet := func() bool { return touch && statusKept }
	return s.txThen(ctx, ended, quiet, func(tx *sql.Tx) error {
		a, err := s.lockAgent(ctx, tx, id)
		if err != nil {
			return err
		}
		before := a.Status
		ferr := fn(a)
		if ferr != nil && a.Status == before {
			return ferr
		}
		statusKept = a.Status == before
		if _, err := s.stmts.Exec(ctx, tx, s.d.rebind(writeAgentSQL), a.Status, a.UserID, s.d.tp(a.LastUsedAt), s.d.tp(a.ActivatedAt), s.d.tp(a.ExpiresAt), s.d.t(s.stamp()), id); err != nil {
			return s.dbErr(err)
		}
		if ferr != nil {
			return &committed{ferr}
		}
		if grants {
			if _, err := exec(ctx, tx, s.d, `DELETE FROM agentauth_grants WHERE agent_id = ?`, id); err != nil {
				return s.dbErr(err)
			}
			return s.insertGrants(ctx, tx, id, a.Grants, false)
		}
		return nil
	})
}

// ActivateAgent implements store.Store.
func (s *providerStore) ActivateAgent(ctx context.Context, id string, from []string, now time.Time, p store.Policy) error {
	return s.changeAgent(ctx, id, false, false, func(a *store.Agent) error { return store.Activate(a, from, now, p) })
}

// ReactivateAgent implements store.Store.
func (s *providerStore) ReactivateAgent(ctx context.Context, id, to string, grants []store.Grant, now time.Time, p store.Policy) error {
	gs, err := store.PrepareGrants(grants, s.now())
	if err != nil {
		return err
	}
	return s.changeAgent(ctx, id, true, false, func(a *store.Agent) error { return store.Reactivate(a, to, gs, now, p) })
}

// TouchAgent implements store.Store.
func (s *providerStore) TouchAgent(ctx context.Context, id string, now time.Time, p store.Policy) error {
	return s.changeAgent(ctx, id, false, true, func(a *store.Agent) error { return store.Touch(a, now, p) })
}

// RotateAgentKey implements store.Store.
func (s *providerStore) RotateAgentKey(ctx context.Context, id string, key store.AgentKey) error {
	k, err := store.PrepareAgentKey(key)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		var status, hostID string
		err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT status, host_id FROM agentauth_agents WHERE id = ?`+s.d.ForUpdate), id).Scan(&status, &hostID)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("agent", id)
		}
		if err != nil {
			return s.dbErr(err)
		}
		if err := store.CheckStatus("agent", id, status, []string{agentcap.StatusPending, agentcap.StatusActive, agentcap.StatusExpired}); err != nil {
			return err
		}
		var pub any
		if len(k.PublicKey) > 0 {
			pub = string(k.PublicKey)
		}
		if _, err := exec(ctx, tx, s.d, `UPDATE agentauth_agents SET public_key = ?, jwks_url = ?, kid = ?, thumbprint = ?, updated_at = ? WHERE id = ?`,
			pub, k.JWKSURL, k.KID, nullString(k.Thumbprint), s.d.t(s.stamp()), id); err != nil {
			if s.d.IsUnique(err) {
				return conflict("host %q has an agent with key thumbprint %q", hostID, k.Thumbprint)
			}
			return s.dbErr(err)
		}
		return nil
	})
}

// ---- grants ----

// lockAgentRow locks an agent row for grant writes.
func (s *providerStore) lockAgentRow(ctx context.Context, tx *sql.Tx, id string) error {
	var got string
	err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT id FROM agentauth_agents WHERE id = ?`+s.d.ForUpdate), id).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("agent", id)
	}
	if err != nil {
		return s.dbErr(err)
	}
	return nil
}

// PutGrants implements store.Store.
func (s *providerStore) PutGrants(ctx context.Context, agentID string, grants []store.Grant) error {
	gs, err := store.PrepareGrants(grants, s.now())
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockAgentRow(ctx, tx, agentID); err != nil {
			return err
		}
		return s.insertGrants(ctx, tx, agentID, gs, true)
	})
}

// ReplaceGrants implements store.Store.
func (s *providerStore) ReplaceGrants(ctx context.Context, agentID string, grants []store.Grant) error {
	gs, err := store.PrepareGrants(grants, s.now())
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockAgentRow(ctx, tx, agentID); err != nil {
			return err
		}
		if _, err := exec(ctx, tx, s.d, `DELETE FROM agentauth_grants WHERE agent_id = ?`, agentID); err != nil {
			return s.dbErr(err)
		}
		return s.insertGrants(ctx, tx, agentID, gs, false)
	})
}

// UpdateGrantStatus implements store.Store.
func (s *providerStore) UpdateGrantStatus(ctx context.Context, agentID, capability string, c store.GrantChange) error {
	if err := store.CheckGrantChange(c); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockAgentRow(ctx, tx, agentID); err != nil {
			return err
		}
		var g store.Grant
		g.Capability = capability
		err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT status, granted_by, denied_by, reason FROM agentauth_grants
			WHERE agent_id = ? AND capability = ?`), agentID, capability).Scan(&g.Status, &g.GrantedBy, &g.DeniedBy, &g.Reason)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("grant", agentID+"/"+capability)
		}
		if err != nil {
			return s.dbErr(err)
		}
		if err := store.ChangeGrant(&g, agentID, c, s.now()); err != nil {
			return err
		}
		if _, err := exec(ctx, tx, s.d, `UPDATE agentauth_grants SET status = ?, granted_by = ?, denied_by = ?, reason = ?, updated_at = ?
			WHERE agent_id = ? AND capability = ?`, g.Status, g.GrantedBy, g.DeniedBy, g.Reason, s.d.t(g.UpdatedAt), agentID, capability); err != nil {
			return s.dbErr(err)
		}
		if c.To == agentcap.StatusActive {
			if _, err := exec(ctx, tx, s.d, `UPDATE agentauth_grants SET expires_at = ? WHERE agent_id = ? AND capability = ?`,
				s.d.tp(g.ExpiresAt), agentID, capability); err != nil {
				return s.dbErr(err)
			}
		}
		return nil
	})
}

// ListGrants implements store.Store.
func (s *providerStore) ListGrants(ctx context.Context, agentID string) ([]store.Grant, error) {
	a, err := s.GetAgent(ctx, agentID)
	if err != nil {
		return nil, err
	}
	return a.Grants, nil
}

// ---- approvals ----

const approvalColumns = `id, method, agent_id, host_id, user_id, capabilities, status, interval_ms, last_polled_at,
	expires_at, binding_message, call_request, created_at, updated_at`

func scanApproval(sc interface{ Scan(...any) error }) (*store.Approval, error) {
	var (
		a              store.Approval
		agent, host    sql.NullString
		caps           string
		call           sql.NullString
		interval       int64
		polled, exp, c dbTime
		up             dbTime
	)
	if err := sc.Scan(&a.ID, &a.Method, &agent, &host, &a.UserID, &caps, &a.Status, &interval, &polled,
		&exp, &a.BindingMessage, &call, &c, &up); err != nil {
		return nil, err
	}
	var err error
	if a.Capabilities, err = decodeCapabilities(caps); err != nil {
		return nil, err
	}
	if call.Valid {
		if a.Call, err = decodeCall(call.String); err != nil {
			return nil, err
		}
	}
	a.AgentID, a.HostID = agent.String, host.String
	a.Interval = time.Duration(interval) * time.Millisecond
	a.LastPolledAt, a.ExpiresAt, a.CreatedAt, a.UpdatedAt = polled.ptr(), exp.t, c.t, up.t
	return &a, nil
}

func (s *providerStore) approvalWhere(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, what, id, where, lock string, arg any) (*store.Approval, error) {
	a, err := scanApproval(q.QueryRowContext(ctx, s.d.rebind(`SELECT `+approvalColumns+` FROM agentauth_approvals WHERE `+where+lock), arg))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(what, id)
	}
	if err != nil {
		return nil, s.dbErr(err)
	}
	return a, nil
}

// CreateApproval implements store.Store.
func (s *providerStore) CreateApproval(ctx context.Context, a *store.Approval) error {
	c, err := store.PrepareApproval(a, s.now())
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		if c.AgentID != "" {
			var got string
			if err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT id FROM agentauth_agents WHERE id = ?`+s.d.ForShare), c.AgentID).Scan(&got); errors.Is(err, sql.ErrNoRows) {
				return notFound("agent", c.AgentID)
			} else if err != nil {
				return s.dbErr(err)
			}
		}
		if c.HostID != "" {
			var got string
			if err := s.lockHost(ctx, tx, c.HostID, s.d.ForShare, `id`, &got); err != nil {
				return err
			}
		}
		var call sql.NullString
		if c.Call != nil {
			call = sql.NullString{String: encodeCall(c.Call), Valid: true}
		}
		_, err := exec(ctx, tx, s.d, `INSERT INTO agentauth_approvals (id, method, agent_id, host_id, user_id, capabilities,
			user_code_hash, device_code_hash, status, interval_ms, last_polled_at, expires_at, binding_message, call_request, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.Method, nullString(c.AgentID), nullString(c.HostID), c.UserID, encodeCapabilities(c.Capabilities),
			nullString(store.HashCode(c.UserCode)), nullString(store.HashCode(c.DeviceCode)), c.Status, c.Interval.Milliseconds(),
			s.d.tp(c.LastPolledAt), s.d.t(c.ExpiresAt), c.BindingMessage, call, s.d.t(c.CreatedAt), s.d.t(c.UpdatedAt))
		switch {
		case err == nil:
			return nil
		case s.d.IsUnique(err):
			return conflict("approval %q, its user code or its device code exists", c.ID)
		case s.d.IsForeignKey(err):
			return fmt.Errorf("store: approval %q: its agent or host was deleted: %w", c.ID, store.ErrNotFound)
		}
		return s.dbErr(err)
	})
}

// GetApproval implements store.Store.
func (s *providerStore) GetApproval(ctx context.Context, id string) (*store.Approval, error) {
	return s.approvalWhere(ctx, s.db, "approval", id, `id = ?`, "", id)
}

// ApprovalByUserCode implements store.Store.
func (s *providerStore) ApprovalByUserCode(ctx context.Context, code string) (*store.Approval, error) {
	// The code is a secret: it stays out of the error.
	return s.approvalWhere(ctx, s.db, "approval", "by code", `user_code_hash = ?`, "", store.HashCode(code))
}

// ApprovalByDeviceCode implements store.Store.
func (s *providerStore) ApprovalByDeviceCode(ctx context.Context, code string) (*store.Approval, error) {
	return s.approvalWhere(ctx, s.db, "approval", "by code", `device_code_hash = ?`, "", store.HashCode(code))
}

// ListApprovals implements store.Store.
func (s *providerStore) ListApprovals(ctx context.Context, agentID string) ([]*store.Approval, error) {
	return queryAll(ctx, s, scanApproval, `SELECT `+approvalColumns+` FROM agentauth_approvals
		WHERE agent_id = ? ORDER BY created_at, id`, agentID)
}

func (s *providerStore) writeApprovalState(ctx context.Context, tx *sql.Tx, a *store.Approval) error {
	_, err := exec(ctx, tx, s.d, `UPDATE agentauth_approvals SET status = ?, user_id = ?, last_polled_at = ?, updated_at = ? WHERE id = ?`,
		a.Status, a.UserID, s.d.tp(a.LastPolledAt), s.d.t(s.stamp()), a.ID)
	if err != nil {
		return s.dbErr(err)
	}
	return nil
}

// PollApproval implements store.Store.
func (s *providerStore) PollApproval(ctx context.Context, id string, now time.Time) (*store.Approval, bool, error) {
	var out *store.Approval
	var slow bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		a, err := s.approvalWhere(ctx, tx, "approval", id, `id = ?`, s.d.ForUpdate, id)
		if err != nil {
			return err
		}
		slow = store.Poll(a, now)
		if err := s.writeApprovalState(ctx, tx, a); err != nil {
			return err
		}
		a.UpdatedAt = s.stamp()
		out = a
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, slow, nil
}

// DecideApproval implements store.Store.
func (s *providerStore) DecideApproval(ctx context.Context, id, to, userID string, now time.Time) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		a, err := s.approvalWhere(ctx, tx, "approval", id, `id = ?`, s.d.ForUpdate, id)
		if err != nil {
			return err
		}
		before := a.Status
		derr := store.Decide(a, to, userID, now)
		if derr != nil && a.Status == before {
			return derr
		}
		if err := s.writeApprovalState(ctx, tx, a); err != nil {
			return err
		}
		if derr != nil {
			return &committed{derr}
		}
		return nil
	})
}

// ---- sweep ----

// Sweep implements store.Store. Its conditions are store.Policy.Lapsed
// written as SQL: t + d <= now is t <= now - d.
func (s *providerStore) Sweep(ctx context.Context, now time.Time, p store.Policy) (store.SweepResult, error) {
	now = now.UTC().Truncate(time.Microsecond)
	var r store.SweepResult
	err := s.tx(ctx, func(tx *sql.Tx) error {
		stamp := s.d.t(s.stamp())
		count := func(dst *int, q string, args ...any) error {
			n, err := exec(ctx, tx, s.d, q, args...)
			if err != nil {
				return s.dbErr(err)
			}
			*dst = int(n)
			return nil
		}
		if p.AbsoluteLifetime > 0 {
			if err := count(&r.AgentsRevoked, `UPDATE agentauth_agents SET status = 'revoked', updated_at = ?
				WHERE status IN ('active', 'expired') AND created_at <= ?`, stamp, s.d.t(now.Add(-p.AbsoluteLifetime))); err != nil {
				return err
			}
		}
		cond := `(expires_at IS NOT NULL AND expires_at <= ?)`
		args := []any{stamp, s.d.t(now)}
		if p.SessionTTL > 0 {
			c := s.d.t(now.Add(-p.SessionTTL))
			cond += ` OR ((last_used_at IS NULL OR last_used_at <= ?) AND (activated_at IS NULL OR activated_at <= ?) AND created_at <= ?)`
			args = append(args, c, c, c)
		}
		if p.MaxLifetime > 0 {
			cond += ` OR COALESCE(activated_at, created_at) <= ?`
			args = append(args, s.d.t(now.Add(-p.MaxLifetime)))
		}
		if err := count(&r.AgentsExpired, `UPDATE agentauth_agents SET status = 'expired', updated_at = ?
			WHERE status = 'active' AND (`+cond+`)`, args...); err != nil {
			return err
		}
		if p.PendingTTL > 0 {
			c := s.d.t(now.Add(-p.PendingTTL))
			if err := count(&r.AgentsDeleted, `DELETE FROM agentauth_agents WHERE status = 'pending' AND created_at <= ?`, c); err != nil {
				return err
			}
			if err := count(&r.HostsDeleted, `DELETE FROM agentauth_hosts WHERE status = 'pending' AND created_at <= ?
				AND NOT EXISTS (SELECT 1 FROM agentauth_agents WHERE agentauth_agents.host_id = agentauth_hosts.id)`, c); err != nil {
				return err
			}
		}
		if err := count(&r.ApprovalsDeleted, `DELETE FROM agentauth_approvals WHERE expires_at <= ?`, s.d.t(now)); err != nil {
			return err
		}
		return count(&r.NoncesDeleted, `DELETE FROM agentauth_nonces WHERE expires_at <= ?`, s.d.t(now))
	})
	if err != nil {
		return store.SweepResult{}, err
	}
	return r, nil
}
