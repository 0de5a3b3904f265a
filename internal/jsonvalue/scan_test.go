package jsonvalue_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// scanAccepts is ScanValue on a whole document.
func scanAccepts(data []byte) bool {
	i := jsonvalue.SkipSpace(data, 0)
	end := jsonvalue.ScanValue(data, i, 0)
	return end >= 0 && jsonvalue.SkipSpace(data, end) == len(data)
}

// encodingJSONAccepts is the grammar ScanValue keeps: one JSON text that
// encoding/json accepts, in valid UTF-8.
func encodingJSONAccepts(data []byte) bool { return utf8.Valid(data) && json.Valid(data) }

func TestScanValueMatchesEncodingJSON(t *testing.T) {
	nest := func(n int, open, inner, close string) string {
		return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
	}
	for _, s := range []string{
		``, ` `, `{}`, `[]`, `{"a":1}x`, `{"a" 1}`, `{"a":1,}`, `[1,]`, `{1:2}`,
		`0`, `-0`, `01`, `-`, `1.`, `.5`, `1e+5`, `+1`, `1e999999`, `true`, `truee`, `nul`,
		`"\u12"`, `"\u12g4"`, `"\uD800"`, `"\x"`, `"\/\b\f\n\r\t\\\""`, "\"tab\there\"",
		"\"\xff\"", "\"\xed\xa0\x80\"", "\"é日本🎉\"", "\"\xf0\x9f\x8e\"",
		nest(jsonvalue.ScanMaxDepth, "[", "", "]"), nest(jsonvalue.ScanMaxDepth+1, "[", "", "]"),
		nest(jsonvalue.ScanMaxDepth, `{"a":`, "1", "}"), nest(jsonvalue.ScanMaxDepth+1, `{"a":`, "1", "}"),
	} {
		if got, want := scanAccepts([]byte(s)), encodingJSONAccepts([]byte(s)); got != want {
			t.Errorf("ScanValue(%.60q) accepts = %v, encoding/json says %v", s, got, want)
		}
	}
}

// FuzzScanValue checks ScanValue against encoding/json, and ScanString
// and Unquote on the strings it finds.
func FuzzScanValue(f *testing.F) {
	for _, s := range []string{
		`{"capability":"echo","arguments":{"text":"hi","n":[1,2.5e-3,true,false,null]}}`,
		`[{"a":"\u00e9\n"},-0.0]`, `{"a":1}x`, "\"\xed\xa0\x80\"", `{"a":[}`, `01`, `"\ud800\u0041"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := encodingJSONAccepts(data)
		if got := scanAccepts(data); got != want {
			t.Fatalf("ScanValue(%q) accepts = %v, encoding/json says %v", data, got, want)
		}
		i := jsonvalue.SkipSpace(data, 0)
		if i >= len(data) || data[i] != '"' {
			return
		}
		end, escaped := jsonvalue.ScanString(data, i)
		if end < 0 {
			return
		}
		tok := data[i:end]
		if escaped != strings.Contains(string(tok), `\`) {
			t.Fatalf("ScanString(%q) escaped = %v", tok, escaped)
		}
		var ref string
		if err := json.Unmarshal(tok, &ref); err != nil {
			t.Fatalf("ScanString accepted %q, encoding/json refuses it: %v", tok, err)
		}
		if got, ok := jsonvalue.Unquote(tok); !ok || got != ref {
			t.Fatalf("Unquote(%q) = %q, %v; encoding/json says %q", tok, got, ok, ref)
		}
	})
}
