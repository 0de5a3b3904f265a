package httpx

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/core"
)

// confirmationPending renders a call that waits for a person's
// confirmation (confirmation_pending): 202
// {"status":"confirmation_pending","message":...,"approval":{...},
// "status_url":...,"preview":...}, with Retry-After: the approval's
// interval. It is not an error answer, but an idempotency key does not
// keep it either: the same key is retried with the token the decision
// gives.
func (h *handlerBase) confirmationPending(buf *buffer, e *agentcap.Error) replyMeta {
	f := e.Fields
	approval, _ := f["approval"].(core.ConfirmationApproval)
	statusURL, _ := f["status_url"].(string)
	preview, _ := f["preview"].(json.RawMessage)
	b := append(buf.b[:0], `{"status":"confirmation_pending","message":`...)
	b = appendString(b, e.Message)
	b = append(b, `,"approval":`...)
	// The approval holds strings and numbers only: encoding cannot fail.
	a, _ := json.Marshal(approval)
	b = append(b, a...)
	b = append(b, `,"status_url":`...)
	b = appendString(b, statusURL)
	if len(preview) > 0 {
		b = append(b, `,"preview":`...)
		b = append(b, preview...)
	}
	buf.b = append(b, '}', '\n')
	m := replyMeta{status: http.StatusAccepted, cache: cacheNoStore, unkept: true}
	if approval.Interval > 0 {
		m.retryAfter = []string{strconv.Itoa(approval.Interval)}
	}
	return m
}
