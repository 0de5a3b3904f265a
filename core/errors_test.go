package core_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/core"
)

func TestAppErrorWireCodeAndStatus(t *testing.T) {
	tests := []struct {
		name       string
		err        *core.AppError
		code       string
		status     int
		wireStatus int
	}{
		{"as given", core.Conflict("task_locked", "locked"), "task_locked", http.StatusConflict, http.StatusConflict},
		{"empty code", &core.AppError{Status: http.StatusConflict, Message: "locked"}, core.WireInternalError, http.StatusConflict, http.StatusConflict},
		{"no status", &core.AppError{Code: "odd"}, "odd", 0, http.StatusInternalServerError},
		{"success status", core.NewAppError(http.StatusOK, "odd", "m"), "odd", http.StatusOK, http.StatusInternalServerError},
		{"beyond 599", core.NewAppError(600, "", "m"), core.WireInternalError, 600, http.StatusInternalServerError},
	}
	for _, tt := range tests {
		if got := tt.err.WireCode(); got != tt.code {
			t.Errorf("%s: WireCode = %q, want %q", tt.name, got, tt.code)
		}
		if got := tt.err.HTTPStatus(); got != tt.wireStatus {
			t.Errorf("%s: HTTPStatus = %d, want %d", tt.name, got, tt.wireStatus)
		}
		if tt.err.Status != tt.status {
			t.Errorf("%s: Status changed to %d", tt.name, tt.err.Status)
		}
	}
}

// errorsCaller and errorsApp are the principal and context of the
// executor the tests of this file run.
type (
	errorsCaller struct{}
	errorsApp    struct{}
	errorsIn     struct {
		N int `json:"n"`
	}
	errorsOut struct {
		N int `json:"n"`
	}
)

func errorsExecutor(t *testing.T, handler func(context.Context, errorsApp, errorsIn) (errorsOut, error)) *core.Executor[errorsApp, errorsCaller] {
	t.Helper()
	e, err := core.NewExecutor(core.MustRegistry(core.MustDefine("run", "Runs the test's handler.", handler)),
		core.ExecutorConfig[errorsApp, errorsCaller]{
			CreateContext: func(context.Context, errorsCaller, *core.Definition, any) (errorsApp, error) { return errorsApp{}, nil },
		})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// publicError is what a transport shows of an *core.Error.
type publicError struct {
	Code     core.Code
	WireCode string
	Status   int
	Message  string
	Details  []core.Violation
}

func publicOf(t *testing.T, err error) publicError {
	t.Helper()
	var ce *core.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *core.Error", err)
	}
	return publicError{ce.Code, ce.WireCode(), ce.HTTPStatus(), ce.Message, ce.Details}
}

// TestAppErrorWithoutCode shows the rule for an application error that
// names no code: it is sent as internal_error, with its own status and
// message, and nothing renders an empty "error" member.
func TestAppErrorWithoutCode(t *testing.T) {
	cause := errors.New("row locked")
	e := errorsExecutor(t, func(context.Context, errorsApp, errorsIn) (errorsOut, error) {
		return errorsOut{}, (&core.AppError{Status: http.StatusConflict, Message: "try again"}).WithCause(cause)
	})
	_, err := e.ExecuteDynamic(context.Background(), "run", errorsCaller{}, []byte(`{"n":1}`), nil)
	want := publicError{Code: core.WireInternalError, WireCode: core.WireInternalError, Status: http.StatusConflict, Message: "try again"}
	if diff := cmp.Diff(want, publicOf(t, err)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if !errors.Is(err, cause) {
		t.Errorf("%v does not wrap the application's cause", err)
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
		want []core.Violation
	}{
		{`{"n":`, []core.Violation{{Message: "unexpected end of input at offset 5"}}},
		{`{"n":01}`, []core.Violation{{Message: "leading zero in number at offset 6"}}},
		{`[1]`, []core.Violation{{Message: "value must be an object, got array"}}},
		{`{"n":1,"n":2}`, []core.Violation{{Path: "/n", Message: "duplicate key"}}},
	}
	for _, tt := range tests {
		_, err := e.ExecuteDynamic(context.Background(), "run", errorsCaller{}, []byte(tt.args), nil)
		got := publicOf(t, err)
		if got.Code != core.CodeInvalidInput {
			t.Errorf("%s: code %q, want %q", tt.args, got.Code, core.CodeInvalidInput)
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
