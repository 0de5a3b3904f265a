package core_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

// errorsApp is the application context of the executor the tests of this
// file run.
type (
	errorsApp struct{}
	errorsIn  struct {
		N int `json:"n"`
	}
	errorsOut struct {
		N int `json:"n"`
	}
)

func errorsExecutor(t *testing.T, handler func(context.Context, errorsApp, errorsIn) (errorsOut, error)) *core.Executor {
	t.Helper()
	e, err := core.NewExecutor(core.MustRegistry(core.MustDefine("run", "Runs the test's handler.", handler)),
		func(context.Context, *auth.Identity, *core.Definition, any) (errorsApp, error) {
			return errorsApp{}, nil
		},
		core.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// publicError is what a transport shows of an *agentcap.Error.
type publicError struct {
	Code    agentcap.Code
	Status  int
	Message string
	Details []agentcap.Violation
}

func publicOf(t *testing.T, err error) publicError {
	t.Helper()
	ce := coreErr(t, err)
	return publicError{ce.Code, ce.HTTPStatus(), ce.Message, ce.Details}
}

// TestErrorWithoutCode: an *agentcap.Error that names no code is a
// mistake of the application; it is answered as internal_error with its
// own message, so that no answer names an empty code.
func TestErrorWithoutCode(t *testing.T) {
	cause := errors.New("row locked")
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"returned", (&agentcap.Error{Message: "try again"}).WithCause(cause)},
		{"wrapped", errors.Join(errors.New("locking"), (&agentcap.Error{Message: "try again"}).WithCause(cause))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := errorsExecutor(t, func(context.Context, errorsApp, errorsIn) (errorsOut, error) {
				return errorsOut{}, tc.err
			})
			_, err := e.Execute(context.Background(), "run", nil, []byte(`{"n":1}`))
			want := publicError{Code: agentcap.CodeInternalError, Status: http.StatusInternalServerError, Message: "try again"}
			if diff := cmp.Diff(want, publicOf(t, err)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			if ce := coreErr(t, err); ce.Stage != agentcap.StageHandler {
				t.Errorf("stage %q", ce.Stage)
			}
			if !errors.Is(err, cause) {
				t.Errorf("%v does not wrap the application's cause", err)
			}
		})
	}
}

// TestUndeclaredCode: a code the application never declared with
// agentcap.NewCode reaches the caller as it is, answered 500.
func TestUndeclaredCode(t *testing.T) {
	e := errorsExecutor(t, func(context.Context, errorsApp, errorsIn) (errorsOut, error) {
		return errorsOut{}, agentcap.NewError("never_declared", "odd")
	})
	_, err := e.Execute(context.Background(), "run", nil, []byte(`{"n":1}`))
	want := publicError{Code: "never_declared", Status: http.StatusInternalServerError, Message: "odd"}
	if diff := cmp.Diff(want, publicOf(t, err)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// TestParseViolationsNameNoPackage checks that the messages of arguments
// that are not one JSON object describe the problem without the name of
// the internal parser package.
func TestParseViolationsNameNoPackage(t *testing.T) {
	e := errorsExecutor(t, func(_ context.Context, _ errorsApp, in errorsIn) (errorsOut, error) {
		return errorsOut(in), nil
	})
	tests := []struct {
		args string
		want []agentcap.Violation
	}{
		{`{"n":`, []agentcap.Violation{{Message: "unexpected end of input at offset 5"}}},
		{`{"n":01}`, []agentcap.Violation{{Message: "leading zero in number at offset 6"}}},
		{`[1]`, []agentcap.Violation{{Message: "value must be an object, got array"}}},
		{`{"n":1,"n":2}`, []agentcap.Violation{{Path: "/n", Message: "duplicate key"}}},
	}
	for _, tt := range tests {
		_, err := e.Execute(context.Background(), "run", nil, []byte(tt.args))
		got := publicOf(t, err)
		if got.Code != agentcap.CodeInvalidRequest || got.Status != http.StatusBadRequest {
			t.Errorf("%s: code %q (%d), want %q", tt.args, got.Code, got.Status, agentcap.CodeInvalidRequest)
		}
		if diff := cmp.Diff(tt.want, got.Details); diff != "" {
			t.Errorf("%s: violations (-want +got):\n%s", tt.args, diff)
		}
		for _, v := range got.Details {
			if strings.Contains(v.Message, "jsonvalue") {
				t.Errorf("%s: %q names the parser package", tt.args, v.Message)
			}
		}
	}
}
