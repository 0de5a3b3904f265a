package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
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
	e := mustExec(t, core.Config{}, def)
	for _, tc := range []struct {
		args  string
		stage agentcap.Stage
	}{{`{"v":"boom"}`, agentcap.StageInput}, {`{"v":"out"}`, agentcap.StageOutput}} {
		_, err := e.Execute(context.Background(), "explode", caller("a"), []byte(tc.args))
		ce := coreErr(t, err)
		if ce.Code != agentcap.CodeInternalError || ce.Stage != tc.stage || strings.Contains(ce.Message, "secret") {
			t.Errorf("%s: got %s at %s: %q", tc.args, ce.Code, ce.Stage, ce.Message)
		}
	}
	// In a batch, where items run on their own goroutines, a panic must not
	// take the process down either.
	results, err := e.ExecuteBatch(context.Background(), caller("a"), []core.BatchCall{
		{ID: "1", Capability: "explode", Arguments: json.RawMessage(`{"v":"boom"}`)},
		{ID: "2", Capability: "explode", Arguments: json.RawMessage(`{"v":"out"}`)},
		{ID: "3", Capability: "explode", Arguments: json.RawMessage(`{"v":"fine"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if results[0].Err == nil || results[1].Err == nil || results[2].Err != nil || string(results[2].Data) != `{"v":"fine"}` {
		t.Errorf("batch results = %+v", results)
	}
}

func TestPanicInAuthorizeIsAFailureNotARefusal(t *testing.T) {
	e := mustExec(t, core.Config{}, transferCap)
	args := []byte(`{"source_account":"a","destination_account":"b","amount":1,"currency":"USD"}`)
	// Even a panic that carries a refusal is a failure.
	for _, v := range []any{errors.New("secret"), agentcap.NewError(agentcap.CodeCapabilityNotGranted, "secret")} {
		id := authorizedBy(caller("a"), func(context.Context, *auth.Call) error { panic(v) })
		_, err := e.Execute(context.Background(), "transfer_money", id, args)
		ce := coreErr(t, err)
		if ce.Code != agentcap.CodeInternalError || ce.Stage != agentcap.StageAuthorize || ce.HTTPStatus() != 500 || strings.Contains(ce.Message, "secret") {
			t.Fatalf("%v: got %s at %s (%d)", v, ce.Code, ce.Stage, ce.HTTPStatus())
		}
	}
}
