package sqlstore

// For the tests: the names of two tables and the number of versions.
const (
	MigrationsTable = migrationsTable
	AuditTable      = auditTable
)

var SchemaVersion = len(steps)
