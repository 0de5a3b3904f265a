package sqlutil_test

import (
	"testing"

	"github.com/agentcap/agentcap/internal/sqlutil"
)

func TestNumber(t *testing.T) {
	if got := sqlutil.Number(`UPDATE t SET a = ?, b = ? WHERE c = ?`); got != `UPDATE t SET a = $1, b = $2 WHERE c = $3` {
		t.Errorf("got %q", got)
	}
}

func TestSQLiteDSN(t *testing.T) {
	for _, bad := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro"} {
		if _, err := sqlutil.SQLiteDSN(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	dsn, err := sqlutil.SQLiteDSN("/tmp/app.db")
	if err != nil || dsn != "/tmp/app.db?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)" {
		t.Errorf("%q %v", dsn, err)
	}
}
