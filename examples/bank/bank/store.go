package bank

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"time"
)

// Errors of the Store. Capabilities turn them into public errors; the
// ledger outage never leaves the server.
var (
	ErrAccountNotFound   = errors.New("bank: account not found")
	ErrInsufficientFunds = errors.New("bank: insufficient funds")
	ErrSameAccount       = errors.New("bank: source and destination are the same account")
	ErrUnsupported       = errors.New("bank: unsupported currency")
)

// Currencies the bank holds and converts between.
const (
	USD = "USD"
	EUR = "EUR"
	GBP = "GBP"
)

// Account types.
const (
	Checking = "checking"
	Savings  = "savings"
)

// Account describes an account, without its balance.
type Account struct {
	ID       string
	Owner    string
	Name     string
	Type     string
	Currency string
}

// Cents is an amount in hundredths of a currency unit. Money is kept in
// integers so that no amount is ever rounded by floating point.
type Cents int64

// String formats c as a decimal without trailing zeros: 500000 is
// "5000", 120050 is "1200.5", 5 is "0.05".
func (c Cents) String() string {
	neg := c < 0
	u := uint64(c)
	if neg {
		u = -u
	}
	s := fmt.Sprintf("%d.%02d", u/100, u%100)
	s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	if neg {
		s = "-" + s
	}
	return s
}

// Transfer is a completed transfer.
type Transfer struct {
	ID       string
	Amount   Cents
	Currency string
	// Debited is what left the source account, in its currency; Credited
	// is what reached the destination, in its currency.
	Debited, Credited Cents
}

// ledgerAccount is an account with its balance.
type ledgerAccount struct {
	Account
	balance Cents
	// shardDown makes the ledger shard holding the account unreachable.
	shardDown bool
}

// Ledger keeps the bank's accounts, balances and history. Store keeps
// them in memory for one instance, PGLedger in PostgreSQL for several.
type Ledger interface {
	// AccountsOf returns the accounts owned by user, in id order.
	AccountsOf(ctx context.Context, user string) ([]Account, error)
	// Balance reads the balance and currency of account id owned by
	// user; an unknown account, or one that user does not own, is
	// ErrAccountNotFound.
	Balance(ctx context.Context, user, id string) (Cents, string, error)
	// TransferMoney moves amount, in currency, from source (which user
	// must own) to destination, converting at the fixed rates.
	TransferMoney(ctx context.Context, user, source, destination string, amount *big.Rat, currency string) (Transfer, error)
	// QuoteTransfer works a transfer out as TransferMoney would make
	// it, with the same checks and errors, and moves nothing.
	QuoteTransfer(ctx context.Context, user, source, destination string, amount *big.Rat, currency string) (Quote, error)
	// History returns the entries of account id, owned by user, dated
	// from from to to (days, inclusive), oldest first, with the
	// account's currency.
	History(ctx context.Context, user, id string, from, to time.Time) ([]Entry, string, error)
}

var _ Ledger = (*Store)(nil)

// Store holds accounts and balances in memory, safe for concurrent use.
// It stands in for the bank's account database and its ledger.
type Store struct {
	mu       sync.Mutex
	accounts map[string]*ledgerAccount
	seq      int
	// ledgerDSN is what a ledger driver puts in its errors: a secret that
	// must never reach a caller.
	ledgerDSN string
	// entries is the history statements are built from.
	entries []ledgerEntry
}

// NewStore returns a store with the demonstration data: user_alice owns
// acc_123 (checking, 5000.00 USD) and acc_124 (savings, 1200.00 EUR),
// user_bob owns acc_456 (checking, 300.00 USD), and acc_999 lives on a
// ledger shard that cannot be reached.
func NewStore() *Store {
	s := &Store{
		accounts:  make(map[string]*ledgerAccount),
		ledgerDSN: demoLedgerDSN,
		entries:   demoEntries(),
	}
	for _, a := range demoAccounts() {
		s.accounts[a.ID] = &a
	}
	return s
}

// demoLedgerDSN is the connection string the unreachable shard's errors
// quote.
const demoLedgerDSN = "postgres://ledger:s3cret@ledger-db.internal:5432/bank"

// demoAccounts are the accounts the demonstration data starts with.
func demoAccounts() []ledgerAccount {
	return []ledgerAccount{
		{Account: Account{ID: "acc_123", Owner: "user_alice", Name: "Everyday checking", Type: Checking, Currency: USD}, balance: 500000},
		{Account: Account{ID: "acc_124", Owner: "user_alice", Name: "Rainy day savings", Type: Savings, Currency: EUR}, balance: 120000},
		{Account: Account{ID: "acc_456", Owner: "user_bob", Name: "Main checking", Type: Checking, Currency: USD}, balance: 30000},
		{Account: Account{ID: "acc_999", Owner: "user_carol", Name: "Archived checking", Type: Checking, Currency: USD}, balance: 100, shardDown: true},
	}
}

// AccountsOf returns the accounts owned by user, in id order. It reads
// the account directory, not the ledger, so it works during an outage.
func (s *Store) AccountsOf(_ context.Context, user string) ([]Account, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Account
	for _, a := range s.accounts {
		if a.Owner == user {
			out = append(out, a.Account)
		}
	}
	slices.SortFunc(out, func(a, b Account) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Balance reads the balance of account id owned by user from the ledger.
// An unknown account, or one that user does not own, is
// ErrAccountNotFound.
func (s *Store) Balance(_ context.Context, user, id string) (Cents, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.accounts[id]
	// The ledger is read with one query routed by account id and filtered
	// by owner, so an unreachable shard fails before ownership is known.
	if ok && a.shardDown {
		return 0, "", s.outage(id)
	}
	if !ok || a.Owner != user {
		return 0, "", ErrAccountNotFound
	}
	return a.balance, a.Currency, nil
}

// TransferMoney moves amount, in currency, from source (which user must
// own) to destination, converting at the fixed rates when the accounts
// hold other currencies. Amounts that do not fit the ledger are
// ErrInsufficientFunds: no account holds that much.
func (s *Store) TransferMoney(_ context.Context, user, source, destination string, amount *big.Rat, currency string) (Transfer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.quote(user, source, destination, amount, currency)
	if err != nil {
		return Transfer{}, err
	}
	s.accounts[source].balance = q.SourceAfter
	s.accounts[destination].balance = q.DestinationAfter
	s.seq++
	t := q.transfer(transferID(int64(s.seq)))
	s.record(t, source, destination, time.Now())
	return t, nil
}

// QuoteTransfer implements Ledger.
func (s *Store) QuoteTransfer(_ context.Context, user, source, destination string, amount *big.Rat, currency string) (Quote, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.quote(user, source, destination, amount, currency)
}

// quote works a transfer out under s.mu.
func (s *Store) quote(user, source, destination string, amount *big.Rat, currency string) (Quote, error) {
	find := func(id string) *ledgerAccount {
		if a, ok := s.accounts[id]; ok {
			return a
		}
		return nil
	}
	return plan(user, find(source), find(destination), source, destination, amount, currency, s.ledgerDSN)
}

// Quote is a transfer worked out and not made: what it moves and the
// balances it leaves.
type Quote struct {
	// Amount is the amount sent, in Currency.
	Amount   Cents
	Currency string
	// Source and Destination are the two accounts.
	Source, Destination Account
	// Debited leaves the source, in its currency; Credited reaches the
	// destination, in its currency.
	Debited, Credited Cents
	// SourceAfter and DestinationAfter are the balances the transfer
	// leaves.
	SourceAfter, DestinationAfter Cents
}

func (q Quote) transfer(id string) Transfer {
	return Transfer{ID: id, Amount: q.Amount, Currency: q.Currency, Debited: q.Debited, Credited: q.Credited}
}

// plan checks a transfer of amount, in currency, from src (which user
// must own) to dst, either nil when missing, and works it out. Every
// ledger runs it on the accounts as it holds them (locked, for a
// transfer), so that a quote and a transfer refuse alike.
func plan(user string, src, dst *ledgerAccount, source, destination string, amount *big.Rat, currency, dsn string) (Quote, error) {
	if amount.Sign() <= 0 {
		return Quote{}, fmt.Errorf("bank: transfer amount %s is not positive", amount.FloatString(2))
	}
	if src == nil || src.Owner != user {
		return Quote{}, fmt.Errorf("source %q: %w", source, ErrAccountNotFound)
	}
	if dst == nil {
		return Quote{}, fmt.Errorf("destination %q: %w", destination, ErrAccountNotFound)
	}
	if src.ID == dst.ID {
		return Quote{}, ErrSameAccount
	}
	for _, a := range []*ledgerAccount{src, dst} {
		if a.shardDown {
			return Quote{}, shardOutage(a.ID, dsn)
		}
	}
	amt, debit, credit, err := price(amount, currency, src.Currency, dst.Currency)
	if err != nil {
		return Quote{}, err
	}
	if debit > src.balance {
		return Quote{}, ErrInsufficientFunds
	}
	return Quote{
		Amount: amt, Currency: currency,
		Source: src.Account, Destination: dst.Account,
		Debited: debit, Credited: credit,
		SourceAfter: src.balance - debit, DestinationAfter: dst.balance + credit,
	}, nil
}

// outage is the error a ledger driver gives for an unreachable shard. Its
// text carries the connection string, as real drivers' errors often do.
func (s *Store) outage(id string) error {
	return shardOutage(id, s.ledgerDSN)
}

func shardOutage(id, dsn string) error {
	return fmt.Errorf("bank: ledger query for %s: dial %s: connection refused", id, dsn)
}

// transferID formats the n-th transfer's id.
func transferID(n int64) string { return fmt.Sprintf("tr_%06d", n) }

// price checks a transfer of amount in currency from an account holding
// from to one holding to, and returns the amount, the debit and the
// credit in cents of their currencies. An amount too large for the
// ledger is ErrInsufficientFunds: no account holds that much.
func price(amount *big.Rat, currency, from, to string) (amt, debit, credit Cents, err error) {
	scaled := new(big.Rat).Mul(amount, big.NewRat(100, 1))
	if !scaled.IsInt() {
		return 0, 0, 0, fmt.Errorf("bank: transfer amount %s is not a whole number of cents", amount.RatString())
	}
	if !scaled.Num().IsInt64() {
		return 0, 0, 0, ErrInsufficientFunds
	}
	d, err := convert(amount, currency, from)
	if err != nil {
		return 0, 0, 0, err
	}
	c, err := convert(amount, currency, to)
	if err != nil {
		return 0, 0, 0, err
	}
	// A conversion can make an amount larger (GBP to USD); one that
	// leaves int64 is more than any account holds.
	if !d.IsInt64() || !c.IsInt64() {
		return 0, 0, 0, ErrInsufficientFunds
	}
	return Cents(scaled.Num().Int64()), Cents(d.Int64()), Cents(c.Int64()), nil
}

// rates are the fixed exchange rates, as exact decimals: one unit of the
// first currency buys rate units of the second.
var rates = map[[2]string]string{
	{USD, EUR}: "0.92", {EUR, USD}: "1.09",
	{USD, GBP}: "0.79", {GBP, USD}: "1.27",
	{EUR, GBP}: "0.86", {GBP, EUR}: "1.16",
}

// Rate returns the fixed rate from one currency to another, as decimal
// text.
func Rate(from, to string) (string, error) {
	if !supported(from) || !supported(to) {
		return "", fmt.Errorf("%w: %s to %s", ErrUnsupported, from, to)
	}
	if from == to {
		return "1", nil
	}
	return rates[[2]string{from, to}], nil
}

func supported(c string) bool { return c == USD || c == EUR || c == GBP }

// convert returns amount (in from) in cents of to, rounded half away from
// zero.
func convert(amount *big.Rat, from, to string) (*big.Int, error) {
	rate, err := Rate(from, to)
	if err != nil {
		return nil, err
	}
	r, _ := new(big.Rat).SetString(rate)
	v := new(big.Rat).Mul(amount, r)
	v.Mul(v, big.NewRat(100, 1))
	// Round half away from zero: add one half, then truncate.
	num := new(big.Int).Mul(v.Num(), big.NewInt(2))
	num.Add(num, v.Denom())
	den := new(big.Int).Mul(v.Denom(), big.NewInt(2))
	return num.Quo(num, den), nil
}
