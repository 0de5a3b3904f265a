package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentcap/agentcap"
)

// maxBatchItems is the largest batch sent in one request; longer groups
// are split.
const maxBatchItems = 50

// BatchCall is one call of a batch.
type BatchCall struct {
	// ID names the call in its result; empty means its index in the
	// batch, as a decimal string. IDs must be unique.
	ID         string
	Capability string
	// Arguments are encoded as for Execute.
	Arguments any
	// ConfirmationToken confirms the call, for a capability that needs a
	// confirmation; without one, such a call fails alone with a
	// *ConfirmationRequired.
	ConfirmationToken string
}

// BatchResult is the outcome of one call of a batch: Data on success,
// Err (usually an *Error) on failure.
type BatchResult struct {
	ID         string
	Capability string
	Data       json.RawMessage
	Err        error
}

type batchItem struct {
	ID                string          `json:"id"`
	Capability        string          `json:"capability"`
	Arguments         json.RawMessage `json:"arguments,omitempty"`
	ConfirmationToken string          `json:"confirmation_token,omitempty"`
}

type batchAnswer struct {
	Responses []struct {
		ID     string          `json:"id"`
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  json.RawMessage `json:"error"`
	} `json:"responses"`
}

// BatchExecute runs calls, grouped by the location each capability
// executes at. Each group goes to the location's batch endpoint (its
// execute URL with the last segment "execute" replaced by
// "batch-execute") in requests of at most 50 calls, under one agent
// JWT whose aud is the location and whose capabilities claim lists the
// capabilities of that request. A location without a batch endpoint (no
// execute segment, or a 404 or 405 answer) gets single Execute calls
// instead.
//
// Results come in the order of calls. A failure that concerns a whole
// request (authentication, say) is the Err of each of its calls. The
// returned error is for the batch as a whole: bad arguments, duplicate
// ids, or ctx ending.
func (a *Agent) BatchExecute(ctx context.Context, calls []BatchCall) ([]BatchResult, error) {
	results := make([]BatchResult, len(calls))
	items := make([]batchItem, len(calls))
	ids := make(map[string]bool, len(calls))
	for i, c := range calls {
		id := c.ID
		if id == "" {
			id = strconv.Itoa(i)
		}
		if ids[id] {
			return nil, fmt.Errorf("client: duplicate batch id %q", id)
		}
		ids[id] = true
		args, err := encodeArguments(c.Arguments)
		if err != nil {
			return nil, fmt.Errorf("client: batch call %q: %w", id, err)
		}
		items[i] = batchItem{ID: id, Capability: c.Capability, Arguments: args, ConfirmationToken: c.ConfirmationToken}
		results[i] = BatchResult{ID: id, Capability: c.Capability}
	}

	// Group by location, keeping the order in which locations appear.
	groups := map[string][]int{}
	var order []string
	for i, it := range items {
		loc, err := a.location(ctx, it.Capability)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			results[i].Err = err
			continue
		}
		if _, ok := groups[loc]; !ok {
			order = append(order, loc)
		}
		groups[loc] = append(groups[loc], i)
	}
	for _, loc := range order {
		idx := groups[loc]
		batchURL := siblingEndpoint(loc, "batch-execute")
		for start := 0; start < len(idx); start += maxBatchItems {
			chunk := idx[start:min(start+maxBatchItems, len(idx))]
			if batchURL != "" {
				err := a.sendBatch(ctx, loc, batchURL, items, chunk, results)
				if err == nil {
					continue
				}
				var e *Error
				if !errors.As(err, &e) || (e.Status != http.StatusNotFound && e.Status != http.StatusMethodNotAllowed) {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					for _, i := range chunk {
						results[i].Err = err
					}
					continue
				}
				// No batch endpoint there after all: single calls for
				// the rest of this location.
				batchURL = ""
			}
			for _, i := range chunk {
				var opts []ExecuteOption
				if items[i].ConfirmationToken != "" {
					opts = append(opts, WithConfirmationToken(items[i].ConfirmationToken))
				}
				res, err := a.Execute(ctx, items[i].Capability, items[i].Arguments, opts...)
				if err != nil {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					results[i].Err = err
					continue
				}
				if res.Stream != nil {
					res.Stream.Close()
					results[i].Err = errors.New("client: a batch call answered with an event stream")
					continue
				}
				results[i].Data = res.Data
			}
		}
	}
	return results, nil
}

// siblingEndpoint derives another endpoint of a location (its batch or
// preview URL) by replacing the last segment "execute" of its URL with
// name, or returns "" when the location does not end in an execute
// segment.
func siblingEndpoint(loc, name string) string {
	base, query, _ := strings.Cut(loc, "?")
	if !strings.HasSuffix(base, "/execute") {
		return ""
	}
	u := strings.TrimSuffix(base, "execute") + name
	if query != "" {
		u += "?" + query
	}
	return u
}

// sendBatch sends the calls chunk (indexes into items) to batchURL and
// fills their results.
func (a *Agent) sendBatch(ctx context.Context, loc, batchURL string, items []batchItem, chunk []int, results []BatchResult) error {
	reqItems := make([]batchItem, len(chunk))
	var names []string
	for j, i := range chunk {
		reqItems[j] = items[i]
		if !slices.Contains(names, items[i].Capability) {
			names = append(names, items[i].Capability)
		}
	}
	slices.Sort(names)
	var ans batchAnswer
	_, _, err := a.c.do(ctx, call{
		method: http.MethodPost,
		url:    batchURL,
		token: func() (string, error) {
			return a.agentSigner.agentToken(a.conn.HostID, a.conn.AgentID, loc, names)
		},
		body: map[string]any{"requests": reqItems},
	}, &ans)
	if err != nil {
		return err
	}
	byID := make(map[string]int, len(chunk))
	for _, i := range chunk {
		byID[items[i].ID] = i
	}
	answered := make(map[string]bool, len(chunk))
	for _, r := range ans.Responses {
		i, ok := byID[r.ID]
		if !ok || answered[r.ID] {
			continue
		}
		answered[r.ID] = true
		switch r.Status {
		case "completed":
			if r.Data == nil {
				r.Data = json.RawMessage("null")
			}
			results[i].Data = r.Data
		case "failed":
			e := decodeErrorObject(r.Error)
			if e.Code == "" && e.Message == "" {
				e.Message = "batch call failed"
			}
			var p pendingAnswer
			if e.Code == agentcap.CodeConfirmationPending && json.Unmarshal(r.Error, &p) == nil {
				results[i].Err = a.confirmationPending(items[i].Capability, loc, p)
				continue
			}
			results[i].Err = confirmationRequired(items[i].Capability, e)
			a.forgetStale(items[i].Capability, e)
		default:
			results[i].Err = fmt.Errorf("client: batch answer with status %q", r.Status)
		}
	}
	for _, i := range chunk {
		if !answered[items[i].ID] {
			results[i].Err = errors.New("client: the batch answer has no result for this call")
		}
	}
	return nil
}
