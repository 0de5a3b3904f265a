package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/core"
)

// entry is the element of the list results below.
type entry struct {
	ID   string `json:"id" minLength:"1"`
	Kind string `json:"kind" enum:"a,b"`
}

// listIn selects which result the list handlers return.
type listIn struct {
	Mode string `json:"mode" enum:"full,empty,nil,bad"`
}

func listEntries(_ context.Context, _ app, in listIn) ([]entry, error) {
	switch in.Mode {
	case "full":
		return []entry{{ID: "e1", Kind: "a"}, {ID: "e2", Kind: "b"}}, nil
	case "empty":
		return []entry{}, nil
	case "bad":
		return []entry{{ID: "e1", Kind: "z"}}, nil
	}
	return nil, nil
}

func mapEntries(_ context.Context, _ app, in listIn) (map[string]entry, error) {
	switch in.Mode {
	case "full":
		return map[string]entry{"e1": {ID: "e1", Kind: "a"}}, nil
	case "empty":
		return map[string]entry{}, nil
	case "bad":
		return map[string]entry{"e1": {ID: ""}}, nil
	}
	return nil, nil
}

func pointerEntry(_ context.Context, _ app, in listIn) (*entry, error) {
	if in.Mode == "nil" {
		return nil, nil
	}
	return &entry{ID: "e1", Kind: "a"}, nil
}

var (
	listCap    = core.MustDefine("list_entries", "List the entries.", listEntries)
	mapCap     = core.MustDefine("map_entries", "Map the entries by id.", mapEntries)
	pointerCap = core.MustDefine("pointer_entry", "One entry, behind a pointer.", pointerEntry)
	countCap   = core.MustDefine("count_entries", "Count the entries.", func(context.Context, app, core.NoInput) (int, error) {
		return 2, nil
	})
	tagsCap = core.MustDefine("entry_tags", "The tags of the entries.", func(context.Context, app, core.NoInput) ([]string, error) {
		return []string{"x", "y"}, nil
	})
)

func TestArrayOutputSchemas(t *testing.T) {
	const entrySchema = `{"type":"object","properties":{"id":{"type":"string","minLength":1},"kind":{"type":"string","enum":["a","b"]}},` +
		`"required":["id","kind"],"additionalProperties":false}`
	const head = `{"$schema":"https://json-schema.org/draft/2020-12/schema",`
	tests := []struct {
		def  core.Definer
		want string
	}{
		{listCap, head + `"type":"array","items":` + entrySchema + `}`},
		{mapCap, head + `"type":"object","properties":{},"additionalProperties":` + entrySchema + `}`},
		{pointerCap, head + entrySchema[1:]},
		{countCap, head + `"type":"integer"}`},
		{tagsCap, head + `"type":"array","items":{"type":"string"}}`},
	}
	for _, tt := range tests {
		d := tt.def.Definition()
		if diff := cmp.Diff(tt.want, string(d.OutputSchema())); diff != "" {
			t.Errorf("%s: output schema (-want +got):\n%s", d.Name(), diff)
		}
	}
}

func TestArrayOutputExecute(t *testing.T) {
	e := mustExec(t, core.Config{}, listCap, mapCap, pointerCap, countCap, tagsCap)
	tests := []struct {
		name, capability, args string
		want                   string        // the data, when the call succeeds
		code                   agentcap.Code // the error code otherwise
	}{
		{"array", "list_entries", `{"mode":"full"}`, `[{"id":"e1","kind":"a"},{"id":"e2","kind":"b"}]`, ""},
		{"empty array", "list_entries", `{"mode":"empty"}`, `[]`, ""},
		{"nil slice is an empty array", "list_entries", `{"mode":"nil"}`, `[]`, ""},
		{"element outside the schema", "list_entries", `{"mode":"bad"}`, "", agentcap.CodeInternalError},
		{"map", "map_entries", `{"mode":"full"}`, `{"e1":{"id":"e1","kind":"a"}}`, ""},
		{"empty map", "map_entries", `{"mode":"empty"}`, `{}`, ""},
		{"nil map is an empty object", "map_entries", `{"mode":"nil"}`, `{}`, ""},
		{"map value outside the schema", "map_entries", `{"mode":"bad"}`, "", agentcap.CodeInternalError},
		{"pointer", "pointer_entry", `{"mode":"full"}`, `{"id":"e1","kind":"a"}`, ""},
		{"nil pointer fails the output stage", "pointer_entry", `{"mode":"nil"}`, "", agentcap.CodeInternalError},
		{"integer", "count_entries", ``, `2`, ""},
		{"strings", "entry_tags", ``, `["x","y"]`, ""},
		{"arguments stay an object", "list_entries", `["full"]`, "", agentcap.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e.Execute(context.Background(), tt.capability, caller("alice"), []byte(tt.args))
			if tt.code != "" {
				ce := coreErr(t, err)
				if ce.Code != tt.code || out != nil {
					t.Fatalf("got %s, %+v; want code %s", out, ce, tt.code)
				}
				if tt.code == agentcap.CodeInternalError && (ce.Stage != agentcap.StageOutput || ce.HTTPStatus() != 500 || ce.Message != "internal error") {
					t.Errorf("stage %s, status %d, message %q; want output, 500, a generic message", ce.Stage, ce.HTTPStatus(), ce.Message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Errorf("data = %s, want %s", out, tt.want)
			}
		})
	}
}

func TestNilPointerOutputNamesNull(t *testing.T) {
	e := mustExec(t, core.Config{}, pointerCap)
	_, err := e.Execute(context.Background(), "pointer_entry", caller("alice"), []byte(`{"mode":"nil"}`))
	ce := coreErr(t, err)
	// The cause, kept for logs, says why; the caller only sees an
	// internal error.
	if cause := errors.Unwrap(ce); cause == nil || !strings.Contains(cause.Error(), "got null") {
		t.Errorf("cause = %v", cause)
	}
	if ce.Message != "internal error" {
		t.Errorf("public message = %q", ce.Message)
	}
}

func TestArrayOutputTypedCall(t *testing.T) {
	var mu sync.Mutex
	var ends []core.Event
	hook := func(_ context.Context, ev core.Event) error {
		if ev.Phase == core.PhaseEnd {
			mu.Lock()
			ends = append(ends, ev)
			mu.Unlock()
		}
		return nil
	}
	e := mustExec(t, core.Config{Hooks: []core.Hook{hook}}, listCap, mapCap, pointerCap)
	ctx := context.Background()

	got, err := core.Call(ctx, e, listCap, caller("alice"), listIn{Mode: "full"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]entry{{ID: "e1", Kind: "a"}, {ID: "e2", Kind: "b"}}, got); diff != "" {
		t.Errorf("typed result (-want +got):\n%s", diff)
	}

	// The typed caller gets the handler's value as it is; only the JSON
	// sent is [].
	got, err = core.Call(ctx, e, listCap, caller("alice"), listIn{Mode: "nil"})
	if err != nil || got != nil {
		t.Fatalf("nil result: %#v, %v; want a nil slice", got, err)
	}
	m, err := core.Call(ctx, e, mapCap, caller("alice"), listIn{Mode: "nil"})
	if err != nil || m != nil {
		t.Fatalf("nil map result: %#v, %v; want a nil map", m, err)
	}
	if _, err := core.Call(ctx, e, listCap, caller("alice"), listIn{Mode: "bad"}); coreErr(t, err).Code != agentcap.CodeInternalError {
		t.Errorf("bad element: %v", err)
	}
	p, err := core.Call(ctx, e, pointerCap, caller("alice"), listIn{Mode: "nil"})
	if p != nil || coreErr(t, err).Code != agentcap.CodeInternalError {
		t.Errorf("nil pointer: %v, %v; want internal_error", p, err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(ends) != 3 {
		t.Fatalf("%d end events, want 3", len(ends))
	}
	if out, ok := ends[1].Output.([]entry); !ok || out != nil || string(ends[1].OutputJSON) != `[]` {
		t.Errorf("end event of the nil slice: Output %#v, OutputJSON %s", ends[1].Output, ends[1].OutputJSON)
	}
	if string(ends[2].OutputJSON) != `{}` {
		t.Errorf("end event of the nil map: OutputJSON %s", ends[2].OutputJSON)
	}
}

func TestArrayOutputBatch(t *testing.T) {
	e := mustExec(t, core.Config{BatchConcurrency: 2}, listCap, mapCap, pointerCap, tagsCap)
	results, err := e.ExecuteBatch(context.Background(), caller("alice"), []core.BatchCall{
		{ID: "full", Capability: "list_entries", Arguments: json.RawMessage(`{"mode":"full"}`)},
		{ID: "nil", Capability: "list_entries", Arguments: json.RawMessage(`{"mode":"nil"}`)},
		{ID: "bad", Capability: "list_entries", Arguments: json.RawMessage(`{"mode":"bad"}`)},
		{ID: "map", Capability: "map_entries", Arguments: json.RawMessage(`{"mode":"nil"}`)},
		{ID: "pointer", Capability: "pointer_entry", Arguments: json.RawMessage(`{"mode":"nil"}`)},
		{ID: "tags", Capability: "entry_tags"},
	})
	if err != nil {
		t.Fatal(err)
	}
	type item struct{ ID, Data, Code string }
	var got []item
	for _, r := range results {
		it := item{ID: r.ID, Data: string(r.Data)}
		if r.Err != nil {
			it.Code = string(r.Err.Code)
		}
		got = append(got, it)
	}
	want := []item{
		{"full", `[{"id":"e1","kind":"a"},{"id":"e2","kind":"b"}]`, ""},
		{"nil", `[]`, ""},
		{"bad", "", "internal_error"},
		{"map", `{}`, ""},
		{"pointer", "", "internal_error"},
		{"tags", `["x","y"]`, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("batch (-want +got):\n%s", diff)
	}
}

// TestNilEncodingIsFresh makes sure the [] of a nil result is not shared:
// a caller may append to the data it was given.
func TestNilEncodingIsFresh(t *testing.T) {
	e := mustExec(t, core.Config{}, listCap)
	first, err := e.Execute(context.Background(), "list_entries", caller("alice"), []byte(`{"mode":"nil"}`))
	if err != nil {
		t.Fatal(err)
	}
	first[0] = '!'
	second, err := e.Execute(context.Background(), "list_entries", caller("alice"), []byte(`{"mode":"nil"}`))
	if err != nil || string(second) != `[]` {
		t.Fatalf("second call: %s, %v", second, err)
	}
}

func TestExplicitOutputSchemaNeedNotBeAnObject(t *testing.T) {
	def, err := core.Define("ids", "List ids.", func(context.Context, app, core.NoInput) ([]string, error) {
		return nil, nil
	}, core.WithOutputSchema([]byte(`{"type":"array","items":{"type":"string","pattern":"^id_"},"maxItems":3}`)))
	if err != nil {
		t.Fatal(err)
	}
	e := mustExec(t, core.Config{}, def)
	out, err := e.Execute(context.Background(), "ids", caller("alice"), nil)
	if err != nil || string(out) != `[]` {
		t.Fatalf("got %s, %v; want []", out, err)
	}
}

func TestOutputTypesRefused(t *testing.T) {
	tests := []struct {
		name    string
		define  func() error
		mention []string
	}{
		{"channel", func() error {
			_, err := core.Define("x", "d", noop[echoIn, chan int])
			return err
		}, []string{"output", "chan int"}},
		{"func", func() error {
			_, err := core.Define("x", "d", noop[echoIn, func()])
			return err
		}, []string{"output", "func"}},
		{"complex", func() error {
			_, err := core.Define("x", "d", noop[echoIn, []complex128])
			return err
		}, []string{"output", "[]", "complex128"}},
		{"interface", func() error {
			_, err := core.Define("x", "d", noop[echoIn, []any])
			return err
		}, []string{"output", "interface"}},
		{"non-string map keys", func() error {
			_, err := core.Define("x", "d", noop[echoIn, map[int]entry])
			return err
		}, []string{"output", "map key type int"}},
		{"slice input", func() error {
			_, err := core.Define("x", "d", noop[[]entry, echoOut])
			return err
		}, []string{"input", "arguments are a JSON object", "[]core_test.entry"}},
		{"string input", func() error {
			_, err := core.Define("x", "d", noop[string, echoOut])
			return err
		}, []string{"input", "arguments are a JSON object"}},
		{"map input", func() error {
			_, err := core.Define("x", "d", noop[map[string]string, echoOut])
			return err
		}, []string{"input", "arguments are a JSON object"}},
		{"explicit array input schema", func() error {
			_, err := core.Define("x", "d", noop[echoIn, echoOut], core.WithInputSchema([]byte(`{"type":"array"}`)))
			return err
		}, []string{"input schema", "not an object schema"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.define()
			var de *core.DefinitionError
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T) is not a *DefinitionError", err, err)
			}
			for _, m := range tt.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

func BenchmarkExecuteArrayOutput(b *testing.B) {
	reg := core.MustRegistry(listCap)
	e := core.MustExecutor(reg, createContext, core.Config{})
	id := caller("alice")
	for _, mode := range []string{"full", "nil"} {
		args := []byte(`{"mode":"` + mode + `"}`)
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Execute(context.Background(), "list_entries", id, args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
