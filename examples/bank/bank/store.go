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
		ledgerDSN: "postgres://ledger:s3cret@ledger-db.internal:5432/bank",
		entries:   demoEntries(),
	}
	for _, a := range []ledgerAccount{
		{Account: Account{ID: "acc_123", Owner: "user_alice", Name: "Everyday checking", Type: Checking, Currency: USD}, balance: 500000},
		{Account: Account{ID: "acc_124", Owner: "user_alice", Name: "Rainy day savings", Type: Savings, Currency: EUR}, balance: 120000},
		{Account: Account{ID: "acc_456", Owner: "user_bob", Name: "Main checking", Type: Checking, Currency: USD}, balance: 30000},
		{Account: Account{ID: "acc_999", Owner: "user_carol", Name: "Archived checking", Type: Checking, Currency: USD}, balance: 100, shardDown: true},
	} {
		s.accounts[a.ID] = &a
	}
	return s
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
	if amount.Sign() <= 0 {
		return Transfer{}, fmt.Errorf("bank: transfer amount %s is not positive", amount.FloatString(2))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	src, ok := s.accounts[source]
	if !ok || src.Owner != user {
		return Transfer{}, fmt.Errorf("source %q: %w", source, ErrAccountNotFound)
	}
	dst, ok := s.accounts[destination]
	if !ok {
		return Transfer{}, fmt.Errorf("destination %q: %w", destination, ErrAccountNotFound)
	}
	if src.ID == dst.ID {
		return Transfer{}, ErrSameAccount
	}
	for _, a := range []*ledgerAccount{src, dst} {
		if a.shardDown {
			return Transfer{}, s.outage(a.ID)
		}
	}
	scaled := new(big.Rat).Mul(amount, big.NewRat(100, 1))
	if !scaled.IsInt() {
		return Transfer{}, fmt.Errorf("bank: transfer amount %s is not a whole number of cents", amount.RatString())
	}
	if !scaled.Num().IsInt64() {
		return Transfer{}, ErrInsufficientFunds
	}
	amt := Cents(scaled.Num().Int64())
	debit, err := convert(amount, currency, src.Currency)
	if err != nil {
		return Transfer{}, err
	}
	credit, err := convert(amount, currency, dst.Currency)
	if err != nil {
		return Transfer{}, err
	}
	if debit.Cmp(big.NewInt(int64(src.balance))) > 0 {
		return Transfer{}, ErrInsufficientFunds
	}
	// The debit fits the source balance, so it and the credit (at most a
	// few times larger) fit in an int64.
	src.balance -= Cents(debit.Int64())
	dst.balance += Cents(credit.Int64())
	s.seq++
	t := Transfer{
		ID:       fmt.Sprintf("tr_%06d", s.seq),
		Amount:   amt,
		Currency: currency,
		Debited:  Cents(debit.Int64()),
		Credited: Cents(credit.Int64()),
	}
	s.record(t, src.ID, dst.ID, time.Now())
	return t, nil
}

// outage is the error a ledger driver gives for an unreachable shard. Its
// text carries the connection string, as real drivers' errors often do.
func (s *Store) outage(id string) error {
	return fmt.Errorf("bank: ledger query for %s: dial %s: connection refused", id, s.ledgerDSN)
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
