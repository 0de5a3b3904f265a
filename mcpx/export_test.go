package mcpx

// Defaults of Config, for the tests of package mcpx_test.
const (
	DefaultStreamlessTimeout   = defaultStreamlessTimeout
	DefaultMaxSessionsPerOwner = defaultMaxSessionsPerOwner
)
