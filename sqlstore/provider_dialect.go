package sqlstore

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// providerDialect is what the provider's records differ in between SQLite
// and PostgreSQL.
type providerDialect struct {
	// Name appears in errors.
	Name string
	// Numbered makes placeholders $1, $2, ... instead of ?.
	Numbered bool
	// ForUpdate and ForShare are appended to row-locking selects; empty
	// where a transaction already excludes every other writer.
	ForUpdate, ForShare string
	// UnixMicroTimes stores times as integers (microseconds since the
	// epoch) instead of native timestamps.
	UnixMicroTimes bool
	// SerializeWrites runs one write transaction at a time in this
	// process, for databases with a single writer, so that writers queue
	// on a mutex instead of failing busy.
	SerializeWrites bool
	// PrepareStatements prepares the statements of the hot paths once
	// and reuses them, for drivers that would parse the SQL text of
	// every statement again (SQLite); pgx caches its statements itself.
	PrepareStatements bool
	// DetachReads runs the reads of an agent or a host by id, outside
	// transactions, under a context that is never canceled (the caller's
	// is checked first): for drivers that start a goroutine per statement
	// to watch a cancellable context (modernc.org/sqlite). These reads
	// are point lookups that never wait for a writer (SQLite in WAL
	// mode), so nothing would be interrupted in time anyway.
	DetachReads bool
	// CacheReads keeps the agents and hosts read by id in memory (see
	// readCache), for databases that one process serves (an SQLite
	// file), where this process makes every write.
	CacheReads bool
	// IsUnique reports a unique or primary key violation.
	IsUnique func(error) bool
	// IsForeignKey reports a foreign key violation.
	IsForeignKey func(error) bool
}

var sqliteProvider = &providerDialect{
	Name:              "sqlite",
	UnixMicroTimes:    true,
	SerializeWrites:   true,
	PrepareStatements: true,
	DetachReads:       true,
	CacheReads:        true,
	IsUnique: func(err error) bool {
		return sqliteCode(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
	},
	IsForeignKey: func(err error) bool { return sqliteCode(err, sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY) },
}

var postgresProvider = &providerDialect{
	Name:         "postgres",
	Numbered:     true,
	ForUpdate:    " FOR UPDATE",
	ForShare:     " FOR SHARE",
	IsUnique:     func(err error) bool { return pgCode(err, "23505") },
	IsForeignKey: func(err error) bool { return pgCode(err, "23503") },
}

func sqliteCode(err error, codes ...int) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	for _, c := range codes {
		if se.Code() == c {
			return true
		}
	}
	return false
}

func pgCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// providerMigrations holds the numbered SQL files of the provider's
// schema, one directory per database, as agentauth/store/sqlitestore and
// agentauth/store/pgstore applied them; steps 6 to 10 of the one
// migration set run them.
//
//go:embed provider_migrations
var providerMigrations embed.FS

// providerSQL returns the text of the provider's migration file name for
// the database dir ("sqlite" or "postgres").
func providerSQL(dir, name string) string {
	b, err := fs.ReadFile(providerMigrations, "provider_migrations/"+dir+"/"+name)
	if err != nil {
		// The files are embedded: TestProviderMigrationFiles reads
		// every one.
		panic(err)
	}
	return string(b)
}

// rebind turns ? placeholders into $n where the dialect numbers them. The
// queries of this package hold no ? anywhere else.
func (d *providerDialect) rebind(q string) string {
	if !d.Numbered {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// t converts a time for the database.
func (d *providerDialect) t(t time.Time) any {
	if d.UnixMicroTimes {
		return t.UnixMicro()
	}
	return t.UTC()
}

// tp converts an optional time.
func (d *providerDialect) tp(t *time.Time) any {
	if t == nil {
		return nil
	}
	return d.t(*t)
}

// dbTime scans a time stored either way.
type dbTime struct {
	t     time.Time
	valid bool
}

// Scan implements sql.Scanner.
func (v *dbTime) Scan(src any) error {
	switch s := src.(type) {
	case nil:
		v.valid = false
	case int64:
		v.t, v.valid = time.UnixMicro(s).UTC(), true
	case time.Time:
		v.t, v.valid = s.UTC().Truncate(time.Microsecond), true
	default:
		return fmt.Errorf("sqlstore: cannot read %T as a time", src)
	}
	return nil
}

func (v dbTime) ptr() *time.Time {
	if !v.valid {
		return nil
	}
	t := v.t
	return &t
}

// nullString stores "" as NULL, for unique columns where absence must not
// collide.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
