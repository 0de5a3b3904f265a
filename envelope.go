package agentcap

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// Envelope keys: the member that names the code. A top-level error
// answer, a stream's error event and a job's error object use KeyError
// ({"error": code, "message": ...}); an item of a batch answer uses
// KeyCode ({"code": code, "message": ...}), as the Agent Auth reference
// server does.
const (
	KeyError = "error"
	KeyCode  = "code"
)

// AppendError appends the error envelope of e to dst: the code under
// codeKey (KeyError or KeyCode), "message" (the status text when e has
// none), "errors" listing e.Details, then e.Fields in key order. It is the
// one writer of error envelopes: HTTP answers, batch items, stream
// events, job results and MCP tool errors all come from it. A member of
// e.Fields that encoding/json cannot encode is left out, and the returned
// error names it, for the caller to log.
func AppendError(dst []byte, e *Error, codeKey string) ([]byte, error) {
	dst = append(dst, '{')
	dst = jsonvalue.AppendString(dst, codeKey)
	dst = append(dst, ':')
	code := e.Code
	if code == "" {
		// An error that names no code is a mistake of its maker: it is
		// answered as what it is to the caller, an internal error.
		code = CodeInternalError
	}
	dst = jsonvalue.AppendString(dst, string(code))
	dst = append(dst, `,"message":`...)
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(code.HTTPStatus())
	}
	dst = jsonvalue.AppendString(dst, msg)
	if len(e.Details) > 0 {
		dst = append(dst, `,"errors":[`...)
		for i, v := range e.Details {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"path":`...)
			dst = jsonvalue.AppendString(dst, v.Path)
			dst = append(dst, `,"message":`...)
			dst = jsonvalue.AppendString(dst, v.Message)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	var dropped error
	if len(e.Fields) > 0 {
		keys := make([]string, 0, len(e.Fields))
		for k := range e.Fields {
			if k != codeKey && k != "message" && (k != "errors" || len(e.Details) == 0) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			raw, err := json.Marshal(e.Fields[k])
			if err != nil {
				dropped = errors.Join(dropped, fmt.Errorf("agentcap: error member %q cannot be encoded: %w", k, err))
				continue
			}
			dst = append(dst, ',')
			dst = jsonvalue.AppendString(dst, k)
			dst = append(dst, ':')
			dst = append(dst, raw...)
		}
	}
	return append(dst, '}'), dropped
}

// RetryAfterHeader renders a wait as the value of a Retry-After header:
// whole seconds, rounded up so that a caller never retries too early.
func RetryAfterHeader(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

// WriteError answers err on w with its error envelope, for handlers and
// middleware outside the kit's transports that must answer as they do:
// the *Error in err's chain, or a redacted internal_error for any other
// error. The answer is JSON, never cached, with Retry-After when the
// error asks for a wait, and, on 401, a WWW-Authenticate header for each
// challenge. It returns the error of AppendError, for the caller to log.
func WriteError(w http.ResponseWriter, err error, challenges ...string) error {
	e := Public(err)
	body, dropped := AppendError(make([]byte, 0, 128), e, KeyError)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	if e.RetryAfter > 0 {
		h.Set("Retry-After", RetryAfterHeader(e.RetryAfter))
	}
	status := e.HTTPStatus()
	if status == http.StatusUnauthorized {
		for _, c := range challenges {
			h.Add("WWW-Authenticate", c)
		}
	}
	w.WriteHeader(status)
	// A write error means the client is gone; there is nobody to tell.
	_, _ = w.Write(append(body, '\n'))
	return dropped
}
