package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentcap/agentcap/agentauth"
)

// Error codes the client itself reacts to, beyond those of package
// agentauth (which lists the codes a capability location answers with).
const (
	// CodeSlowDown asks a client polling for approval to poll less often
	// (RFC 8628).
	CodeSlowDown = "slow_down"
	// CodeAuthorizationPending tells a client polling for approval that
	// nothing was decided yet (RFC 8628).
	CodeAuthorizationPending = "authorization_pending"
	// CodeAccessDenied reports that the user refused an approval.
	CodeAccessDenied = "access_denied"
	// CodeExpiredToken reports that an approval expired before it was
	// decided.
	CodeExpiredToken = "expired_token"
)

// Error is a failure reported by a provider or a capability location in
// the protocol's error envelope, or one the client detected in an
// answer. Match codes with errors.As and the Code field, or with IsCode.
type Error struct {
	// Status is the HTTP status of the answer; 0 for a failed item of a
	// batch or a failed async result, which carry no status of their own.
	Status int
	// Code is the protocol error code ("constraint_violated", ...). It is
	// empty when the answer had none; Status is then the only signal.
	Code string
	// Message is the human-readable text of the answer. It is for people,
	// not for program logic.
	Message string
	// Violations lists the failed constraint checks of a
	// constraint_violated answer.
	Violations []agentauth.ConstraintViolation
	// RetryAfter is the wait the server asked for (Retry-After header or
	// retry_after member), zero when it asked for none.
	RetryAfter time.Duration
	// Body is the raw error object, for members this type does not name
	// (missing_constraints, unknown_operators, invalid_capabilities, ...).
	Body json.RawMessage
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("agent auth: ")
	if e.Status != 0 {
		fmt.Fprintf(&b, "%d ", e.Status)
	}
	if e.Code != "" {
		b.WriteString(e.Code)
	} else {
		b.WriteString("error")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// IsCode reports whether err is, or wraps, an *Error with the given code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// maxErrorBody bounds the error body kept in memory.
const maxErrorBody = 64 << 10

// parseError builds the *Error of a non-success answer from its status,
// headers and body. A body that is not an error envelope still yields an
// *Error with the status, so callers always get one type.
func parseError(status int, header http.Header, body []byte, now time.Time) *Error {
	e := decodeErrorObject(body)
	e.Status = status
	if e.Message == "" && e.Code == "" {
		e.Message = http.StatusText(status)
	}
	if header != nil {
		if d, ok := parseRetryAfter(header.Get("Retry-After"), now); ok {
			e.RetryAfter = d
		}
	}
	return e
}

// errorEnvelope is the protocol's error body. Some servers name the code
// "code" (the batch item shape, and frameworks' own validation errors),
// so both members are read.
type errorEnvelope struct {
	Error      json.RawMessage                 `json:"error"`
	Code       string                          `json:"code"`
	Message    string                          `json:"message"`
	Violations []agentauth.ConstraintViolation `json:"violations"`
	RetryAfter json.Number                     `json:"retry_after"`
}

// decodeErrorObject reads an error object. It never fails: members that
// do not have the expected types are ignored.
func decodeErrorObject(body []byte) *Error {
	e := &Error{}
	if len(body) > maxErrorBody {
		body = body[:maxErrorBody]
	}
	var env errorEnvelope
	if json.Unmarshal(body, &env) != nil {
		// Members of the wrong type make the whole decode fail; read the
		// ones that matter one by one.
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil {
			return e
		}
		_ = json.Unmarshal(m["error"], &env.Error)
		_ = json.Unmarshal(m["code"], &env.Code)
		_ = json.Unmarshal(m["message"], &env.Message)
	}
	e.Body = json.RawMessage(body)
	var code string
	if json.Unmarshal(env.Error, &code) == nil && code != "" {
		e.Code = code
	} else {
		e.Code = env.Code
	}
	e.Message = env.Message
	e.Violations = env.Violations
	if s := env.RetryAfter.String(); s != "" {
		if d, ok := parseRetryAfter(s, time.Time{}); ok {
			e.RetryAfter = d
		}
	}
	return e
}

// parseRetryAfter reads a Retry-After value: delay seconds, or an HTTP
// date (relative to now; a zero now refuses dates).
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n < 0 || n > float64(maxRetryAfter/time.Second) {
			return 0, false
		}
		return time.Duration(n * float64(time.Second)), true
	}
	if now.IsZero() {
		return 0, false
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	if d < 0 {
		d = 0
	}
	if d > maxRetryAfter {
		return 0, false
	}
	return d, true
}

// maxRetryAfter bounds a Retry-After the client believes; anything longer
// is treated as absent rather than as a reason to wait for days.
const maxRetryAfter = 24 * time.Hour
