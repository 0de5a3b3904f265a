package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/core"
)

type withAny struct {
	Meta map[string]any `json:"meta"`
}

type withChan struct {
	C chan int `json:"c"`
}

type withFunc struct {
	Items []struct {
		F func() `json:"f"`
	} `json:"items"`
}

type withIntKeys struct {
	M map[int]string `json:"m"`
}

type node struct {
	Next *node `json:"next,omitempty"`
}

func noop[In, Out any](context.Context, app, In) (Out, error) {
	var out Out
	return out, nil
}

func TestDefineRejects(t *testing.T) {
	tests := []struct {
		name    string
		define  func() error
		mention []string
	}{
		{"upper-case name", func() error {
			_, err := core.Define("Transfer", "d", noop[echoIn, echoOut])
			return err
		}, []string{"Transfer", "invalid name"}},
		{"dash in name", func() error {
			_, err := core.Define("transfer-money", "d", noop[echoIn, echoOut])
			return err
		}, []string{"transfer-money"}},
		{"empty dotted segment", func() error {
			_, err := core.Define("bank..transfer", "d", noop[echoIn, echoOut])
			return err
		}, []string{"bank..transfer"}},
		{"empty description", func() error {
			_, err := core.Define("x", "", noop[echoIn, echoOut])
			return err
		}, []string{"description"}},
		{"interface field", func() error {
			_, err := core.Define("x", "d", noop[withAny, echoOut])
			return err
		}, []string{`"x"`, "Meta"}},
		{"channel", func() error {
			_, err := core.Define("x", "d", noop[withChan, echoOut])
			return err
		}, []string{"C"}},
		{"nested func", func() error {
			_, err := core.Define("x", "d", noop[echoIn, withFunc])
			return err
		}, []string{"output", "F"}},
		{"non-string map keys", func() error {
			_, err := core.Define("x", "d", noop[withIntKeys, echoOut])
			return err
		}, []string{"M"}},
		{"recursive type", func() error {
			_, err := core.Define("x", "d", noop[node, echoOut])
			return err
		}, []string{"Next"}},
		{"required constraint not a field", func() error {
			_, err := core.Define("x", "d", noop[echoIn, echoOut], core.WithRequiredConstraints("amount"))
			return err
		}, []string{"amount"}},
		{"unit of an unknown amount", func() error {
			_, err := core.Define("x", "d", noop[transferIn, echoOut], core.WithUnit("total", "currency"))
			return err
		}, []string{"total"}},
		{"unknown unit", func() error {
			_, err := core.Define("x", "d", noop[transferIn, echoOut], core.WithUnit("amount", "unit"))
			return err
		}, []string{"unit"}},
		{"amount its own unit", func() error {
			_, err := core.Define("x", "d", noop[transferIn, echoOut], core.WithUnit("amount", "amount"))
			return err
		}, []string{"amount"}},
		{"amount with two units", func() error {
			_, err := core.Define("x", "d", noop[transferIn, echoOut], core.WithUnit("amount", "currency"), core.WithUnit("amount", "destination_account"))
			return err
		}, []string{"amount"}},
		{"unknown approval", func() error {
			_, err := core.Define("x", "d", noop[echoIn, echoOut], core.WithApproval("biometric"))
			return err
		}, []string{"biometric"}},
		{"unknown risk", func() error {
			_, err := core.Define("x", "d", noop[echoIn, echoOut], core.WithRisk("extreme"))
			return err
		}, []string{"extreme"}},
		{"relative location", func() error {
			_, err := core.Define("x", "d", noop[echoIn, echoOut], core.WithLocation("/execute"))
			return err
		}, []string{"/execute"}},
		{"explicit schema not JSON", func() error {
			_, err := core.Define("x", "d", noop[echoIn, echoOut], core.WithInputSchema([]byte(`{`)))
			return err
		}, []string{"input"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.define()
			if err == nil {
				t.Fatal("Define succeeded")
			}
			var de *core.DefinitionError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DefinitionError", err)
			}
			for _, m := range tt.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

func TestDefineMetadataAndSchemas(t *testing.T) {
	d := transferCap.Definition()
	if d.Name() != "transfer_money" || d.Approval() != core.ApprovalWebAuthn || d.Risk() != core.RiskHigh ||
		!cmp.Equal(d.RequiredConstraints(), []string{"destination_account"}) {
		t.Errorf("metadata = %q %q %q %v", d.Name(), d.Approval(), d.Risk(), d.RequiredConstraints())
	}
	var in struct {
		Type                 string                     `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(d.InputSchema(), &in); err != nil {
		t.Fatal(err)
	}
	if in.Type != "object" || len(in.Properties) != 5 || in.AdditionalProperties == nil || *in.AdditionalProperties {
		t.Errorf("input schema = %s", d.InputSchema())
	}
	if diff := cmp.Diff([]string{"source_account", "destination_account", "amount", "currency"}, in.Required); diff != "" {
		t.Errorf("required (-want +got):\n%s", diff)
	}
	for _, f := range []string{"source_account", "destination_account", "amount", "currency", "memo"} {
		if _, ok := in.Properties[f]; !ok {
			t.Errorf("input schema has no property %s", f)
		}
	}

	ping := core.MustDefine("ping", "Answer pong.", noop[core.NoInput, echoOut])
	var empty map[string]any
	if err := json.Unmarshal(ping.Definition().InputSchema(), &empty); err != nil {
		t.Fatal(err)
	}
	if props, ok := empty["properties"].(map[string]any); !ok || len(props) != 0 || empty["additionalProperties"] != false {
		t.Errorf("no-input schema = %s", ping.Definition().InputSchema())
	}
}

// TestWithUnit reads back the unit of an amount; a capability without
// one has none.
func TestWithUnit(t *testing.T) {
	d, err := core.Define("pay", "d", noop[transferIn, echoOut], core.WithUnit("amount", "currency"))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Definition().Units(); len(got) != 1 || got["amount"] != "currency" {
		t.Errorf("Units() = %v, want amount: currency", got)
	}
	plain, err := core.Define("plain", "d", noop[transferIn, echoOut])
	if err != nil {
		t.Fatal(err)
	}
	if got := plain.Definition().Units(); got != nil {
		t.Errorf("Units() without WithUnit = %v", got)
	}
}

func TestExplicitSchemaStillDecodesStrictly(t *testing.T) {
	// An explicit schema that admits any property must not reopen the
	// case-insensitive decoding hole.
	def := core.MustDefine("echo", "Echo.", func(_ context.Context, _ app, in echoIn) (echoOut, error) {
		return echoOut{Text: in.Text}, nil
	}, core.WithInputSchema([]byte(`{"type":"object","properties":{"text":{"type":"string"}}}`)))
	e := mustExec(t, core.Config{}, def)
	_, err := e.Execute(context.Background(), "echo", caller("a"), []byte(`{"TEXT":"x"}`))
	ce := coreErr(t, err)
	if ce.Code != agentcap.CodeInvalidRequest || len(ce.Details) != 1 || ce.Details[0].Path != "/TEXT" {
		t.Fatalf("got %+v", ce)
	}
}

func TestRegistry(t *testing.T) {
	a := core.MustDefine("b.second", "d", noop[echoIn, echoOut])
	b := core.MustDefine("a.first", "d", noop[echoIn, echoOut])
	reg, err := core.NewRegistry(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range reg.All() {
		names = append(names, d.Name())
	}
	if !cmp.Equal(names, []string{"a.first", "b.second"}) || reg.Len() != 2 {
		t.Errorf("order = %v", names)
	}
	if d, ok := reg.Lookup("a.first"); !ok || d != b.Definition() {
		t.Errorf("lookup failed")
	}
	dup := core.MustDefine("a.first", "again", noop[echoIn, echoOut])
	if _, err := core.NewRegistry(a, b, dup); err == nil || !strings.Contains(err.Error(), `"a.first"`) {
		t.Errorf("duplicate: err = %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustRegistry did not panic on a duplicate")
		}
	}()
	core.MustRegistry(b, dup)
}
