package bank

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrLedgerUnavailable wraps the errors of a ledger that cannot be
// reached (connection refused or lost, database restarting): the call
// may be tried again later. Capabilities answer it 503
// temporarily_unavailable.
var ErrLedgerUnavailable = errors.New("bank: ledger unavailable")

// PGLedger keeps the bank's accounts, balances and history in
// PostgreSQL, in the tables bank_accounts, bank_transfers and
// bank_entries of the connection's current schema, so that every
// instance sharing the database moves the same money. A transfer is one
// transaction that locks both accounts (in id order, so that two
// transfers in opposite directions cannot deadlock).
type PGLedger struct {
	pool *pgxpool.Pool
}

var _ Ledger = (*PGLedger)(nil)

const pgLedgerSchema = `
CREATE TABLE IF NOT EXISTS bank_accounts (
	id text PRIMARY KEY,
	owner text NOT NULL,
	name text NOT NULL,
	type text NOT NULL,
	currency text NOT NULL,
	balance bigint NOT NULL CHECK (balance >= 0),
	shard_down boolean NOT NULL DEFAULT false
);
CREATE INDEX IF NOT EXISTS bank_accounts_owner ON bank_accounts (owner);
CREATE SEQUENCE IF NOT EXISTS bank_transfer_seq;
CREATE TABLE IF NOT EXISTS bank_transfers (
	id text PRIMARY KEY,
	owner text NOT NULL,
	source text NOT NULL REFERENCES bank_accounts (id),
	destination text NOT NULL REFERENCES bank_accounts (id),
	amount bigint NOT NULL,
	currency text NOT NULL,
	debited bigint NOT NULL,
	credited bigint NOT NULL,
	at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS bank_entries (
	seq bigserial PRIMARY KEY,
	at timestamptz NOT NULL,
	account text NOT NULL REFERENCES bank_accounts (id),
	transfer_id text NOT NULL,
	amount bigint NOT NULL,
	counterparty text NOT NULL
);
CREATE INDEX IF NOT EXISTS bank_entries_account ON bank_entries (account, at);
`

// NewPGLedger creates the bank's tables in pool's database when they are
// missing and, when bank_accounts is empty, adds the demonstration data
// of NewStore. Instances starting together do this once, under an
// advisory lock. The pool stays the caller's.
func NewPGLedger(ctx context.Context, pool *pgxpool.Pool) (*PGLedger, error) {
	if pool == nil {
		return nil, errors.New("bank: nil pool")
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('agentcap.bank.ledger.' || current_schema()))`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, pgLedgerSchema); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM bank_accounts`).Scan(&n); err != nil || n > 0 {
			return err
		}
		for _, a := range demoAccounts() {
			if _, err := tx.Exec(ctx, `INSERT INTO bank_accounts (id, owner, name, type, currency, balance, shard_down) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				a.ID, a.Owner, a.Name, a.Type, a.Currency, int64(a.balance), a.shardDown); err != nil {
				return err
			}
		}
		for _, e := range demoEntries() {
			if _, err := tx.Exec(ctx, `INSERT INTO bank_entries (at, account, transfer_id, amount, counterparty) VALUES ($1, $2, $3, $4, $5)`,
				e.at, e.account, e.transferID, int64(e.amount), e.counterparty); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, ledgerError("setting up the ledger", err)
	}
	return &PGLedger{pool: pool}, nil
}

// ledgerError wraps err from PostgreSQL, marking the ones that say the
// database could not be reached or is going away as ErrLedgerUnavailable.
func ledgerError(what string, err error) error {
	if unavailable(err) {
		return fmt.Errorf("bank: %s: %w: %w", what, ErrLedgerUnavailable, err)
	}
	return fmt.Errorf("bank: %s: %w", what, err)
}

// unavailable reports an error of a database that is unreachable or
// refusing work for a while, as opposed to one about the query: no
// answer from the server at all, or an answer of SQLSTATE class 08
// (connection exception), 53 (insufficient resources) or 57 (operator
// intervention: shutting down, starting up).
func unavailable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "53") || strings.HasPrefix(pe.Code, "57")
	}
	return true
}

// AccountsOf implements Ledger.
func (l *PGLedger) AccountsOf(ctx context.Context, user string) ([]Account, error) {
	rows, err := l.pool.Query(ctx, `SELECT id, owner, name, type, currency FROM bank_accounts WHERE owner = $1 ORDER BY id`, user)
	if err != nil {
		return nil, ledgerError("reading accounts", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Account, error) {
		var a Account
		err := r.Scan(&a.ID, &a.Owner, &a.Name, &a.Type, &a.Currency)
		return a, err
	})
	if err != nil {
		return nil, ledgerError("reading accounts", err)
	}
	return out, nil
}

// account reads account id with q, locking it when lock is set. A
// missing account is ok false.
func account(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id string, lock bool) (a ledgerAccount, ok bool, err error) {
	query := `SELECT id, owner, name, type, currency, balance, shard_down FROM bank_accounts WHERE id = $1`
	if lock {
		query += ` FOR UPDATE`
	}
	var bal int64
	err = q.QueryRow(ctx, query, id).Scan(&a.ID, &a.Owner, &a.Name, &a.Type, &a.Currency, &bal, &a.shardDown)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, false, nil
	}
	if err != nil {
		return a, false, ledgerError("reading account", err)
	}
	a.balance = Cents(bal)
	return a, true, nil
}

// Balance implements Ledger.
func (l *PGLedger) Balance(ctx context.Context, user, id string) (Cents, string, error) {
	a, ok, err := account(ctx, l.pool, id, false)
	if err != nil {
		return 0, "", err
	}
	if ok && a.shardDown {
		return 0, "", shardOutage(id, demoLedgerDSN)
	}
	if !ok || a.Owner != user {
		return 0, "", ErrAccountNotFound
	}
	return a.balance, a.Currency, nil
}

// TransferMoney implements Ledger, as Store.TransferMoney does, in one
// transaction.
func (l *PGLedger) TransferMoney(ctx context.Context, user, source, destination string, amount *big.Rat, currency string) (Transfer, error) {
	if amount.Sign() <= 0 {
		return Transfer{}, fmt.Errorf("bank: transfer amount %s is not positive", amount.FloatString(2))
	}
	if source == destination {
		return Transfer{}, ErrSameAccount
	}
	var (
		t     Transfer
		inner error
	)
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		t, inner = transferTx(ctx, tx, user, source, destination, amount, currency)
		return inner
	})
	switch {
	case inner != nil:
		return Transfer{}, inner
	case err != nil:
		// BEGIN or COMMIT failed. A COMMIT whose connection broke may
		// have been applied: the caller cannot tell, as with any
		// database.
		return Transfer{}, ledgerError("transfer", err)
	}
	return t, nil
}

// transferTx is TransferMoney's transaction.
func transferTx(ctx context.Context, tx pgx.Tx, user, source, destination string, amount *big.Rat, currency string) (Transfer, error) {
	// Lock in id order, whatever the direction of the transfer.
	first, second := source, destination
	if second < first {
		first, second = second, first
	}
	locked := map[string]ledgerAccount{}
	for _, id := range []string{first, second} {
		a, ok, err := account(ctx, tx, id, true)
		if err != nil {
			return Transfer{}, err
		}
		if ok {
			locked[id] = a
		}
	}
	q, err := plan(user, lockedAccount(locked, source), lockedAccount(locked, destination), source, destination, amount, currency, demoLedgerDSN)
	if err != nil {
		return Transfer{}, err
	}
	var n int64
	if err := tx.QueryRow(ctx, `SELECT nextval('bank_transfer_seq')`).Scan(&n); err != nil {
		return Transfer{}, ledgerError("numbering the transfer", err)
	}
	at := time.Now().UTC()
	t := q.transfer(transferID(n))
	batch := &pgx.Batch{}
	batch.Queue(`UPDATE bank_accounts SET balance = balance - $2 WHERE id = $1`, source, int64(t.Debited))
	batch.Queue(`UPDATE bank_accounts SET balance = balance + $2 WHERE id = $1`, destination, int64(t.Credited))
	batch.Queue(`INSERT INTO bank_transfers (id, owner, source, destination, amount, currency, debited, credited, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		t.ID, user, source, destination, int64(t.Amount), currency, int64(t.Debited), int64(t.Credited), at)
	batch.Queue(`INSERT INTO bank_entries (at, account, transfer_id, amount, counterparty) VALUES ($1, $2, $3, $4, $5), ($1, $6, $3, $7, $8)`,
		at, source, t.ID, -int64(t.Debited), destination, destination, int64(t.Credited), source)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return Transfer{}, ledgerError("recording the transfer", err)
	}
	return t, nil
}

// lockedAccount returns the account id of m, nil when missing.
func lockedAccount(m map[string]ledgerAccount, id string) *ledgerAccount {
	if a, ok := m[id]; ok {
		return &a
	}
	return nil
}

// QuoteTransfer implements Ledger: it reads both accounts without
// locking them, so a transfer made in between can change the outcome.
func (l *PGLedger) QuoteTransfer(ctx context.Context, user, source, destination string, amount *big.Rat, currency string) (Quote, error) {
	read := map[string]ledgerAccount{}
	for _, id := range []string{source, destination} {
		a, ok, err := account(ctx, l.pool, id, false)
		if err != nil {
			return Quote{}, err
		}
		if ok {
			read[id] = a
		}
	}
	return plan(user, lockedAccount(read, source), lockedAccount(read, destination), source, destination, amount, currency, demoLedgerDSN)
}

// History implements Ledger.
func (l *PGLedger) History(ctx context.Context, user, id string, from, to time.Time) ([]Entry, string, error) {
	a, ok, err := account(ctx, l.pool, id, false)
	if err != nil {
		return nil, "", err
	}
	if ok && a.shardDown {
		return nil, "", shardOutage(id, demoLedgerDSN)
	}
	if !ok || a.Owner != user {
		return nil, "", ErrAccountNotFound
	}
	rows, err := l.pool.Query(ctx, `SELECT at, transfer_id, amount, counterparty FROM bank_entries
		WHERE account = $1 AND at >= $2 AND at < $3 ORDER BY at, seq`, id, from, to.AddDate(0, 0, 1))
	if err != nil {
		return nil, "", ledgerError("reading history", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Entry, error) {
		var (
			at  time.Time
			e   Entry
			amt int64
		)
		err := r.Scan(&at, &e.TransferID, &amt, &e.Counterparty)
		e.Date = at.UTC().Format(time.DateOnly)
		e.Amount = json.Number(Cents(amt).String())
		return e, err
	})
	if err != nil {
		return nil, "", ledgerError("reading history", err)
	}
	return out, a.Currency, nil
}
