package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/internal/benchcpu"
	"github.com/agentcap/agentcap/internal/jsonvalue"
	"github.com/agentcap/agentcap/internal/schema"
)

// The benchmarks compare Executor.Execute (BenchmarkExecuteDynamic, named
// for the method's earlier name so that its results stay comparable)
// with the same work written by hand:
//
//   - "Floor" does exactly the executor's data work with the same
//     primitives, and nothing else: the arguments parsed once into a tree
//     (jsonvalue.Parse; no raw members, as the identity has no Authorizer),
//     validated (schema.Validator.Validate) and
//     decoded from that tree with the key check (schema.Decoder), the
//     handler, the result encoded (encoding/json) and validated as text
//     (schema.Validator.ValidateJSON) unless its type implies its schema
//     (schema.ImpliedBy), as the executor does. It isolates what the executor itself
//     adds: lookup, stages, hooks dispatch, error mapping, span and metrics
//     calls, and the timeout context.
//   - "ByHand" is what an application would write without agentcap:
//     encoding/json into any, the same schema through santhosh-tekuri
//     directly, encoding/json into the struct, the handler, encoding/json
//     out, and the output validated the same way.

type smallIn struct {
	Account  string  `json:"account_id" minLength:"1"`
	Amount   float64 `json:"amount" exclusiveMinimum:"0"`
	Currency string  `json:"currency" enum:"USD,EUR,GBP"`
}

type smallOut struct {
	Account string  `json:"account_id"`
	Balance float64 `json:"balance"`
	OK      bool    `json:"ok"`
}

type address struct {
	Street  string `json:"street" minLength:"1"`
	City    string `json:"city" minLength:"1"`
	Zip     string `json:"zip" pattern:"^[0-9]{5}$"`
	Country string `json:"country" enum:"US,DE,FR"`
}

type party struct {
	Name    string  `json:"name" minLength:"1"`
	Email   string  `json:"email" maxLength:"200"`
	Address address `json:"address"`
}

type nestedIn struct {
	ID       string   `json:"id" minLength:"1"`
	Amount   float64  `json:"amount" minimum:"0"`
	Currency string   `json:"currency" enum:"USD,EUR,GBP"`
	Priority int      `json:"priority" minimum:"1" maximum:"5"`
	Tags     []string `json:"tags" maxItems:"10"`
	Urgent   bool     `json:"urgent"`
	Note     string   `json:"note,omitempty" maxLength:"500"`
	From     party    `json:"from"`
	To       party    `json:"to"`
}

type nestedOut struct {
	ID     string `json:"id"`
	Status string `json:"status" enum:"accepted,rejected"`
	Fields int    `json:"fields"`
}

var (
	smallArgs  = []byte(`{"account_id":"acc_123","amount":12.5,"currency":"EUR"}`)
	nestedArgs = []byte(`{"id":"ord_1","amount":99.95,"currency":"USD","priority":3,"tags":["a","b"],"urgent":true,` +
		`"from":{"name":"Alice","email":"alice@example.com","address":{"street":"1 Main St","city":"Springfield","zip":"12345","country":"US"}},` +
		`"to":{"name":"Bob","email":"bob@example.com","address":{"street":"2 Side St","city":"Shelbyville","zip":"54321","country":"DE"}}}`)
)

func smallHandler(_ context.Context, _ app, in smallIn) (smallOut, error) {
	return smallOut{Account: in.Account, Balance: 100 - in.Amount, OK: true}, nil
}

func nestedHandler(_ context.Context, _ app, in nestedIn) (nestedOut, error) {
	return nestedOut{ID: in.ID, Status: "accepted", Fields: 20}, nil
}

func benchExecutor(b *testing.B) *core.Executor {
	reg := core.MustRegistry(
		core.MustDefine("small", "Small input.", smallHandler),
		core.MustDefine("nested", "Nested 20-field input.", nestedHandler),
	)
	return core.MustExecutor(reg, func(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (app, error) {
		return app{User: id.UserID}, nil
	}, core.Config{})
}

func BenchmarkExecuteDynamic(b *testing.B) {
	e := benchExecutor(b)
	ctx := context.Background()
	id := caller("u")
	for _, bc := range []struct {
		name string
		args []byte
	}{{"small", smallArgs}, {"nested", nestedArgs}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			defer benchcpu.Report(b)()
			for b.Loop() {
				if _, err := e.Execute(ctx, bc.name, id, bc.args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// floorPath does the executor's data work and nothing else.
func floorPath[In, Out any](b *testing.B, args []byte, handler func(context.Context, app, In) (Out, error)) {
	inSchema, _ := schema.For(reflect.TypeFor[In]())
	outSchema, _ := schema.For(reflect.TypeFor[Out]())
	inV, err := schema.Compile(inSchema)
	if err != nil {
		b.Fatal(err)
	}
	outV, err := schema.Compile(outSchema)
	if err != nil {
		b.Fatal(err)
	}
	dec, err := schema.NewDecoder(reflect.TypeFor[In]())
	if err != nil {
		b.Fatal(err)
	}
	implied := schema.ImpliedBy(reflect.TypeFor[Out]())
	ctx := context.Background()
	b.ReportAllocs()
	defer benchcpu.Report(b)()
	for b.Loop() {
		tree, err := jsonvalue.Parse(args)
		if _, isObject := tree.(map[string]any); err != nil || !isObject {
			b.Fatal(err)
		}
		if v := inV.Validate(tree); v != nil {
			b.Fatal(v)
		}
		in := new(In)
		if v, err := dec.Decode(tree, in); v != nil || err != nil {
			b.Fatal(v, err)
		}
		// The executor hands the value on as an any.
		var boxed any = *in
		out, err := handler(ctx, app{User: "u"}, boxed.(In))
		if err != nil {
			b.Fatal(err)
		}
		data, err := json.Marshal(out)
		if err != nil {
			b.Fatal(err)
		}
		if implied {
			continue
		}
		if v, err := outV.ValidateJSON(data); v != nil || err != nil {
			b.Fatal(v, err)
		}
	}
}

func BenchmarkFloor(b *testing.B) {
	b.Run("small", func(b *testing.B) { floorPath(b, smallArgs, smallHandler) })
	b.Run("nested", func(b *testing.B) { floorPath(b, nestedArgs, nestedHandler) })
}

// byHandPath is the same work with encoding/json and the schema library
// used directly.
func byHandPath[In, Out any](b *testing.B, args []byte, handler func(context.Context, app, In) (Out, error)) {
	compile := func(doc []byte) *jsonschema.Schema {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
		if err != nil {
			b.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("mem:///s.json", v); err != nil {
			b.Fatal(err)
		}
		s, err := c.Compile("mem:///s.json")
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	inSchema, _ := schema.For(reflect.TypeFor[In]())
	outSchema, _ := schema.For(reflect.TypeFor[Out]())
	inS, outS := compile(inSchema), compile(outSchema)
	decodeAny := func(data []byte) any {
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			b.Fatal(err)
		}
		return v
	}
	ctx := context.Background()
	b.ReportAllocs()
	defer benchcpu.Report(b)()
	for b.Loop() {
		if err := inS.Validate(decodeAny(args)); err != nil {
			b.Fatal(err)
		}
		var in In
		if err := json.Unmarshal(args, &in); err != nil {
			b.Fatal(err)
		}
		out, err := handler(ctx, app{User: "u"}, in)
		if err != nil {
			b.Fatal(err)
		}
		data, err := json.Marshal(out)
		if err != nil {
			b.Fatal(err)
		}
		if err := outS.Validate(decodeAny(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkByHand(b *testing.B) {
	b.Run("small", func(b *testing.B) { byHandPath(b, smallArgs, smallHandler) })
	b.Run("nested", func(b *testing.B) { byHandPath(b, nestedArgs, nestedHandler) })
}
