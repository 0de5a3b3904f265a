package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentcap/agentcap"
)

// Error is a failure reported by a provider or a capability location in
// the protocol's error envelope, or one the client detected in an
// answer. Match codes with errors.As and the Code field, or with IsCode;
// the codes are agentcap's (agentcap.CodeConstraintViolated, ...).
type Error struct {
	// Status is the HTTP status of the answer; 0 for a failed item of a
	// batch or a failed async result, which carry no status of their own.
	Status int
	// Code is the error code ("constraint_violated", ...), as sent: a
	// code of the kit, or one of the server's own. It is empty when the
	// answer had none; Status is then the only signal.
	Code agentcap.Code
	// Message is the human-readable text of the answer. It is for people,
	// not for program logic.
	Message string
	// Details lists each input violation of an invalid_request answer
	// (its "errors" member).
	Details []agentcap.Violation
	// Violations lists the failed constraint checks of a
	// constraint_violated answer (its "violations" member).
	Violations []agentcap.ConstraintViolation
	// Fields holds the other members of the error object as sent
	// ("missing_constraints", "preview", "confirmation", "action", ...),
	// nil when there are none.
	Fields map[string]json.RawMessage
	// RetryAfter is the wait the server asked for (Retry-After header or
	// retry_after member), zero when it asked for none.
	RetryAfter time.Duration
	// Body is the raw error object, at most 64 KiB of it.
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
		b.WriteString(string(e.Code))
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
func IsCode(err error, code agentcap.Code) bool {
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

// namedMembers are the members of an error object that Error has fields
// of; the others go to Error.Fields.
var namedMembers = map[string]bool{
	agentcap.KeyError: true, agentcap.KeyCode: true, "message": true,
	"errors": true, "violations": true, "retry_after": true,
}

// decodeErrorObject reads an error object. It never fails: a member that
// does not have the expected type is left out of the field it would fill
// (it stays in Body). The code is the "error" member or, when that is not
// a string, the "code" member: a batch item names it so, and so do some
// frameworks' own validation errors.
func decodeErrorObject(body []byte) *Error {
	e := &Error{}
	if len(body) > maxErrorBody {
		body = body[:maxErrorBody]
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m == nil {
		return e
	}
	e.Body = json.RawMessage(body)
	var code string
	if json.Unmarshal(m[agentcap.KeyError], &code) != nil || code == "" {
		code = ""
		if json.Unmarshal(m[agentcap.KeyCode], &code) != nil {
			code = ""
		}
	}
	e.Code = agentcap.Code(code)
	if json.Unmarshal(m["message"], &e.Message) != nil {
		e.Message = ""
	}
	if json.Unmarshal(m["errors"], &e.Details) != nil {
		e.Details = nil
	}
	if json.Unmarshal(m["violations"], &e.Violations) != nil {
		e.Violations = nil
	}
	var retry json.Number
	if json.Unmarshal(m["retry_after"], &retry) == nil {
		if d, ok := parseRetryAfter(retry.String(), time.Time{}); ok {
			e.RetryAfter = d
		}
	}
	for k, v := range m {
		if namedMembers[k] {
			continue
		}
		if e.Fields == nil {
			e.Fields = make(map[string]json.RawMessage, len(m))
		}
		e.Fields[k] = v
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
