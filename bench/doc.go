// Package bench measures the cost of serving a capability through the
// agentcap HTTP mounts (net/http, Gin, Echo, Fiber) against the same
// operation written by hand in each framework and against huma on
// net/http.
//
// It is a module of its own so that the library never depends on huma or
// on anything else a comparison needs. The package holds no code: the
// benchmarks and the tests that keep them honest live in its _test files.
// Run them with
//
//	go test -run '^$' -bench . -benchmem -count=8
//
// and see BENCHMARKS.md at the repository root for figures.
//
// The library is required through a replace directive pointing at the
// parent directory, so its requirements are part of this module's graph:
// when the library's go.mod changes a version, run go mod tidy here as
// well, or the go command refuses to build this module.
package bench
