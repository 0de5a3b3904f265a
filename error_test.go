package agentcap_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
)

func TestErrorConstructors(t *testing.T) {
	cause := errors.New("db: connection refused")
	for _, tc := range []struct {
		name    string
		err     *agentcap.Error
		code    agentcap.Code
		message string
		cause   error
		retry   time.Duration
	}{
		{"NewError", agentcap.NewError(agentcap.CodeConflict, "frozen"), agentcap.CodeConflict, "frozen", nil, 0},
		{"Errorf", agentcap.Errorf(agentcap.CodeNotFound, "no account %q", "acc_1"), agentcap.CodeNotFound, `no account "acc_1"`, nil, 0},
		{"Wrap", agentcap.Wrap(agentcap.CodeTimeout, "too slow", cause), agentcap.CodeTimeout, "too slow", cause, 0},
		{"Internal", agentcap.Internal(cause), agentcap.CodeInternalError, "internal error", cause, 0},
		{"Unavailable", agentcap.Unavailable("the store is down", cause), agentcap.CodeTemporarilyUnavailable, "the store is down", cause,
			agentcap.UnavailableRetryAfter},
	} {
		e := tc.err
		if e.Code != tc.code || e.Message != tc.message || e.RetryAfter != tc.retry || e.Stage != "" || e.Details != nil || e.Fields != nil {
			t.Errorf("%s: %+v", tc.name, e)
		}
		if errors.Unwrap(e) != tc.cause {
			t.Errorf("%s: cause %v, want %v", tc.name, errors.Unwrap(e), tc.cause)
		}
	}
	if agentcap.UnavailableRetryAfter != time.Second || agentcap.Unavailable("m", nil).HTTPStatus() != http.StatusServiceUnavailable {
		t.Errorf("Unavailable: retry after %v", agentcap.UnavailableRetryAfter)
	}
}

func TestErrorString(t *testing.T) {
	cause := errors.New("db: connection refused")
	for _, tc := range []struct {
		err  *agentcap.Error
		want string
	}{
		{agentcap.NewError(agentcap.CodeConflict, "frozen"), "conflict: frozen"},
		{agentcap.Wrap(agentcap.CodeConflict, "frozen", cause), "conflict: frozen: db: connection refused"},
		{agentcap.Wrap(agentcap.CodeConflict, "frozen", cause).WithStage(agentcap.StageHandler), "agentcap: handler: conflict: frozen: db: connection refused"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// TestErrorWithCopies: the With methods return a changed copy and leave
// the error they were called on as it was, so that a package-level error
// may be refined safely.
func TestErrorWithCopies(t *testing.T) {
	base := agentcap.NewError(agentcap.CodeConstraintViolated, "outside the grant").With("a", 1)
	cause := errors.New("hidden")

	more := base.With("b", 2)
	if len(base.Fields) != 1 || len(more.Fields) != 2 || more.Fields["a"] != 1 || more.Fields["b"] != 2 {
		t.Errorf("With: base %v, copy %v", base.Fields, more.Fields)
	}
	replaced := more.With("a", 3)
	if more.Fields["a"] != 1 || replaced.Fields["a"] != 3 {
		t.Errorf("With over a key changed the original: %v %v", more.Fields, replaced.Fields)
	}
	caused := base.WithCause(cause)
	if errors.Unwrap(base) != nil || !errors.Is(caused, cause) || caused.Message != base.Message {
		t.Errorf("WithCause: base %v, copy %v", base, caused)
	}
	waits := base.WithRetryAfter(time.Minute)
	if base.RetryAfter != 0 || waits.RetryAfter != time.Minute {
		t.Errorf("WithRetryAfter: base %v, copy %v", base.RetryAfter, waits.RetryAfter)
	}
	staged := base.WithStage(agentcap.StageAuthorize)
	if base.Stage != "" || staged.Stage != agentcap.StageAuthorize {
		t.Errorf("WithStage: base %q, copy %q", base.Stage, staged.Stage)
	}
	for _, c := range []*agentcap.Error{more, caused, waits, staged} {
		if c == base || c.Code != base.Code || c.Message != base.Message {
			t.Errorf("copy %+v", c)
		}
	}
}

func TestAsCodeOfPublic(t *testing.T) {
	refusal := agentcap.NewError(agentcap.CodeCapabilityNotGranted, "not granted")
	wrapped := fmt.Errorf("authorizing: %w", refusal)
	plain := errors.New("db password hunter2")

	if agentcap.As(nil) != nil || agentcap.As(plain) != nil || agentcap.As(wrapped) != refusal {
		t.Error("As")
	}
	for _, tc := range []struct {
		err  error
		want agentcap.Code
	}{
		{nil, ""},
		{refusal, agentcap.CodeCapabilityNotGranted},
		{wrapped, agentcap.CodeCapabilityNotGranted},
		{plain, agentcap.CodeInternalError},
	} {
		if got := agentcap.CodeOf(tc.err); got != tc.want {
			t.Errorf("CodeOf(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}

	if agentcap.Public(nil) != nil || agentcap.Public(wrapped) != refusal {
		t.Error("Public of nil or of a refusal")
	}
	p := agentcap.Public(plain)
	if p.Code != agentcap.CodeInternalError || p.Message != "internal error" || p.HTTPStatus() != http.StatusInternalServerError ||
		!errors.Is(p, plain) || strings.Contains(p.Message, "hunter2") {
		t.Errorf("Public(plain) = %+v", p)
	}
}
