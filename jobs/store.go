package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentcap/agentcap/core"
)

// State is a job's state. A job starts pending and ends completed or
// failed; it never leaves a final state.
type State string

// Job states, as the Agent Auth async answer names them.
const (
	StatePending   State = "pending"
	StateCompleted State = "completed"
	StateFailed    State = "failed"
)

// Failure is the public error of a failed job: the wire code, message and
// extra envelope members of the call's *agentcap.Error. Nothing hidden is
// kept.
type Failure struct {
	// Code is the wire code ("cancelled", "instance_lost", an
	// application's own code, ...).
	Code string `json:"code"`
	// Message is the public message.
	Message string `json:"message"`
	// Status is the HTTP status the same failure would have had as a
	// synchronous answer.
	Status int `json:"status,omitempty"`
	// Fields are the extra envelope members of an application error.
	Fields map[string]any `json:"fields,omitempty"`
}

// Record is a job as a Store keeps it.
type Record struct {
	// ID is the job's unguessable id.
	ID string
	// Owner identifies the caller that started the job (for Agent Auth,
	// the agent id); only the owner may read or cancel it.
	Owner string
	// Capability is the name of the capability the job runs.
	Capability string
	// State is pending, completed or failed.
	State State
	// Result is the capability's validated output (completed jobs).
	Result json.RawMessage
	// Failure is the public error (failed jobs).
	Failure *Failure
	// Progress is the latest progress the handler reported, if any.
	Progress *core.Progress
	// Instance names the process running a pending job.
	Instance string
	// LeaseUntil is when a pending job whose instance stopped renewing
	// is declared lost.
	LeaseUntil time.Time
	// Created and Updated are when the record was written first and last.
	Created, Updated time.Time
	// Expires is when a finished job is swept; zero while pending.
	Expires time.Time
}

// Outcome is how a job ends.
type Outcome struct {
	// State is StateCompleted or StateFailed.
	State State
	// Result is set for completed jobs, Failure for failed ones.
	Result  json.RawMessage
	Failure *Failure
	// Expires is when the finished record may be swept.
	Expires time.Time
}

// Errors of a Store.
var (
	// ErrNotFound: no job has that id.
	ErrNotFound = errors.New("jobs: no such job")
	// ErrExists: a job with that id exists already.
	ErrExists = errors.New("jobs: job exists")
)

// Store keeps job records where every instance of an application can
// read them. Every method is atomic; the ones that change a job's state
// are compare-and-set on the pending state, so an outcome, a cancellation
// and a lost lease racing for one job have exactly one winner. Times are
// passed in, so that stores keep no clock of their own; implementations
// keep them to the millisecond at least.
//
// The package's MemoryStore serves one process; package sqlstore keeps
// records in SQLite or PostgreSQL. Both pass the suite storetest.Jobs.
type Store interface {
	// Create adds rec, pending or already finished. ErrExists when the id
	// is taken.
	Create(ctx context.Context, rec *Record) error
	// Get returns a copy of the job. ErrNotFound when there is none (or it
	// was swept).
	Get(ctx context.Context, id string) (*Record, error)
	// Finish ends a pending job with out. It reports false, changing
	// nothing, when the job is no longer pending (it was cancelled or
	// declared lost) or does not exist.
	Finish(ctx context.Context, id string, out Outcome, now time.Time) (bool, error)
	// SetProgress records the latest progress of a pending job; it does
	// nothing for a finished or unknown one.
	SetProgress(ctx context.Context, id string, p core.Progress, now time.Time) error
	// Renew extends to leaseUntil the lease of those of ids that are
	// pending and run by instance. It returns the ids it did not renew:
	// jobs that ended elsewhere (cancelled, lost, swept).
	Renew(ctx context.Context, instance string, ids []string, leaseUntil, now time.Time) (gone []string, err error)
	// ExpireLeases ends with out every pending job whose lease ended
	// before now, and returns how many it ended.
	ExpireLeases(ctx context.Context, now time.Time, out Outcome) (int, error)
	// Sweep deletes the finished jobs whose Expires is before now, and
	// returns how many it deleted.
	Sweep(ctx context.Context, now time.Time) (int, error)
	// CountOwner returns how many jobs owner has that are pending, and
	// how many it has in all: pending, or finished with an Expires not
	// before now.
	CountOwner(ctx context.Context, owner string, now time.Time) (pending, kept int, err error)
}
