package sqlstore

import (
	"context"
	"database/sql"

	"github.com/agentcap/agentcap/agentauth/store"
)

// queryAll runs a query and scans every row with scan.
func queryAll[T any](ctx context.Context, s *providerStore, scan func(sc interface{ Scan(...any) error }) (T, error), query string, args ...any) ([]T, error) {
	rows, err := s.db.QueryContext(ctx, s.d.rebind(query), args...)
	if err != nil {
		return nil, s.dbErr(err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, s.dbErr(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(err)
	}
	return out, nil
}

// ListUserHosts implements store.Store.
func (s *providerStore) ListUserHosts(ctx context.Context, userID string) ([]*store.Host, error) {
	if err := store.CheckUserID(userID); err != nil {
		return nil, err
	}
	return queryAll(ctx, s, scanHost, `SELECT `+hostColumns+` FROM agentauth_hosts WHERE user_id = ? ORDER BY created_at, id`, userID)
}

// ListUserAgents implements store.Store.
func (s *providerStore) ListUserAgents(ctx context.Context, userID string) ([]*store.Agent, error) {
	if err := store.CheckUserID(userID); err != nil {
		return nil, err
	}
	out, err := s.agentsWhere(ctx, nil, `a.user_id = ? OR a.host_id IN (SELECT id FROM agentauth_hosts WHERE user_id = ?)`, userID, userID)
	if out == nil && err == nil {
		out = []*store.Agent{}
	}
	return out, err
}

// ListUserApprovals implements store.Store.
func (s *providerStore) ListUserApprovals(ctx context.Context, userID string) ([]*store.Approval, error) {
	if err := store.CheckUserID(userID); err != nil {
		return nil, err
	}
	return queryAll(ctx, s, scanApproval, `SELECT `+approvalColumns+` FROM agentauth_approvals
		WHERE status = 'pending' AND (user_id = ?
			OR host_id IN (SELECT id FROM agentauth_hosts WHERE user_id = ?)
			OR agent_id IN (SELECT id FROM agentauth_agents WHERE user_id = ?))
		ORDER BY created_at, id`, userID, userID, userID)
}

// SetHostName implements store.Store.
func (s *providerStore) SetHostName(ctx context.Context, id, name string) error {
	return s.setName(ctx, "agentauth_hosts", "host", id, name)
}

// SetAgentName implements store.Store.
func (s *providerStore) SetAgentName(ctx context.Context, id, name string) error {
	return s.setName(ctx, "agentauth_agents", "agent", id, name)
}

func (s *providerStore) setName(ctx context.Context, table, kind, id, name string) error {
	if err := store.CheckName(name); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		n, err := exec(ctx, tx, s.d, `UPDATE `+table+` SET name = ?, updated_at = ? WHERE id = ?`, name, s.d.t(s.stamp()), id)
		if err != nil {
			return s.dbErr(err)
		}
		if n == 0 {
			return notFound(kind, id)
		}
		return nil
	})
}
