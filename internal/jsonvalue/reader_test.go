package jsonvalue_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// readTree builds the tree of the value at r's position with nothing but
// the Reader's methods, the way a caller walks a document.
func readTree(r *jsonvalue.Reader) (any, error) {
	k, err := r.Peek()
	if err != nil {
		return nil, err
	}
	switch k {
	case jsonvalue.KindNull:
		return nil, r.ReadNull()
	case jsonvalue.KindBool:
		return r.ReadBool()
	case jsonvalue.KindNumber:
		return r.ReadNumber()
	case jsonvalue.KindString:
		return r.ReadString()
	case jsonvalue.KindArray:
		if err := r.BeginArray(); err != nil {
			return nil, err
		}
		out := []any{}
		for {
			more, err := r.NextElement()
			if err != nil {
				return nil, err
			}
			if !more {
				return out, nil
			}
			v, err := readTree(r)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	if err := r.BeginObject(); err != nil {
		return nil, err
	}
	out := map[string]any{}
	for {
		key, more, err := r.NextMember()
		if err != nil {
			return nil, err
		}
		if !more {
			return out, nil
		}
		v, err := readTree(r)
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
}

func readDocument(data []byte) (any, error) {
	var r jsonvalue.Reader
	r.Reset(data)
	v, err := readTree(&r)
	if err != nil {
		return nil, err
	}
	return v, r.Finish()
}

func skipDocument(data []byte) error {
	var r jsonvalue.Reader
	r.Reset(data)
	if err := r.Skip(); err != nil {
		return err
	}
	return r.Finish()
}

// readerAgrees fails unless reading data with a Reader, both value by
// value and with Skip, accepts exactly what Parse accepts, with the same
// tree, and refuses with an error of the same type.
func readerAgrees(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := jsonvalue.Parse(data)
	got, gotErr := readDocument(data)
	skipErr := skipDocument(data)
	if wantErr == nil {
		if gotErr != nil || skipErr != nil {
			t.Fatalf("Parse accepts %q, the Reader refuses it: %v / %v", data, gotErr, skipErr)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("Reader tree of %q differs (-Parse +Reader):\n%s", data, cmp.Diff(want, got))
		}
		return
	}
	if gotErr == nil || skipErr == nil {
		t.Fatalf("Parse refuses %q (%v), the Reader accepts it (%v / %v)", data, wantErr, gotErr, skipErr)
	}
	var wantDup, gotDup, skipDup *jsonvalue.DuplicateKeyError
	if errors.As(wantErr, &wantDup) != errors.As(gotErr, &gotDup) || errors.As(wantErr, &wantDup) != errors.As(skipErr, &skipDup) {
		t.Fatalf("%q: Parse error %v, Reader errors %v / %v", data, wantErr, gotErr, skipErr)
	}
}

func TestReader(t *testing.T) {
	for _, doc := range []string{
		`null`, ` true `, `false`, `-0.5e+10`, `"a\u00e9\ud83d\ude00"`, `{}`, `[]`, `[ ]`, `{ }`,
		`{"a":[1,2,{"b":null}],"c":"d"}`, ` {"x" : { "y" : [ ] } , "z":[[],{}]} `,
		`{"a":1,"a":2}`, `[{"k":1,"k":1}]`, `{"a":{"b":1},"c":{"b":2}}`,
		`{"1":0,"2":0,"3":0,"4":0,"5":0,"6":0,"7":0,"8":0,"9":0,"10":0,"3":1}`,
		`{"1":0,"2":0,"3":0,"4":0,"5":0,"6":0,"7":0,"8":0,"9":0,"10":0}`,
		`[01]`, `"\ud800"`, "\"\xff\"", `{"a":1,}`, `[1,]`, `[1 2]`, `{"a" 1}`, `{"a":1 "b":2}`, `{1:2}`, `{,}`,
		`1e`, `1e401`, `tru`, `nul`, `falsy`, `[`, `{`, `{"a"`, `{"a":`, `[1`, `"`, `}`, `]`, `1 2`, ``,
		strings.Repeat(`[`, jsonvalue.MaxDepth) + strings.Repeat(`]`, jsonvalue.MaxDepth),
		strings.Repeat(`[`, jsonvalue.MaxDepth+1) + strings.Repeat(`]`, jsonvalue.MaxDepth+1),
		strings.Repeat(`{"a":`, jsonvalue.MaxDepth+1) + `1` + strings.Repeat(`}`, jsonvalue.MaxDepth+1),
	} {
		readerAgrees(t, []byte(doc))
	}
}

func TestReaderRaw(t *testing.T) {
	var r jsonvalue.Reader
	r.Reset([]byte(`{"a": [1, {"b":"c"}] , "d":true}`))
	if _, err := r.Peek(); err != nil {
		t.Fatal(err)
	}
	if err := r.BeginObject(); err != nil {
		t.Fatal(err)
	}
	key, more, err := r.NextMember()
	if err != nil || !more || key != "a" {
		t.Fatalf("NextMember = %q, %v, %v", key, more, err)
	}
	if _, err := r.Peek(); err != nil {
		t.Fatal(err)
	}
	start := r.Offset()
	if err := r.Skip(); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Raw(start), `[1, {"b":"c"}]`; got != want {
		t.Errorf("Raw = %q, want %q", got, want)
	}
	if key, more, err := r.NextMember(); err != nil || !more || key != "d" {
		t.Fatalf("NextMember = %q, %v, %v", key, more, err)
	}
	if b, err := r.ReadBool(); err != nil || !b {
		t.Fatalf("ReadBool = %v, %v", b, err)
	}
	if _, more, err := r.NextMember(); err != nil || more {
		t.Fatalf("the object did not close: %v, %v", more, err)
	}
	if err := r.Finish(); err != nil {
		t.Fatal(err)
	}
}

func TestReaderReuse(t *testing.T) {
	var r jsonvalue.Reader
	r.Reset([]byte(`{"a":{"b":`))
	if err := r.Skip(); err == nil {
		t.Fatal("truncated document accepted")
	}
	// A Reader left inside an object by an error reads the next document
	// from scratch: the keys of the first must not count as duplicates.
	r.Reset([]byte(`{"a":{"b":1}}`))
	if err := r.Skip(); err != nil {
		t.Fatal(err)
	}
	data := []byte(`{"k":[1,"x",{"y":null}],"z":false}`)
	if allocs := testing.AllocsPerRun(100, func() {
		r.Reset(data)
		if err := r.Skip(); err != nil {
			t.Fatal(err)
		}
	}); allocs > 1 {
		t.Errorf("a reused Reader allocates %v times per document, want at most the copy", allocs)
	}
}

func TestKindString(t *testing.T) {
	got := []string{}
	for k := jsonvalue.Kind(0); k <= jsonvalue.KindObject; k++ {
		got = append(got, k.String())
	}
	want := []string{"invalid", "null", "boolean", "number", "string", "array", "object"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kind names (-want +got):\n%s", diff)
	}
}

// FuzzReader checks the Reader against Parse: the same verdict, the same
// tree, the same kind of error.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `true`, `-0.5e+10`, `"a\u00e9\ud83d\ude00"`, `{"a":[1,2,{"b":null}],"c":"d"}`,
		`{"a":1,"a":2}`, `[01]`, `"\ud800"`, "\"\xff\"", `{"a":1,}`, `[1 2]`, ` {"x" : { "y" : [ ] } } `,
		`{"1":0,"2":0,"3":0,"4":0,"5":0,"6":0,"7":0,"8":0,"9":0,"1":0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		readerAgrees(t, data)
	})
}

// FuzzAppend checks that Append writes text that Parse reads back as the
// same tree, and that encoding/json reads the same way.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{
		`{"b":[1,"x\n\u0000\"\\",{"c":null}],"a":true}`, `"\u00e9\ud83d\ude00\u2028<>&"`, `-1.5e-300`, `[]`, `{}`, `1e310`, `[-1e-400]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, err := jsonvalue.Parse(data)
		if err != nil {
			return
		}
		text := jsonvalue.Append(nil, tree)
		back, err := jsonvalue.Parse(text)
		if err != nil {
			t.Fatalf("Append(%q) = %q, which Parse refuses: %v", data, text, err)
		}
		if !reflect.DeepEqual(tree, back) {
			t.Fatalf("Append(%q) = %q reads back differently:\n%s", data, text, cmp.Diff(tree, back))
		}
		// encoding/json, reading numbers as written (a float64 cannot hold
		// 1e310), must read both texts alike whenever it reads the input.
		std, err := decodeStd(data)
		if err != nil {
			return
		}
		stdBack, err := decodeStd(text)
		if err != nil || !reflect.DeepEqual(std, stdBack) {
			t.Fatalf("encoding/json reads %q and %q differently (%v)", data, text, err)
		}
	})
}

// decodeStd reads one JSON text with encoding/json, numbers as json.Number.
func decodeStd(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("text after the value: %v", err)
	}
	return v, nil
}

func TestAppend(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{nil, `null`},
		{true, `true`},
		{json.Number("-1.50e3"), `-1.50e3`},
		{"a\"\\\n\r\t\x01é\u2028<", `"a\"\\\n\r\t\u0001é` + "\u2028" + `<"`},
		{"bad\xffutf8", `"bad\ufffdutf8"`},
		{[]any{}, `[]`},
		{map[string]any{}, `{}`},
		{map[string]any{"b": []any{json.Number("1"), nil}, "a": map[string]any{"z": false, "y": "x"}}, `{"a":{"y":"x","z":false},"b":[1,null]}`},
	}
	for _, tt := range tests {
		if got := string(jsonvalue.Append([]byte("prefix:"), tt.in)); got != "prefix:"+tt.want {
			t.Errorf("Append(%#v) = %s, want prefix:%s", tt.in, got, tt.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Append of a float64 did not panic")
		}
	}()
	jsonvalue.Append(nil, 1.5)
}

// lenient are the Rules that read JSON as encoding/json does, but for
// duplicate keys.
var lenient = jsonvalue.Rules{MaxDepth: jsonvalue.ScanMaxDepth, AnyNumber: true, Replace: true}

func readWith(data []byte, rules jsonvalue.Rules) (any, error) {
	var r jsonvalue.Reader
	r.ResetText(string(data), rules)
	v, err := readTree(&r)
	if err != nil {
		return nil, err
	}
	return v, r.Finish()
}

// lenientAgrees fails unless a Reader under lenient reads data as
// encoding/json does: the same tree, or a refusal, which for a text
// encoding/json reads must be a duplicate key.
func lenientAgrees(t *testing.T, data []byte) {
	t.Helper()
	got, err := readWith(data, lenient)
	want, stdErr := decodeStd(data)
	switch {
	case err == nil && stdErr != nil:
		t.Fatalf("the Reader accepts %q, encoding/json refuses it: %v", data, stdErr)
	case err == nil && !reflect.DeepEqual(want, got):
		t.Fatalf("%q reads otherwise (-encoding/json +Reader):\n%s", data, cmp.Diff(want, got))
	case err != nil && stdErr == nil:
		var dup *jsonvalue.DuplicateKeyError
		if !errors.As(err, &dup) {
			t.Fatalf("encoding/json accepts %q, the Reader refuses it: %v", data, err)
		}
	}
}

func TestReaderRules(t *testing.T) {
	for _, doc := range []string{
		`"\ud800"`, `"\udc00x"`, `"a\ud800\u0041"`, `"\ud83d\ude00"`, `"\ud800\ud800\udc00"`, "\"\xff\xfe\"", "\"a\xc3\"",
		"{\"\xff\":1,\"\xfe\":2}", `{"\ud800":1,"\udc00":2}`, `{"\ud800":1,"\ud801":2}`, `{"a":{"\ud800":1}}`,
		`1e401`, `[-` + strings.Repeat("1", 300) + `]`, `1e-99999`, `"\ud800\u00"`, `"\ud800\uZZZZ"`, `"\ud800\"`,
		strings.Repeat(`[`, jsonvalue.MaxDepth+1) + strings.Repeat(`]`, jsonvalue.MaxDepth+1),
		strings.Repeat(`[`, jsonvalue.ScanMaxDepth+1) + strings.Repeat(`]`, jsonvalue.ScanMaxDepth+1),
	} {
		lenientAgrees(t, []byte(doc))
	}
	// The zero Rules are Parse's.
	for _, doc := range []string{`"\ud800"`, "\"\xff\"", `1e401`, `{"a":{"b":1,"b":2}}`} {
		if _, err := readWith([]byte(doc), jsonvalue.Rules{}); err == nil {
			t.Errorf("%s: accepted under the zero Rules", doc)
		}
	}
	for _, tt := range []struct {
		doc   string
		rules jsonvalue.Rules
		ok    bool
	}{
		{strings.Repeat(`[`, 5) + strings.Repeat(`]`, 5), jsonvalue.Rules{MaxDepth: 5}, true},
		{strings.Repeat(`[`, 6) + strings.Repeat(`]`, 6), jsonvalue.Rules{MaxDepth: 5}, false},
		{`{"a":{"b":1,"b":2}}`, jsonvalue.Rules{OuterKeysOnly: true}, true},
		{`{"a":[{"b":1,"b":2}],"c":1}`, jsonvalue.Rules{OuterKeysOnly: true}, true},
		{`{"a":{"b":1},"a":2}`, jsonvalue.Rules{OuterKeysOnly: true}, false},
		{`[{"b":1,"b":2}]`, jsonvalue.Rules{OuterKeysOnly: true}, true},
		{`{"n":` + strings.Repeat("9", 257) + `}`, jsonvalue.Rules{AnyNumber: true}, true},
		{`{"n":` + strings.Repeat("9", 257) + `}`, jsonvalue.Rules{}, false},
	} {
		if _, err := readWith([]byte(tt.doc), tt.rules); (err == nil) != tt.ok {
			t.Errorf("%.40s under %+v: %v, want accepted %v", tt.doc, tt.rules, err, tt.ok)
		}
	}
	var r jsonvalue.Reader
	r.ResetText(strings.Repeat(`[`, 6), jsonvalue.Rules{MaxDepth: 5})
	if err := r.Skip(); err == nil || !strings.Contains(err.Error(), "deeper than 5 levels") {
		t.Errorf("too deep for the Rules: %v", err)
	}
	// Reset goes back to Parse's rules.
	r.Reset([]byte(`"\ud800"`))
	if err := r.Skip(); err == nil {
		t.Error("Reset kept the Rules of ResetText")
	}
}

// FuzzReaderRules checks a Reader under lenient against encoding/json.
func FuzzReaderRules(f *testing.F) {
	for _, s := range []string{
		`{}`, `"\ud800"`, "\"\xff\"", `{"\ud800":1,"\udc00":2}`, `1e401`, `{"a":[1,{"b":"\udfff"}]}`, `"\ud83d\ude00"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lenientAgrees(t, data)
	})
}
