//go:build race

package schema_test

// raceEnabled reports a race-detector build, where sync.Pool drops items
// on purpose and allocation counts mean nothing.
const raceEnabled = true
