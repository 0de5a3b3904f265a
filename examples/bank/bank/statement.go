package bank

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/core"
)

// Entry is one line of an account's history: money in (positive) or out
// (negative), in the account's currency.
type Entry struct {
	Date         string      `json:"date" format:"date"`
	TransferID   string      `json:"transfer_id"`
	Amount       json.Number `json:"amount"`
	Counterparty string      `json:"counterparty"`
}

// ledgerEntry is an Entry as the store keeps it.
type ledgerEntry struct {
	at           time.Time
	account      string
	transferID   string
	amount       Cents
	counterparty string
}

// demoEntries is the history the demonstration data starts with.
func demoEntries() []ledgerEntry {
	day := func(m time.Month, d int) time.Time { return time.Date(2026, m, d, 12, 0, 0, 0, time.UTC) }
	return []ledgerEntry{
		{day(1, 2), "acc_123", "tr_demo_01", 320000, "Salary"},
		{day(1, 5), "acc_123", "tr_demo_02", -120000, "Rent"},
		{day(1, 19), "acc_123", "tr_demo_03", -4550, "Groceries"},
		{day(2, 2), "acc_123", "tr_demo_04", 320000, "Salary"},
		{day(2, 5), "acc_123", "tr_demo_05", -120000, "Rent"},
		{day(2, 14), "acc_123", "tr_demo_06", -8990, "Restaurant"},
		{day(3, 2), "acc_123", "tr_demo_07", 320000, "Salary"},
		{day(3, 5), "acc_123", "tr_demo_08", -120000, "Rent"},
		{day(1, 31), "acc_124", "tr_demo_09", 50000, "Savings plan"},
		{day(2, 28), "acc_124", "tr_demo_10", 50000, "Savings plan"},
		{day(2, 3), "acc_456", "tr_demo_11", 180000, "Salary"},
	}
}

// record adds the two sides of a transfer to the history. The store's
// lock is held.
func (s *Store) record(t Transfer, source, destination string, at time.Time) {
	s.entries = append(s.entries,
		ledgerEntry{at, source, t.ID, -t.Debited, destination},
		ledgerEntry{at, destination, t.ID, t.Credited, source})
}

// History returns the entries of account id, owned by user, dated from
// from to to (days, inclusive), oldest first, with the account's currency.
func (s *Store) History(_ context.Context, user, id string, from, to time.Time) ([]Entry, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.accounts[id]
	if ok && a.shardDown {
		return nil, "", s.outage(id)
	}
	if !ok || a.Owner != user {
		return nil, "", ErrAccountNotFound
	}
	end := to.AddDate(0, 0, 1)
	out := []Entry{}
	for _, e := range s.entries {
		if e.account == id && !e.at.Before(from) && e.at.Before(end) {
			out = append(out, Entry{Date: e.at.UTC().Format(time.DateOnly), TransferID: e.transferID,
				Amount: json.Number(e.amount.String()), Counterparty: e.counterparty})
		}
	}
	return out, a.Currency, nil
}

// StatementRequest is the input of statement_export.
type StatementRequest struct {
	AccountID string `json:"account_id" minLength:"1" maxLength:"64" description:"The account; it must belong to the user."`
	From      string `json:"from" format:"date" description:"First day, YYYY-MM-DD."`
	To        string `json:"to" format:"date" description:"Last day, YYYY-MM-DD, at most a year after from."`
}

// StatementFile is a statement as a file to download.
type StatementFile struct {
	Name        string `json:"name"`
	ContentType string `json:"content_type" enum:"text/csv"`
	Content     string `json:"content"`
}

// Statement is the output of statement_export: the entries, and the same
// as a CSV file.
type Statement struct {
	AccountID string        `json:"account_id"`
	Currency  string        `json:"currency" enum:"USD,EUR,GBP"`
	From      string        `json:"from"`
	To        string        `json:"to"`
	Entries   []Entry       `json:"entries"`
	File      StatementFile `json:"file"`
}

// StatementSteps is how many parts a statement is built in; each ends
// with a progress report. StatementWork is how long building one takes
// in all (simulated work; tests shorten it).
var (
	StatementSteps = 5
	StatementWork  = 2 * time.Second
)

// StatementExport builds a statement as a job: the agent gets 202 and a
// status_url, and polls it for progress and, at the end, the statement.
var StatementExport = core.MustDefine("statement_export",
	"Build a statement of one of the user's accounts for a date range, as a CSV file. It runs as a job: poll the status_url for progress and the result.",
	statementExport,
	core.WithAsync(),
	core.WithApproval(core.ApprovalSession), core.WithRisk(core.RiskLow),
	core.WithScope("accounts:read"), core.WithTags(TagActsForUser), actsForUserVisible, core.WithReadOnly())

func badDates(msg string) *agentcap.Error { return agentcap.NewError(agentcap.CodeInvalidRequest, msg) }

func statementExport(ctx context.Context, app *App, in StatementRequest) (Statement, error) {
	from, err1 := time.Parse(time.DateOnly, in.From)
	to, err2 := time.Parse(time.DateOnly, in.To)
	switch {
	case err1 != nil || err2 != nil:
		return Statement{}, badDates("from and to must be dates, YYYY-MM-DD")
	case to.Before(from):
		return Statement{}, badDates("to is before from")
	case to.After(from.AddDate(1, 0, 0)):
		return Statement{}, badDates("a statement covers at most a year")
	}
	owned, err := app.Owns(ctx, in.AccountID)
	if err != nil {
		return Statement{}, err
	}
	if !owned {
		return Statement{}, accountNotFound()
	}
	// The ledger is read in parts; each part is slow work that a
	// cancelled job stops.
	steps := max(StatementSteps, 1)
	for i := range steps {
		core.ReportProgress(ctx, core.Progress{Progress: float64(i), Total: float64(steps),
			Message: fmt.Sprintf("reading the ledger, part %d of %d", i+1, steps)})
		t := time.NewTimer(StatementWork / time.Duration(steps))
		select {
		case <-ctx.Done():
			t.Stop()
			return Statement{}, ctx.Err()
		case <-t.C:
		}
	}
	entries, currency, err := app.store.History(ctx, app.User, in.AccountID, from, to)
	if err != nil {
		return Statement{}, ledgerUnavailable(err)
	}
	core.ReportProgress(ctx, core.Progress{Progress: float64(steps), Total: float64(steps), Message: "done"})
	var csv strings.Builder
	csv.WriteString("date,transfer_id,amount,currency,counterparty\n")
	for _, e := range entries {
		fmt.Fprintf(&csv, "%s,%s,%s,%s,%s\n", e.Date, e.TransferID, e.Amount, currency, csvField(e.Counterparty))
	}
	return Statement{
		AccountID: in.AccountID, Currency: currency, From: in.From, To: in.To, Entries: entries,
		File: StatementFile{
			Name:        fmt.Sprintf("statement-%s-%s-%s.csv", in.AccountID, in.From, in.To),
			ContentType: "text/csv",
			Content:     csv.String(),
		},
	}, nil
}

// csvField quotes a field that holds a separator, a quote or a line
// break.
func csvField(s string) string {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
