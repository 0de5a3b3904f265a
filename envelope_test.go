package agentcap_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
)

var codeTestFrozen = agentcap.NewCode("test_envelope_frozen", agentcap.CodeConflict)

func TestAppendError(t *testing.T) {
	invalid := agentcap.NewError(agentcap.CodeInvalidRequest, "the arguments are invalid")
	invalid.Details = []agentcap.Violation{{Path: "/amount", Message: "must be greater than 0"}, {Path: "", Message: "unknown field"}}
	confirmation := agentcap.NewError(agentcap.CodeConfirmationRequired, "confirm it").
		With("preview", json.RawMessage(`{"to":"bob"}`)).
		With("confirmation", map[string]string{"token": "t1", "expires_at": "2026-01-02T03:04:05Z"}).
		With("attempts", 2)
	tests := []struct {
		name    string
		err     *agentcap.Error
		codeKey string
		want    string
	}{
		{"plain", agentcap.NewError(agentcap.CodeConflict, "the account is frozen"), agentcap.KeyError,
			`{"error":"conflict","message":"the account is frozen"}`},
		{"application code", agentcap.NewError(codeTestFrozen, "frozen"), agentcap.KeyError,
			`{"error":"test_envelope_frozen","message":"frozen"}`},
		{"details", invalid, agentcap.KeyError,
			`{"error":"invalid_request","message":"the arguments are invalid","errors":[{"path":"/amount","message":"must be greater than 0"},{"path":"","message":"unknown field"}]}`},
		{"fields in key order", confirmation, agentcap.KeyError,
			`{"error":"confirmation_required","message":"confirm it","attempts":2,"confirmation":{"expires_at":"2026-01-02T03:04:05Z","token":"t1"},"preview":{"to":"bob"}}`},
		{"details, then fields", invalid.With("violations", []string{"amount"}), agentcap.KeyError,
			`{"error":"invalid_request","message":"the arguments are invalid","errors":[{"path":"/amount","message":"must be greater than 0"},{"path":"","message":"unknown field"}],"violations":["amount"]}`},
		{"batch item", agentcap.NewError(agentcap.CodeCapabilityNotFound, "unknown capability"), agentcap.KeyCode,
			`{"code":"capability_not_found","message":"unknown capability"}`},
		{"batch item with fields", agentcap.NewError(agentcap.CodeConstraintViolated, "outside").With("violations", []int{1}), agentcap.KeyCode,
			`{"code":"constraint_violated","message":"outside","violations":[1]}`},
		// The envelope's own members are not overwritten by fields.
		{"reserved fields", agentcap.NewError(agentcap.CodeConflict, "m").With("error", "x").With("message", "y").With("z", true),
			agentcap.KeyError, `{"error":"conflict","message":"m","z":true}`},
		{"reserved fields of a batch item", agentcap.NewError(agentcap.CodeConflict, "m").With("code", "x").With("message", "y"),
			agentcap.KeyCode, `{"code":"conflict","message":"m"}`},
		{"errors field beside details", invalid.With("errors", "x"), agentcap.KeyError,
			`{"error":"invalid_request","message":"the arguments are invalid","errors":[{"path":"/amount","message":"must be greater than 0"},{"path":"","message":"unknown field"}]}`},
		// An error that names no code is an internal error to the caller.
		{"no code", &agentcap.Error{Message: "oops"}, agentcap.KeyError,
			`{"error":"internal_error","message":"oops"}`},
		{"no code, no message", &agentcap.Error{}, agentcap.KeyCode,
			`{"code":"internal_error","message":"Internal Server Error"}`},
		// An empty message is the status text.
		{"empty message", agentcap.NewError(agentcap.CodeNotFound, ""), agentcap.KeyError,
			`{"error":"not_found","message":"Not Found"}`},
		{"empty message, application code", agentcap.NewError(codeTestFrozen, ""), agentcap.KeyError,
			`{"error":"test_envelope_frozen","message":"Conflict"}`},
		{"empty message, unknown code", agentcap.NewError("never_declared", ""), agentcap.KeyError,
			`{"error":"never_declared","message":"Internal Server Error"}`},
		// The stage, the cause and the wait are not the caller's.
		{"hidden parts", agentcap.Wrap(agentcap.CodeTimeout, "too slow", errors.New("db: secret")).
			WithStage(agentcap.StageHandler).WithRetryAfter(time.Second), agentcap.KeyError,
			`{"error":"timeout","message":"too slow"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := agentcap.AppendError([]byte("prefix:"), tt.err, tt.codeKey)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff("prefix:"+tt.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !json.Valid(got[len("prefix:"):]) {
				t.Errorf("not JSON: %s", got)
			}
		})
	}
}

func TestAppendErrorEscapes(t *testing.T) {
	msg := "a \"quoted\" <b>tag</b> & a\nnew line, \\ é 中 \x01"
	e := agentcap.NewError(agentcap.CodeConflict, msg)
	e.Details = []agentcap.Violation{{Path: "/a~1b/\"c\"", Message: msg}}
	e = e.With("note", msg)
	got, err := agentcap.AppendError(nil, e, agentcap.KeyError)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Error   string               `json:"error"`
		Message string               `json:"message"`
		Errors  []agentcap.Violation `json:"errors"`
		Note    string               `json:"note"`
	}
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if back.Error != "conflict" || back.Message != msg || back.Note != msg || !cmp.Equal(back.Errors, e.Details) {
		t.Errorf("read back %+v from %s", back, got)
	}
}

// TestAppendErrorDropsWhatCannotBeEncoded: a member encoding/json cannot
// encode is left out, the rest written, and the error names it.
func TestAppendErrorDropsWhatCannotBeEncoded(t *testing.T) {
	e := agentcap.NewError(agentcap.CodeConflict, "m").
		With("channel", make(chan int)).
		With("good", 1).
		With("nan", math.NaN()).
		With("zeta", "z")
	got, err := agentcap.AppendError(nil, e, agentcap.KeyError)
	if want := `{"error":"conflict","message":"m","good":1,"zeta":"z"}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if err == nil || !strings.Contains(err.Error(), `"channel"`) || !strings.Contains(err.Error(), `"nan"`) || strings.Contains(err.Error(), `"good"`) {
		t.Fatalf("err = %v, want one naming channel and nan", err)
	}
	var ute *json.UnsupportedTypeError
	var uve *json.UnsupportedValueError
	if !errors.As(err, &ute) || !errors.As(err, &uve) {
		t.Errorf("err %v does not keep encoding/json's errors", err)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0"},
		{time.Nanosecond, "1"},
		{999 * time.Millisecond, "1"},
		{time.Second, "1"},
		{time.Second + time.Nanosecond, "2"},
		{1500 * time.Millisecond, "2"},
		{2 * time.Second, "2"},
		{90 * time.Second, "90"},
	} {
		if got := agentcap.RetryAfterHeader(tc.d); got != tc.want {
			t.Errorf("RetryAfterHeader(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestWriteError(t *testing.T) {
	challenges := []string{`Bearer realm="bank"`, `AgentAuth discovery="https://bank.example/.well-known/agent-configuration"`}
	tests := []struct {
		name       string
		err        error
		challenges []string
		status     int
		retryAfter string   // "" for none
		challenged []string // the WWW-Authenticate values
		body       string
	}{
		{"plain", agentcap.NewError(agentcap.CodeConflict, "the account is frozen"), challenges, 409, "", nil,
			`{"error":"conflict","message":"the account is frozen"}`},
		{"wrapped", fmt.Errorf("handler: %w", agentcap.NewError(agentcap.CodeNotFound, "no such account")), nil, 404, "", nil,
			`{"error":"not_found","message":"no such account"}`},
		{"application code", agentcap.NewError(codeTestFrozen, "frozen"), nil, 409, "", nil,
			`{"error":"test_envelope_frozen","message":"frozen"}`},
		{"401 with challenges", agentcap.NewError(agentcap.CodeAuthenticationRequired, "authentication is required"), challenges, 401, "", challenges,
			`{"error":"authentication_required","message":"authentication is required"}`},
		{"401 without challenges", agentcap.NewError(agentcap.CodeInvalidJWT, "bad token"), nil, 401, "", nil,
			`{"error":"invalid_jwt","message":"bad token"}`},
		{"403 is not challenged", agentcap.NewError(agentcap.CodeAgentRevoked, "revoked"), challenges, 403, "", nil,
			`{"error":"agent_revoked","message":"revoked"}`},
		{"retry after, rounded up", agentcap.NewError(agentcap.CodeRateLimited, "slow down").WithRetryAfter(1500 * time.Millisecond), nil, 429, "2", nil,
			`{"error":"rate_limited","message":"slow down"}`},
		{"retry after a nanosecond", agentcap.NewError(agentcap.CodeRateLimited, "slow down").WithRetryAfter(time.Nanosecond), nil, 429, "1", nil,
			`{"error":"rate_limited","message":"slow down"}`},
		{"unavailable", agentcap.Unavailable("the store is down", errors.New("redis: refused")), nil, 503, "1", nil,
			`{"error":"temporarily_unavailable","message":"the store is down"}`},
		{"any other error is redacted", errors.New("db password hunter2"), challenges, 500, "", nil,
			`{"error":"internal_error","message":"internal error"}`},
		{"cancelled", agentcap.NewError(agentcap.CodeCancelled, "gone"), nil, 499, "", nil,
			`{"error":"cancelled","message":"gone"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			if err := agentcap.WriteError(rec, tt.err, tt.challenges...); err != nil {
				t.Fatalf("WriteError: %v", err)
			}
			res := rec.Result()
			if res.StatusCode != tt.status {
				t.Errorf("status %d, want %d", res.StatusCode, tt.status)
			}
			h := res.Header
			if h.Get("Content-Type") != "application/json" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" {
				t.Errorf("headers %v", h)
			}
			if got, ok := h["Retry-After"]; tt.retryAfter == "" && ok || tt.retryAfter != "" && !cmp.Equal(got, []string{tt.retryAfter}) {
				t.Errorf("Retry-After %q, want %q", got, tt.retryAfter)
			}
			if diff := cmp.Diff(tt.challenged, h.Values("WWW-Authenticate")); diff != "" {
				t.Errorf("WWW-Authenticate (-want +got):\n%s", diff)
			}
			if got := rec.Body.String(); got != tt.body+"\n" {
				t.Errorf("body %q, want %q", got, tt.body+"\n")
			}
		})
	}
}

func TestWriteErrorReportsADroppedMember(t *testing.T) {
	rec := httptest.NewRecorder()
	err := agentcap.WriteError(rec, agentcap.NewError(agentcap.CodeConflict, "m").With("bad", func() {}).With("ok", "yes"))
	if err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("err = %v", err)
	}
	if rec.Code != http.StatusConflict || rec.Body.String() != `{"error":"conflict","message":"m","ok":"yes"}`+"\n" {
		t.Errorf("answer %d %s", rec.Code, rec.Body)
	}
}
