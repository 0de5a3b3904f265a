package ratelimit

import (
	"net/http"
	"strconv"
	"time"

	"github.com/agentcap/agentcap"
)

// RetryAfterField is the member of the error envelope that repeats the
// Retry-After seconds in the body.
const RetryAfterField = "retry_after"

// RetryAfterSeconds returns d.RetryAfter in whole seconds, rounded up and
// at least 1: the value of a Retry-After header, which has no fractions,
// and which must not invite a retry that would be refused again.
func RetryAfterSeconds(d Decision) int {
	s := int((d.RetryAfter + time.Second - 1) / time.Second)
	return max(s, 1)
}

// Error returns the protocol's answer to a refused request: 429
// rate_limited with message (a generic one when empty), asking the caller
// to wait RetryAfterSeconds (agentcap.Error.RetryAfter, which transports send
// as the Retry-After header), and with the same seconds in a retry_after
// envelope member for clients that read only the body.
func Error(d Decision, message string) *agentcap.Error {
	if message == "" {
		message = "too many requests; retry later"
	}
	secs := RetryAfterSeconds(d)
	return agentcap.NewError(agentcap.CodeRateLimited, message).
		With(RetryAfterField, secs).
		WithRetryAfter(time.Duration(secs) * time.Second)
}

// SetRetryAfter sets the Retry-After header for a refused decision, for
// handlers that write their own answers.
func SetRetryAfter(h http.Header, d Decision) {
	if !d.Allowed {
		h.Set("Retry-After", strconv.Itoa(RetryAfterSeconds(d)))
	}
}
