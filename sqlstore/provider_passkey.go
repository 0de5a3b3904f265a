package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentcap/agentcap/agentauth/store"
)

const passkeyColumns = `id, user_id, user_handle, name, credential, created_at, last_used_at`

func scanPasskey(sc interface{ Scan(...any) error }) (*store.Passkey, error) {
	var (
		p             store.Passkey
		cred          string
		created, used dbTime
	)
	if err := sc.Scan(&p.ID, &p.UserID, &p.UserHandle, &p.Name, &cred, &created, &used); err != nil {
		return nil, err
	}
	p.Credential, p.CreatedAt, p.LastUsedAt = json.RawMessage(cred), created.t, used.ptr()
	return &p, nil
}

// CreatePasskey implements store.Store.
func (s *providerStore) CreatePasskey(ctx context.Context, p *store.Passkey) error {
	if err := store.CheckPasskey(p); err != nil {
		return err
	}
	created := p.CreatedAt
	if created.IsZero() {
		created = s.stamp()
	}
	created = created.UTC().Truncate(time.Microsecond)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := exec(ctx, tx, s.d, `INSERT INTO agentauth_passkeys (`+passkeyColumns+`) VALUES (?, ?, ?, ?, ?, ?, NULL)`,
			p.ID, p.UserID, p.UserHandle, p.Name, string(p.Credential), s.d.t(created))
		if err != nil && s.d.IsUnique(err) {
			return conflict("passkey %q exists", p.ID)
		}
		if err != nil {
			return s.dbErr(err)
		}
		return nil
	})
	if err == nil {
		p.CreatedAt = created
	}
	return err
}

// ListPasskeys implements store.Store.
func (s *providerStore) ListPasskeys(ctx context.Context, userID string) ([]*store.Passkey, error) {
	if err := store.CheckUserID(userID); err != nil {
		return nil, err
	}
	return queryAll(ctx, s, scanPasskey, `SELECT `+passkeyColumns+` FROM agentauth_passkeys WHERE user_id = ? ORDER BY created_at, id`, userID)
}

// changePasskey runs one statement on the user's passkey id, whose last
// two placeholders are the id and the user id.
func (s *providerStore) changePasskey(ctx context.Context, userID, id, q string, args ...any) error {
	if err := store.CheckUserID(userID); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		n, err := exec(ctx, tx, s.d, q, append(args, id, userID)...)
		if err != nil {
			return s.dbErr(err)
		}
		if n == 0 {
			return notFound("passkey", id)
		}
		return nil
	})
}

// UsePasskey implements store.Store.
func (s *providerStore) UsePasskey(ctx context.Context, userID, id string, credential json.RawMessage, now time.Time) error {
	if !json.Valid(credential) {
		return fmt.Errorf("%w: passkey credential is not JSON", store.ErrInvalid)
	}
	return s.changePasskey(ctx, userID, id, `UPDATE agentauth_passkeys SET credential = ?, last_used_at = ? WHERE id = ? AND user_id = ?`,
		string(credential), s.d.t(now.UTC().Truncate(time.Microsecond)))
}

// RenamePasskey implements store.Store.
func (s *providerStore) RenamePasskey(ctx context.Context, userID, id, name string) error {
	if err := store.CheckName(name); err != nil {
		return err
	}
	return s.changePasskey(ctx, userID, id, `UPDATE agentauth_passkeys SET name = ? WHERE id = ? AND user_id = ?`, name)
}

// DeletePasskey implements store.Store.
func (s *providerStore) DeletePasskey(ctx context.Context, userID, id string) error {
	return s.changePasskey(ctx, userID, id, `DELETE FROM agentauth_passkeys WHERE id = ? AND user_id = ?`)
}

// UseNonce implements store.Store.
func (s *providerStore) UseNonce(ctx context.Context, key string, expires time.Time) error {
	if key == "" {
		return fmt.Errorf("%w: nonce key is empty", store.ErrInvalid)
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		// A key whose time is up may be used again.
		if _, err := exec(ctx, tx, s.d, `DELETE FROM agentauth_nonces WHERE nonce = ? AND expires_at <= ?`, key, s.d.t(s.stamp())); err != nil {
			return s.dbErr(err)
		}
		_, err := exec(ctx, tx, s.d, `INSERT INTO agentauth_nonces (nonce, expires_at) VALUES (?, ?)`, key, s.d.t(expires.UTC().Truncate(time.Microsecond)))
		if err != nil && s.d.IsUnique(err) {
			return conflict("nonce %q was used", key)
		}
		if err != nil {
			return s.dbErr(err)
		}
		return nil
	})
}
