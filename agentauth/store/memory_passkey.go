package store

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// CheckPasskey refuses a passkey that cannot be stored: one without an
// id, a user, a user handle or a credential, or with text that cannot be
// stored unchanged.
func CheckPasskey(p *Passkey) error {
	switch {
	case p.ID == "":
		return invalid("passkey id is empty")
	case p.UserID == "":
		return invalid("user id is empty")
	case p.UserHandle == "":
		return invalid("passkey user handle is empty")
	case !json.Valid(p.Credential):
		return invalid("passkey credential is not JSON")
	}
	if err := checkText(p.ID, p.UserID, p.UserHandle, p.Name); err != nil {
		return invalid("passkey: %v", err)
	}
	return nil
}

func clonePasskey(p *Passkey) *Passkey {
	c := *p
	c.Credential = slices.Clone(p.Credential)
	c.LastUsedAt = normTimePtr(p.LastUsedAt)
	return &c
}

// CreatePasskey implements Store.
func (m *memory) CreatePasskey(ctx context.Context, p *Passkey) error {
	if err := CheckPasskey(p); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return err
	}
	if _, ok := m.passkeys[p.ID]; ok {
		return conflict("passkey %q exists", p.ID)
	}
	c := clonePasskey(p)
	if c.CreatedAt.IsZero() {
		c.CreatedAt = m.now()
	}
	c.CreatedAt = normTime(c.CreatedAt)
	m.passkeys[p.ID] = c
	p.CreatedAt = c.CreatedAt
	return nil
}

// ListPasskeys implements Store.
func (m *memory) ListPasskeys(ctx context.Context, userID string) ([]*Passkey, error) {
	out := []*Passkey{}
	err := m.forUser(ctx, userID, func() {
		for _, p := range m.passkeys {
			if p.UserID == userID {
				out = append(out, clonePasskey(p))
			}
		}
	})
	slices.SortFunc(out, func(a, b *Passkey) int { return compareCreated(a.CreatedAt, b.CreatedAt, a.ID, b.ID) })
	return out, err
}

// userPasskey changes the user's passkey id under the write lock.
func (m *memory) userPasskey(ctx context.Context, userID, id string, change func(p *Passkey)) error {
	if err := CheckUserID(userID); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return err
	}
	p, ok := m.passkeys[id]
	if !ok || p.UserID != userID {
		return notFound("passkey", id)
	}
	change(p)
	return nil
}

// UsePasskey implements Store.
func (m *memory) UsePasskey(ctx context.Context, userID, id string, credential json.RawMessage, now time.Time) error {
	if !json.Valid(credential) {
		return invalid("passkey credential is not JSON")
	}
	return m.userPasskey(ctx, userID, id, func(p *Passkey) {
		t := normTime(now)
		p.Credential, p.LastUsedAt = slices.Clone(credential), &t
	})
}

// RenamePasskey implements Store.
func (m *memory) RenamePasskey(ctx context.Context, userID, id, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	return m.userPasskey(ctx, userID, id, func(p *Passkey) { p.Name = name })
}

// DeletePasskey implements Store.
func (m *memory) DeletePasskey(ctx context.Context, userID, id string) error {
	return m.userPasskey(ctx, userID, id, func(p *Passkey) { delete(m.passkeys, p.ID) })
}

// UseNonce implements Store.
func (m *memory) UseNonce(ctx context.Context, key string, expires time.Time) error {
	if key == "" {
		return invalid("nonce key is empty")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx); err != nil {
		return err
	}
	if exp, ok := m.nonces[key]; ok && m.now().Before(exp) {
		return conflict("nonce %q was used", key)
	}
	m.nonces[key] = normTime(expires)
	return nil
}
