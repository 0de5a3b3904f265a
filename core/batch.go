package core

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
)

// BatchCall is one invocation of a batch.
type BatchCall struct {
	// ID is the caller's name for the call, echoed in its BatchResult so
	// that results can be matched to calls. The executor only copies it;
	// HTTP transports default it to the call's index in the batch.
	ID string
	// Capability is the name of the capability to run.
	Capability string
	// Arguments is the raw JSON arguments object. Absent (nil) or null
	// means {}, as for Execute.
	Arguments json.RawMessage
	// ConfirmationToken confirms the call, for a capability that needs a
	// confirmation (see WithConfirmationToken); "" for none.
	ConfirmationToken string
}

// BatchResult is the outcome of one BatchCall: Data on success, Err
// otherwise. ID echoes the call's ID.
type BatchResult struct {
	// ID is the ID of the BatchCall this result answers.
	ID string
	// Data is the validated output JSON of a successful call; nil when
	// Err is set.
	Data json.RawMessage
	// Err is the call's failure, nil on success. One call's failure never
	// affects the others.
	Err *agentcap.Error
}

// msgBatchUnsupported is the public message of CodeBatchUnsupported.
const msgBatchUnsupported = "this capability streams or runs as a job, which a batch cannot carry: execute it on its own"

// ExecuteBatch runs calls for one caller with bounded concurrency and
// returns their results in request order, each with its own outcome. The
// batch itself fails only when it is empty or larger than MaxBatch. Items
// naming a streaming or async capability are refused, each with
// batch_unsupported_result_type, without running. Every item runs under
// ctx: when it is canceled, the items still running are canceled with it.
func (e *Executor) ExecuteBatch(ctx context.Context, id *auth.Identity, calls []BatchCall) ([]BatchResult, error) {
	if len(calls) == 0 || len(calls) > e.maxBatch {
		return nil, newErr(agentcap.CodeInvalidRequest, agentcap.StageInput,
			fmt.Sprintf("a batch holds 1 to %d requests", e.maxBatch), nil)
	}
	results := make([]BatchResult, len(calls))
	workers := min(e.concurrency, len(calls))
	if workers <= 1 {
		for i, c := range calls {
			results[i] = e.batchItem(ctx, id, c)
		}
		return results, nil
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				results[i] = e.batchItem(ctx, id, calls[i])
			}
		})
	}
	for i := range calls {
		next <- i
	}
	close(next)
	wg.Wait()
	return results, nil
}

func (e *Executor) batchItem(ctx context.Context, id *auth.Identity, c BatchCall) BatchResult {
	if def, ok := e.lookup(ctx, c.Capability, id, true); ok && def.longRunning() {
		return BatchResult{ID: c.ID, Err: newErr(agentcap.CodeBatchUnsupported, agentcap.StageLookup, msgBatchUnsupported, nil)}
	}
	if c.ConfirmationToken != "" || confirmationToken(ctx) != "" {
		// An item carries its own token, never the batch's.
		ctx = context.WithValue(ctx, confirmationTokenKey{}, c.ConfirmationToken)
	}
	_, data, err := e.app.pipeline(ctx, c.Capability, id, c.Arguments, nil, nil)
	return BatchResult{ID: c.ID, Data: data, Err: err}
}
