// Package storetest is the conformance kit of agentcap's stores: one
// suite per store interface, which every backend of that interface must
// pass (the memory stores, sqlstore on SQLite and PostgreSQL, redisstore).
//
//   - [Audit], for an audit.Store: round trips of every field, ids and
//     times filled in, filters, time ranges, cursor pagination newest
//     first, the retention sweep, JSON Lines export, and concurrent
//     writers that lose nothing.
//   - [Confirm], for a confirm.Store: records, atomic consumption,
//     expiry, forgetting, the refusals of a confirm.Manager over the
//     store, and many goroutines consuming one token through two store
//     clients sharing their tokens, of which exactly one wins.
//   - [Idempotency], for an idempotency.Store: claims, answers, releases,
//     expiry, 50 concurrent calls with one key through two stores sharing
//     their keys, of which exactly one runs, and the bound of a scope's
//     live keys, counted across both stores.
//   - [Jobs], for a jobs.Store: the record operations, their
//     compare-and-set races, two managers sharing the records as two
//     instances of one application would, and the counts of an owner's
//     jobs that bound them.
//   - [Provider], for the provider's store.Store: round trips of every
//     record, not-found and conflict errors, compare-and-set transitions,
//     constraint bytes kept as written, the lifetime clocks and sweeps,
//     and concurrent writers that must lose nothing and agree on exactly
//     one winner; [BenchProvider] measures its hot paths.
//   - [Limiter], for a ratelimit.Limiter: the burst then the spacing,
//     independent keys, never more than N calls in any window, many
//     goroutines on one key, and the refusal of invalid limits.
//
// A backend runs the suites of the interfaces it serves from its own
// tests, each subtest on a fresh store:
//
//	func TestAudit(t *testing.T) {
//		storetest.Audit(t, func(t *testing.T) audit.Store { return open(t) })
//	}
//
// The function that opens a store is called once per subtest and must
// return an empty store that the test's cleanup closes and removes.
package storetest
