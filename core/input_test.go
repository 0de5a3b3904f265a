package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

// currency normalises its value when decoded, as a money type might.
type currency string

func (c *currency) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	switch s = strings.ToUpper(s); s {
	case "USD", "EUR":
		*c = currency(s)
		return nil
	}
	return errors.New("unknown currency " + s)
}

func (currency) JSONSchema() json.RawMessage {
	return json.RawMessage(`{"type":"string","pattern":"^(?i:usd|eur)$"}`)
}

type lineIn struct {
	SKU string `json:"sku"`
	Qty uint8  `json:"qty"`
}

type orderIn struct {
	Count    int               `json:"count"`
	Big      int64             `json:"big,omitempty"`
	Currency currency          `json:"currency"`
	When     *time.Time        `json:"when,omitempty"`
	Lines    []lineIn          `json:"lines,omitempty"`
	ByKey    map[string]lineIn `json:"by_key,omitempty"`
}

func echoOrder(_ context.Context, _ app, in orderIn) (orderIn, error) { return in, nil }

// TestDecodeViolations covers what the schema admits and the Go type does
// not hold: each is an invalid_input violation at its own path.
func TestDecodeViolations(t *testing.T) {
	derived := core.MustDefine("order", "Echo an order.", echoOrder)
	loose := core.MustDefine("loose_order", "Echo an order under a loose schema.", echoOrder,
		core.WithInputSchema([]byte(`{"type":"object","properties":{"count":{"type":"number"},"currency":{"type":"string"}}}`)))
	e := mustExec(t, core.Config{}, derived, loose)
	tests := []struct {
		name, capability, args string
		want                   []agentcap.Violation
	}{
		{"integer written with a fraction", "order", `{"count":3.0,"currency":"usd"}`,
			[]agentcap.Violation{{Path: "/count", Message: "cannot be decoded as int"}}},
		{"int64 out of range", "order", `{"count":1,"big":1e30,"currency":"usd"}`,
			[]agentcap.Violation{{Path: "/big", Message: "cannot be decoded as int64"}}},
		{"nested, with the index", "order", `{"count":1,"currency":"usd","lines":[{"sku":"a","qty":1},{"sku":"b","qty":2.0}]}`,
			[]agentcap.Violation{{Path: "/lines/1/qty", Message: "cannot be decoded as uint8"}}},
		{"a date-time time.Time refuses", "order", `{"count":1,"currency":"usd","when":"2016-12-31T23:59:60Z"}`,
			[]agentcap.Violation{{Path: "/when", Message: "cannot be decoded as time.Time"}}},
		{"loose schema, every value reported, sorted by path", "loose_order", `{"count":0.5,"currency":"gbp","lines":"x"}`,
			[]agentcap.Violation{
				{Path: "/count", Message: "cannot be decoded as int"},
				{Path: "/currency", Message: "cannot be decoded as core_test.currency"},
				{Path: "/lines", Message: "cannot be decoded as []core_test.lineIn"},
			}},
		{"loose schema, case-variant key in a map value", "loose_order", `{"count":1,"currency":"usd","by_key":{"a":{"SKU":"x"}}}`,
			[]agentcap.Violation{{Path: "/by_key/a/SKU", Message: `unknown field; field names are case-sensitive, did you mean "sku"?`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Execute(context.Background(), tt.capability, caller("a"), []byte(tt.args))
			ce := coreErr(t, err)
			if ce.Code != agentcap.CodeInvalidRequest || ce.Stage != agentcap.StageInput {
				t.Fatalf("got %+v", ce)
			}
			if diff := cmp.Diff(tt.want, ce.Details); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodedValue checks that what reaches the handler is what
// encoding/json would have built, normalising types included.
func TestDecodedValue(t *testing.T) {
	def := core.MustDefine("order", "Echo an order.", echoOrder)
	e := mustExec(t, core.Config{}, def)
	args := `{"count":-3,"big":9007199254740993,"currency":"eur","when":"2024-07-01T12:00:00.5+02:00",` +
		`"lines":[{"sku":"a","qty":255}],"by_key":{"k":{"sku":"b","qty":0}}}`
	var seen orderIn
	id := authorizedBy(caller("a"), func(_ context.Context, call *auth.Call) error {
		seen = call.Input.(orderIn)
		if got, _ := call.Normalized("currency"); string(got) != `"EUR"` {
			t.Errorf("Normalized(currency) = %s", got)
		}
		if got := string(call.Arguments["currency"]); got != `"eur"` {
			t.Errorf("Arguments[currency] = %s", got)
		}
		return nil
	})
	_, err := e.Execute(context.Background(), "order", id, []byte(args))
	if err != nil {
		t.Fatal(err)
	}
	var want orderIn
	if err := json.Unmarshal([]byte(args), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("decoded input differs from encoding/json (-want +got):\n%s", diff)
	}
	if seen.Currency != "EUR" || seen.Big != 9007199254740993 {
		t.Errorf("decoded %+v", seen)
	}
}

// TestTextDecodedTypes: input types the tree decoder leaves to
// encoding/json, under an explicit schema, still decode strictly.
func TestTextDecodedTypes(t *testing.T) {
	def := core.MustDefine("meta", "Echo metadata.", func(_ context.Context, _ app, in withAny) (echoOut, error) {
		return echoOut{Text: in.Meta["k"].(string)}, nil
	}, core.WithInputSchema([]byte(`{"type":"object","properties":{"meta":{"type":"object"}},"additionalProperties":true}`)))
	e := mustExec(t, core.Config{}, def)
	out, err := e.Execute(context.Background(), "meta", caller("a"), []byte(`{"meta":{"k":"v"}}`))
	if err != nil || string(out) != `{"text":"v","user":""}` {
		t.Fatalf("got %s, %v", out, err)
	}
	_, err = e.Execute(context.Background(), "meta", caller("a"), []byte(`{"Meta":{"k":"v"}}`))
	if ce := coreErr(t, err); ce.Code != agentcap.CodeInvalidRequest || len(ce.Details) != 1 || ce.Details[0].Path != "/Meta" {
		t.Fatalf("got %+v", ce)
	}
}

// TestArgumentsParsedAlikeWithAndWithoutAuthorizer: the arguments are
// parsed without their raw members when the identity has no Authorizer
// to show them to; the answers must not change.
func TestArgumentsParsedAlikeWithAndWithoutAuthorizer(t *testing.T) {
	e := mustExec(t, core.Config{}, transferCap)
	allow := authorizedBy(caller("a"), func(context.Context, *auth.Call) error { return nil })
	for _, args := range []string{
		`[1,2]`, `"x"`, `1.5`, `true`, `{"amount":`, `{} x`, `{"a":1,"a":2}`, `{"source_account":"\ud800"}`,
		`{"source_account":"a","destination_account":"b","amount":1,"currency":"USD","Memo":"x"}`,
	} {
		_, without := e.Execute(context.Background(), "transfer_money", caller("a"), []byte(args))
		_, with := e.Execute(context.Background(), "transfer_money", allow, []byte(args))
		a, b := coreErr(t, without), coreErr(t, with)
		if a.Code != agentcap.CodeInvalidRequest || len(a.Details) == 0 {
			t.Errorf("%s: got %+v", args, a)
		}
		if diff := cmp.Diff(a.Details, b.Details); diff != "" || a.Code != b.Code {
			t.Errorf("%s: answers differ with an Authorizer (-without +with):\n%s", args, diff)
		}
	}
}
