// Package jobs runs capability calls as jobs: detached from the request
// that started them, each with its own deadline, with records that every
// instance of an application can read. It is transport-neutral; httpx
// builds the Agent Auth async answers on it (202 with a status_url, and
// polling), and other transports can do the same.
//
// # Life of a job
//
// A transport starts a call with [Manager.Call], which runs it in a
// goroutine of its own under a context that keeps the request's values
// but not its cancellation, bounded by Config.Timeout. The transport then
// waits: a call refused before its handler starts (bad input, a refused
// grant) is answered at once like any synchronous call and leaves no
// record; a call whose handler started (for an async capability), or that
// runs longer than the transport wants to wait, is detached with
// [Call.Detach], which writes a pending record. When the call ends its
// outcome is written; a job ends exactly once, whichever of its outcome,
// a cancellation ([Manager.Cancel]) and a lost lease comes first.
//
// # Several instances
//
// A pending job carries the name of the instance running it and a lease
// that the instance renews every Lease/3. Every instance fails jobs whose
// lease ran out with code instance_lost, so a job whose instance died is
// never pending forever. A job cancelled through another instance is
// cancelled here when the lease is next renewed. Finished records are
// kept for Config.Retention, then swept.
//
// # Bounds
//
// A job's record outlives its request by Config.Retention, so what one
// caller may hold is bounded: before a transport starts a call that is to
// be a job it asks [Manager.Admit], which refuses an owner with
// Config.MaxPendingPerOwner jobs running or Config.MaxPerOwner jobs in
// all (8 and 100 by default; httpx answers 429 rate_limited). Calls
// still attached to their request count as running, so a burst through
// one instance cannot pass a bound. A
// result longer than Config.MaxResultBytes (1 MiB) is not kept: the job
// fails with FailureResultTooLarge instead.
//
// # Stores
//
// [MemoryStore] serves one process. Package sqlstore (DB.Jobs) keeps
// records in SQLite or PostgreSQL, where they survive a restart and are
// shared by every instance using the same database; both pass the suite
// storetest.Jobs.
package jobs
