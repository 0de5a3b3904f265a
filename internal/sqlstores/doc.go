// Package sqlstores gathers, in its subpackages, the code of each SQL
// store on database/sql: auditsql, confirmsql, idemsql and jobsql. Both
// package sqlstore (every store on one database, one migration set) and
// the per-feature packages it replaces (audit/sqlitestore, jobs/pgstore,
// ...) build on them; the schema is up to whichever opens the database.
package sqlstores
