package jsonvalue_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// FuzzParse checks Parse against encoding/json. Whatever Parse accepts,
// encoding/json must accept with the same tree. Whatever encoding/json
// accepts, Parse must accept too, unless the input is one of the cases this
// package refuses on purpose: duplicate keys, invalid UTF-8, lone surrogate
// escapes, nesting beyond MaxDepth and numbers beyond MaxNumberLen or
// MaxExponent.
func FuzzParse(f *testing.F) {
	seeds := []string{
		`{}`, `[]`, `null`, `true`, `-0.5e+10`, `"a\u00e9\ud83d\ude00"`,
		`{"a":[1,2,{"b":null}],"c":"d"}`, `{"a":1,"a":2}`, `[01]`, `"\ud800"`,
		"\"\xff\"", `{"a":1,}`, `[1 2]`, ` {"x" : { "y" : [ ] } } `, `1e`, `{"A":1,"a":2}`, `1e401`, `[-0.0e-0]`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := jsonvalue.Parse(data)
		stdValid := json.Valid(data)
		if err == nil {
			if !stdValid {
				t.Fatalf("Parse accepted %q, encoding/json rejects it", data)
			}
			want := stdDecode(t, data)
			// cmp only explains a mismatch: it slows down badly on
			// deeply nested trees, which the fuzzer likes to build.
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("Parse(%q) differs from encoding/json (-want +got):\n%s", data, cmp.Diff(want, got))
			}
		} else {
			var se *jsonvalue.SyntaxError
			var de *jsonvalue.DuplicateKeyError
			switch {
			case errors.As(err, &de):
			case errors.As(err, &se):
				if se.Offset < 0 || se.Offset > int64(len(data)) {
					t.Fatalf("Parse(%q) error offset %d out of range", data, se.Offset)
				}
				deliberate := false
				switch se.Msg {
				case jsonvalue.MsgInvalidUTF8, jsonvalue.MsgSurrogate, jsonvalue.MsgTooDeep,
					jsonvalue.MsgNumberTooLong, jsonvalue.MsgExponentTooBig:
					deliberate = true
				}
				if stdValid && !deliberate {
					t.Fatalf("Parse(%q) = %v, but encoding/json accepts it", data, err)
				}
			default:
				t.Fatalf("Parse(%q) returned untyped error %T: %v", data, err, err)
			}
			if got != nil {
				t.Fatalf("Parse(%q) returned a value with an error", data)
			}
		}

		obj, members, oerr := jsonvalue.ParseObject(data)
		if oerr == nil {
			if !reflect.DeepEqual(got, any(obj)) {
				t.Fatalf("ParseObject(%q) differs from Parse:\n%s", data, cmp.Diff(got, any(obj)))
			}
			if len(members) != len(obj) {
				t.Fatalf("ParseObject(%q): %d members for %d keys", data, len(members), len(obj))
			}
			for k, raw := range members {
				v, err := jsonvalue.Parse(raw)
				if err != nil {
					t.Fatalf("ParseObject(%q): member %q raw %q does not parse: %v", data, k, raw, err)
				}
				if !reflect.DeepEqual(obj[k], v) {
					t.Fatalf("ParseObject(%q): member %q raw %q does not match its value", data, k, raw)
				}
			}
		} else if _, isObj := got.(map[string]any); isObj {
			t.Fatalf("ParseObject(%q) = %v, but Parse found an object", data, oerr)
		}
	})
}

func stdDecode(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("encoding/json decode of %q: %v", data, err)
	}
	return v
}
