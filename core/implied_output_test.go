package core_test

import (
	"context"
	"math"
	"testing"

	"github.com/agentcap/agentcap"
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
	e := mustExec(t, core.Config{}, def)
	data, err := e.Execute(context.Background(), "plain", caller("a"), []byte(`{"bad":false}`))
	if err != nil || string(data) != `{"value":1.5,"label":"\ufffd"}` {
		t.Fatalf("got %s, %v", data, err)
	}
	_, err = e.Execute(context.Background(), "plain", caller("a"), []byte(`{"bad":true}`))
	ce := coreErr(t, err)
	if ce.Code != agentcap.CodeInternalError || ce.Stage != agentcap.StageOutput || ce.HTTPStatus() != 500 || ce.Message != "internal error" {
		t.Fatalf("got %+v", ce)
	}
}
