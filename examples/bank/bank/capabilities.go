package bank

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

// TagActsForUser marks the capabilities that act for a user. The context
// resolver names that user, whose accounts they read (App.Accounts);
// agents without a user
// (autonomous ones) may not call them and do not see them listed.
const TagActsForUser = "acts_for_user"

// Codes of the bank's own errors, answered with the status of the kit's
// code each is declared like.
var (
	// CodeAccountNotFound (404) refuses an account that is not among the
	// user's, or that does not exist.
	CodeAccountNotFound = agentcap.NewCode("account_not_found", agentcap.CodeNotFound)
	// CodeInsufficientFunds (409) refuses a transfer that the source
	// account cannot cover.
	CodeInsufficientFunds = agentcap.NewCode("insufficient_funds", agentcap.CodeConflict)
)

// Currency is a currency code. It accepts any letter case when decoded
// and holds the upper-case code, so "usd" and "USD" are the same currency
// to the handler. A grant that constrains a currency is checked against
// the raw value, so a call whose currency decoding changed is refused
// (agentauth reports it in transformed_fields).
type Currency string

// UnmarshalJSON implements json.Unmarshaler.
func (c *Currency) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("bank: currency must be a string: %w", err)
	}
	up := strings.ToUpper(s)
	if !supported(up) {
		return fmt.Errorf("%w: %q", ErrUnsupported, s)
	}
	*c = Currency(up)
	return nil
}

// NoInput is the input of capabilities without arguments.
type NoInput = core.NoInput

// AccountSummary is one account in a listing. list_accounts answers a
// JSON array of them, [{account_id, name, type, currency}], in account id
// order; a user without accounts gets [].
type AccountSummary struct {
	AccountID string `json:"account_id"`
	Name      string `json:"name"`
	Type      string `json:"type" enum:"checking,savings"`
	Currency  string `json:"currency" enum:"USD,EUR,GBP"`
}

// BalanceQuery is the input of check_balance.
type BalanceQuery struct {
	AccountID string `json:"account_id" minLength:"1" maxLength:"64" description:"The account to read; it must belong to the user."`
}

// Balance is the output of check_balance.
type Balance struct {
	AccountID string      `json:"account_id"`
	Balance   json.Number `json:"balance"`
	Currency  string      `json:"currency" enum:"USD,EUR,GBP"`
}

// TransferRequest is the input of transfer_money.
type TransferRequest struct {
	SourceAccount      string      `json:"source_account"`
	DestinationAccount string      `json:"destination_account"`
	Amount             json.Number `json:"amount"`
	Currency           Currency    `json:"currency"`
}

// TransferResult is the output of transfer_money.
type TransferResult struct {
	TransferID string      `json:"transfer_id"`
	Status     string      `json:"status" enum:"completed"`
	Amount     json.Number `json:"amount"`
	Currency   string      `json:"currency" enum:"USD,EUR,GBP"`
}

// TransferPreview is the preview of transfer_money: the transfer as it
// would be made now, and the balances it would leave. Amounts are in
// the currency each member names.
type TransferPreview struct {
	SourceAccount       string      `json:"source_account" description:"The account debited."`
	DestinationAccount  string      `json:"destination_account" description:"The account credited."`
	Amount              json.Number `json:"amount" description:"The amount sent, in currency."`
	Currency            string      `json:"currency" enum:"USD,EUR,GBP"`
	SourceCurrency      string      `json:"source_currency" enum:"USD,EUR,GBP" description:"The source account's currency."`
	Debit               json.Number `json:"debit" description:"What leaves the source account, in its currency."`
	SourceBalanceAfter  json.Number `json:"source_balance_after" description:"The source account's balance after the transfer."`
	DestinationCurrency string      `json:"destination_currency" enum:"USD,EUR,GBP" description:"The destination account's currency."`
	Credit              json.Number `json:"credit" description:"What reaches the destination account, in its currency."`
	// DestinationBalanceAfter is shown only for a destination that is
	// one of the user's own accounts: another person's balance is
	// theirs to know.
	DestinationBalanceAfter *json.Number `json:"destination_balance_after,omitempty" description:"The destination account's balance after the transfer, when it is one of the user's own accounts."`
}

// RateQuery is the input of exchange_rate.
type RateQuery struct {
	From string `json:"from" enum:"USD,EUR,GBP" description:"Currency to convert from."`
	To   string `json:"to" enum:"USD,EUR,GBP" description:"Currency to convert to."`
}

// RateQuote is the output of exchange_rate.
type RateQuote struct {
	From string      `json:"from"`
	To   string      `json:"to"`
	Rate json.Number `json:"rate"`
}

// transferSchema is written by hand: Currency decodes itself, so its
// JSON form cannot be derived, and amounts need exact cents.
const transferSchema = `{
  "type": "object",
  "properties": {
    "source_account": {"type": "string", "minLength": 1, "maxLength": 64, "description": "The account to debit; it must belong to the user."},
    "destination_account": {"type": "string", "minLength": 1, "maxLength": 64, "description": "The account to credit."},
    "amount": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.01, "description": "The amount to send, in currency, with at most two decimals."},
    "currency": {"type": "string", "pattern": "^(?:[Uu][Ss][Dd]|[Ee][Uu][Rr]|[Gg][Bb][Pp])$", "description": "The currency of amount: USD, EUR or GBP, in any letter case."}
  },
  "required": ["source_account", "destination_account", "amount", "currency"],
  "additionalProperties": false
}`

// actsForUserVisible is the visibility of capabilities that act for a
// user: agents with a user, and hosts linked to one (listing with a host
// JWT before they have an agent), see them. Other agents are admitted
// while they execute, so that they get 403 unauthorized rather than a
// 404 that would suggest a typo.
var actsForUserVisible = core.WithVisibility(func(_ context.Context, id *auth.Identity, executing bool) bool {
	return userOf(id) != "" || executing && agentauth.SessionOf(id) != nil
})

// The bank's capabilities.
var (
	ListAccounts = core.MustDefine("list_accounts",
		"List the user's bank accounts with their type and currency.",
		listAccounts,
		core.WithApproval(core.ApprovalSession), core.WithRisk(core.RiskLow),
		core.WithScope("accounts:read"), core.WithTags(TagActsForUser), actsForUserVisible, core.WithReadOnly())

	CheckBalance = core.MustDefine("check_balance",
		"Read the current balance of one of the user's accounts.",
		checkBalance,
		core.WithApproval(core.ApprovalSession), core.WithRisk(core.RiskLow),
		core.WithScope("accounts:read"), core.WithTags(TagActsForUser), actsForUserVisible, core.WithReadOnly())

	TransferMoney = core.MustDefine("transfer_money",
		"Send money from one of the user's accounts to another account. The amount is in the currency the call names, converted at the bank's fixed rates when the accounts hold another; a grant that limits the amount must therefore limit the currency too. Preview it to see the balances it leaves; every transfer must be confirmed, and one of more than 1000 in the source account's currency by the account's owner.",
		transferMoney,
		core.WithInputSchema([]byte(transferSchema)),
		core.WithPreview(previewTransfer), core.WithConfirmation(), core.WithHumanConfirmation(ownerMustConfirm),
		core.WithApproval(core.ApprovalWebAuthn), core.WithRisk(core.RiskHigh),
		core.WithRequiredConstraints("destination_account"),
		// A bound on the amount means nothing without its currency: "at
		// most 500" lets 500 GBP through, some 635 USD, if the caller
		// picks the currency.
		core.WithUnit("amount", "currency"),
		core.WithScope("payments:write"), core.WithTags(TagActsForUser), actsForUserVisible)

	ExchangeRate = core.MustDefine("exchange_rate",
		"Quote the bank's fixed exchange rate between two currencies (USD, EUR, GBP).",
		exchangeRate,
		core.WithApproval(core.ApprovalNone), core.WithRisk(core.RiskLow),
		core.WithScope("rates:read"), core.WithReadOnly())
)

// Capabilities lists every capability of the bank.
func Capabilities() []core.Definer {
	return []core.Definer{ListAccounts, CheckBalance, TransferMoney, ExchangeRate, StatementExport}
}

func accountNotFound() *agentcap.Error {
	return agentcap.NewError(CodeAccountNotFound, "no such account among the user's accounts")
}

func listAccounts(ctx context.Context, app *App, _ NoInput) ([]AccountSummary, error) {
	accounts, err := app.Accounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]AccountSummary, 0, len(accounts))
	for _, a := range accounts {
		out = append(out, AccountSummary{AccountID: a.ID, Name: a.Name, Type: a.Type, Currency: a.Currency})
	}
	return out, nil
}

func checkBalance(ctx context.Context, app *App, in BalanceQuery) (Balance, error) {
	cents, currency, err := app.store.Balance(ctx, app.User, in.AccountID)
	switch {
	case errors.Is(err, ErrAccountNotFound):
		return Balance{}, accountNotFound()
	case err != nil:
		return Balance{}, ledgerUnavailable(err)
	}
	return Balance{AccountID: in.AccountID, Balance: json.Number(cents.String()), Currency: currency}, nil
}

// transferAmount reads and checks a transfer's amount. The input schema
// admits only positive amounts with at most two decimals; the checks
// stand for calls made in process, which skip it.
func transferAmount(in TransferRequest) (*big.Rat, error) {
	amount, ok := new(big.Rat).SetString(in.Amount.String())
	if !ok || amount.Sign() <= 0 {
		return nil, agentcap.NewError(agentcap.CodeInvalidRequest, "amount must be a positive number")
	}
	if !new(big.Rat).Mul(amount, big.NewRat(100, 1)).IsInt() {
		return nil, agentcap.NewError(agentcap.CodeInvalidRequest, "amount has more than two decimals")
	}
	return amount, nil
}

// transferError answers the ledger's refusals of a transfer, or of its
// quote, in the bank's words.
func transferError(err error) error {
	switch {
	case errors.Is(err, ErrAccountNotFound):
		return agentcap.NewError(CodeAccountNotFound, "no such account")
	case errors.Is(err, ErrInsufficientFunds):
		return agentcap.NewError(CodeInsufficientFunds, "the source account does not hold enough money for this transfer")
	case errors.Is(err, ErrSameAccount):
		return agentcap.NewError(agentcap.CodeInvalidRequest, "the source and destination accounts must differ")
	}
	return ledgerUnavailable(err)
}

func transferMoney(ctx context.Context, app *App, in TransferRequest) (TransferResult, error) {
	amount, err := transferAmount(in)
	if err != nil {
		return TransferResult{}, err
	}
	// The source is checked against the user's accounts, then again by
	// the ledger under its lock.
	owned, err := app.Owns(ctx, in.SourceAccount)
	if err != nil {
		return TransferResult{}, err
	}
	if !owned {
		return TransferResult{}, accountNotFound()
	}
	t, err := app.store.TransferMoney(ctx, app.User, in.SourceAccount, in.DestinationAccount, amount, string(in.Currency))
	if err != nil {
		return TransferResult{}, transferError(err)
	}
	return TransferResult{TransferID: t.ID, Status: "completed", Amount: json.Number(t.Amount.String()), Currency: t.Currency}, nil
}

// HumanThreshold is the largest debit, in cents of the source account's
// currency, that an agent's own confirmation covers: a transfer that
// debits more must be confirmed by the account's owner.
const HumanThreshold Cents = 1000_00

// ownerMustConfirm reports a transfer that debits more than
// HumanThreshold from its source account, converted at the fixed rates.
// A source the user does not own, or an amount the handler would refuse,
// is left to the preview, which refuses it.
func ownerMustConfirm(ctx context.Context, app *App, in TransferRequest) (bool, error) {
	source, owned, err := app.account(ctx, in.SourceAccount)
	if err != nil {
		return false, err
	}
	amount, ok := new(big.Rat).SetString(in.Amount.String())
	if !owned || !ok || amount.Sign() <= 0 {
		return false, nil
	}
	debit, err := convert(amount, string(in.Currency), source.Currency)
	if err != nil {
		return false, nil
	}
	return debit.Cmp(big.NewInt(int64(HumanThreshold))) > 0, nil
}

// previewTransfer works the transfer out without making it: the same
// checks and refusals as transferMoney, and the balances it would leave.
func previewTransfer(ctx context.Context, app *App, in TransferRequest) (TransferPreview, error) {
	amount, err := transferAmount(in)
	if err != nil {
		return TransferPreview{}, err
	}
	owned, err := app.Owns(ctx, in.SourceAccount)
	if err != nil {
		return TransferPreview{}, err
	}
	if !owned {
		return TransferPreview{}, accountNotFound()
	}
	q, err := app.store.QuoteTransfer(ctx, app.User, in.SourceAccount, in.DestinationAccount, amount, string(in.Currency))
	if err != nil {
		return TransferPreview{}, transferError(err)
	}
	p := TransferPreview{
		SourceAccount:       q.Source.ID,
		DestinationAccount:  q.Destination.ID,
		Amount:              json.Number(q.Amount.String()),
		Currency:            q.Currency,
		SourceCurrency:      q.Source.Currency,
		Debit:               json.Number(q.Debited.String()),
		SourceBalanceAfter:  json.Number(q.SourceAfter.String()),
		DestinationCurrency: q.Destination.Currency,
		Credit:              json.Number(q.Credited.String()),
	}
	if q.Destination.Owner == app.User {
		after := json.Number(q.DestinationAfter.String())
		p.DestinationBalanceAfter = &after
	}
	return p, nil
}

// ledgerRetryAfter is how long a caller is asked to wait when the ledger
// is unavailable.
const ledgerRetryAfter = 2 * time.Second

// ledgerUnavailable answers an unreachable ledger 503
// temporarily_unavailable with Retry-After, keeping the cause hidden;
// other errors pass unchanged. The call did not run, or its transaction
// was rolled back, except when the connection broke during its commit.
func ledgerUnavailable(err error) error {
	if !errors.Is(err, ErrLedgerUnavailable) {
		return err
	}
	return agentcap.Unavailable("the ledger is unavailable; retry later", err).WithRetryAfter(ledgerRetryAfter)
}

func exchangeRate(_ context.Context, _ *App, in RateQuery) (RateQuote, error) {
	rate, err := Rate(in.From, in.To)
	if err != nil {
		// The schema's enum admits only supported currencies.
		return RateQuote{}, err
	}
	return RateQuote{From: in.From, To: in.To, Rate: json.Number(rate)}, nil
}
