package core_test

import (
	"context"
	"math"
	"testing"

	"github.com/agentcap/agentcap/core"
)

type plainOut struct {
	Value float64 `json:"value"`
	Label string  `json:"label"`
}

// A plain struct result is only encoded, not validated (nothing it can
// hold would fail its schema); what encoding/json refuses still fails the
// output stage, hidden.
func TestPlainOutputEncodingFailureIsHidden(t *testing.T) {
	def := core.MustDefine("plain", "Returns a value.", func(_ context.Context, _ app, in struct {
		Bad bool `json:"bad"`
	}) (plainOut, error) {
		if in.Bad {
			return plainOut{Value: math.NaN()}, nil
		}
		return plainOut{Value: 1.5, Label: "\xff"}, nil
	})
	e := mustExec(t, core.ExecutorConfig[app, user]{}, def)
	data, err := e.ExecuteDynamic(context.Background(), "plain", user{ID: "a"}, []byte(`{"bad":false}`), nil)
	if err != nil || string(data) != `{"value":1.5,"label":"\ufffd"}` {
		t.Fatalf("got %s, %v", data, err)
	}
	_, err = e.ExecuteDynamic(context.Background(), "plain", user{ID: "a"}, []byte(`{"bad":true}`), nil)
	ce := coreErr(t, err)
	if ce.Code != core.CodeInvalidOutput || ce.Stage != core.StageOutput || ce.WireCode() != core.WireInternalError {
		t.Fatalf("got %+v", ce)
	}
}
