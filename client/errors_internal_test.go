package client

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
)

func TestDecodeErrorObject(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	tests := []struct {
		name string
		body string
		want *Error
	}{
		{"envelope with every member",
			`{"error":"invalid_request","message":"bad","errors":[{"path":"/amount","message":"too big"}],"transformed_fields":["currency"],"retry_after":2}`,
			&Error{Code: agentcap.CodeInvalidRequest, Message: "bad",
				Details:    []agentcap.Violation{{Path: "/amount", Message: "too big"}},
				Fields:     map[string]json.RawMessage{"transformed_fields": raw(`["currency"]`)},
				RetryAfter: 2 * time.Second}},
		{"constraint violations and members of a refusal",
			`{"error":"constraint_violated","message":"no","violations":[{"field":"amount","constraint":{"max":1},"actual":2}],"missing_constraints":["to"]}`,
			&Error{Code: agentcap.CodeConstraintViolated, Message: "no",
				Violations: []agentcap.ConstraintViolation{{Field: "amount", Constraint: raw(`{"max":1}`), Actual: raw(`2`)}},
				Fields:     map[string]json.RawMessage{"missing_constraints": raw(`["to"]`)}}},
		{"batch item naming the code code", `{"code":"capability_not_granted","message":"no"}`,
			&Error{Code: agentcap.CodeCapabilityNotGranted, Message: "no"}},
		{"a server's own code", `{"error":"insufficient_funds","message":"no","balance":3}`,
			&Error{Code: "insufficient_funds", Message: "no", Fields: map[string]json.RawMessage{"balance": raw(`3`)}}},
		{"members of the wrong types", `{"error":{"nested":true},"code":"x_error","message":3,"errors":"many","violations":{},"preview":1}`,
			&Error{Code: "x_error", Fields: map[string]json.RawMessage{"preview": raw(`1`)}}},
		{"not an object", `[1,2]`, &Error{}},
		{"not JSON", `<html>`, &Error{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decodeErrorObject([]byte(tt.body))
			// An object is kept whole; anything else is not an error
			// object.
			wantBody := ""
			if tt.body[0] == '{' {
				wantBody = tt.body
			}
			if string(got.Body) != wantBody {
				t.Errorf("body %q, want %q", got.Body, wantBody)
			}
			got.Body = nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}
