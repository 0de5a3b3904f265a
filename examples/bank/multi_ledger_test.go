//go:build multiinstance

package main_test

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ledgerRow is a row of bank_transfers.
type ledgerRow struct {
	id, source, destination string
	amount                  int64
}

// ledgerState is what the invariants of transfers compare: every
// transfer in the ledger and the total of all balances.
type ledgerState struct {
	rows  map[string]ledgerRow
	total int64
}

func readLedger(ctx context.Context, db *pgx.Conn) (ledgerState, error) {
	st := ledgerState{rows: map[string]ledgerRow{}}
	rows, err := db.Query(ctx, `SELECT id, source, destination, amount FROM bank_transfers`)
	if err != nil {
		return st, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledgerRow, error) {
		var l ledgerRow
		err := r.Scan(&l.id, &l.source, &l.destination, &l.amount)
		return l, err
	})
	if err != nil {
		return st, err
	}
	for _, l := range list {
		st.rows[l.id] = l
	}
	// Transfers between accounts of one currency leave the total as it
	// was; the harness makes no other kind.
	err = db.QueryRow(ctx, `SELECT coalesce(sum(balance), 0) FROM bank_accounts`).Scan(&st.total)
	return st, err
}

// checkTransfers holds the ledger after the transfers trs to the
// invariants, against the ledger before them, and returns every
// violation, naming the transfers and ledger rows concerned:
//
//   - the total of all balances is what it was;
//   - an acknowledged transfer is in the ledger exactly once, under the
//     id its answer gave;
//   - a refused transfer is not in it;
//   - an uncertain one is in it at most once;
//   - no transfer is in it that the harness did not ask for.
func checkTransfers(before, after ledgerState, trs []*transfer) []string {
	var bad []string
	if after.total != before.total {
		bad = append(bad, fmt.Sprintf("the total of all balances moved from %d to %d cents", before.total, after.total))
	}
	type key struct {
		source string
		amount int64
	}
	fresh := map[key][]ledgerRow{}
	for id, r := range after.rows {
		if _, old := before.rows[id]; !old {
			fresh[key{r.source, r.amount}] = append(fresh[key{r.source, r.amount}], r)
		}
	}
	for _, tr := range trs {
		k := key{tr.from, tr.cents}
		rows := fresh[k]
		delete(fresh, k)
		switch tr.outcome {
		case "acked":
			if len(rows) != 1 || rows[0].id != tr.transferID || rows[0].destination != tr.to {
				bad = append(bad, fmt.Sprintf("%s acknowledged as %s is in the ledger as %v", tr, tr.transferID, rows))
			}
		case "refused":
			if len(rows) != 0 {
				bad = append(bad, fmt.Sprintf("%s refused (%s) is in the ledger as %v", tr, tr.note, rows))
			}
		case "uncertain":
			if len(rows) > 1 {
				bad = append(bad, fmt.Sprintf("%s (uncertain: %s) is in the ledger %d times: %v", tr, tr.note, len(rows), rows))
			}
		default:
			bad = append(bad, fmt.Sprintf("%s has no outcome", tr))
		}
	}
	for _, rows := range fresh {
		for _, r := range rows {
			bad = append(bad, fmt.Sprintf("ledger row %s (%s -> %s, %d cents) matches no transfer the harness asked for", r.id, r.source, r.destination, r.amount))
		}
	}
	return bad
}
