package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/core"
)

// explosive panics in its JSON methods, which the executor calls while
// decoding the input and encoding the output.
type explosive string

func (e *explosive) UnmarshalJSON(b []byte) error {
	if string(b) == `"boom"` {
		panic("secret from UnmarshalJSON")
	}
	var s string
	err := json.Unmarshal(b, &s)
	*e = explosive(s)
	return err
}

func (e explosive) MarshalJSON() ([]byte, error) {
	if e == "boom-out" {
		panic("secret from MarshalJSON")
	}
	return json.Marshal(string(e))
}

func (explosive) JSONSchema() json.RawMessage { return json.RawMessage(`{"type":"string"}`) }

type explosiveIn struct {
	V explosive `json:"v"`
}

type explosiveOut struct {
	V explosive `json:"v"`
}

func TestPanicsInJSONMethodsAreRedacted(t *testing.T) {
	def := core.MustDefine("explode", "Echo a value through types with JSON methods.",
		func(_ context.Context, _ app, in explosiveIn) (explosiveOut, error) {
			if in.V == "out" {
				return explosiveOut{V: "boom-out"}, nil
			}
			return explosiveOut(in), nil
		})
	e := mustExec(t, core.ExecutorConfig[app, user]{}, def)
	for _, tc := range []struct {
		args  string
		stage core.Stage
	}{{`{"v":"boom"}`, core.StageInput}, {`{"v":"out"}`, core.StageOutput}} {
		_, err := e.ExecuteDynamic(context.Background(), "explode", user{ID: "a"}, []byte(tc.args), nil)
		ce := coreErr(t, err)
		if ce.Code != core.CodeExecutionFailed || ce.Stage != tc.stage || strings.Contains(ce.Message, "secret") {
			t.Errorf("%s: got %s at %s: %q", tc.args, ce.Code, ce.Stage, ce.Message)
		}
	}
	// In a batch, where items run on their own goroutines, a panic must not
	// take the process down either.
	results, err := e.ExecuteBatch(context.Background(), user{ID: "a"}, []core.BatchCall{
		{ID: "1", Capability: "explode", Arguments: json.RawMessage(`{"v":"boom"}`)},
		{ID: "2", Capability: "explode", Arguments: json.RawMessage(`{"v":"out"}`)},
		{ID: "3", Capability: "explode", Arguments: json.RawMessage(`{"v":"fine"}`)},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if results[0].Err == nil || results[1].Err == nil || results[2].Err != nil || string(results[2].Data) != `{"v":"fine"}` {
		t.Errorf("batch results = %+v", results)
	}
}

func TestPanicInAuthorizeIsAFailureNotARefusal(t *testing.T) {
	e := mustExec(t, core.ExecutorConfig[app, user]{}, transferCap)
	args := []byte(`{"source_account":"a","destination_account":"b","amount":1,"currency":"USD"}`)
	_, err := e.ExecuteDynamic(context.Background(), "transfer_money", user{ID: "a"}, args,
		func(context.Context, *core.Invocation) error { panic(errors.New("secret")) })
	ce := coreErr(t, err)
	if ce.Code != core.CodeExecutionFailed || ce.Stage != core.StageAuthorize || ce.HTTPStatus() != 500 {
		t.Fatalf("got %s at %s (%d)", ce.Code, ce.Stage, ce.HTTPStatus())
	}
}
