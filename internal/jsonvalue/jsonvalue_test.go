package jsonvalue_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"null", `null`, nil},
		{"true", `true`, true},
		{"false", ` false `, false},
		{"zero", `0`, json.Number("0")},
		{"negative zero", `-0`, json.Number("-0")},
		{"integer", `12345678901234567890123`, json.Number("12345678901234567890123")},
		{"decimal", `-1.50`, json.Number("-1.50")},
		{"exponent", `1E+400`, json.Number("1E+400")},
		{"exponent lower", `0.5e-3`, json.Number("0.5e-3")},
		{"largest exponent", `-1.5E-400`, json.Number("-1.5E-400")},
		{"exponent with leading zeros", `1e+0000000000000000000400`, json.Number("1e+0000000000000000000400")},
		{"longest number", strings.Repeat("9", jsonvalue.MaxNumberLen), json.Number(strings.Repeat("9", jsonvalue.MaxNumberLen))},
		{"empty string", `""`, ""},
		{"plain string", `"hello"`, "hello"},
		{"utf8 string", `"héllo ✓ 😀"`, "héllo ✓ 😀"},
		{"escapes", `"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t"},
		{"unicode escape", `"caf\u00e9 \u0000"`, "café \x00"},
		{"surrogate pair", `"\ud83d\ude00"`, "😀"},
		{"escape after utf8", `"é\n"`, "é\n"},
		{"empty object", `{}`, map[string]any{}},
		{"empty array", `[ ]`, []any{}},
		{"whitespace everywhere", " \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : { } } \n", map[string]any{
			"a": []any{json.Number("1"), json.Number("2")},
			"b": map[string]any{},
		}},
		{"nested", `{"a":{"b":[true,null,"x",{"c":-1}]}}`, map[string]any{
			"a": map[string]any{"b": []any{true, nil, "x", map[string]any{"c": json.Number("-1")}}},
		}},
		{"keys differing by case", `{"amount":1,"Amount":2}`, map[string]any{
			"amount": json.Number("1"), "Amount": json.Number("2"),
		}},
		{"escaped key", `{"a\u0062":1}`, map[string]any{"ab": json.Number("1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jsonvalue.Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseAcceptsMaxDepth(t *testing.T) {
	for _, tt := range []struct{ open, inner, close string }{{"[", "[]", "]"}, {`{"a":`, "{}", "}"}} {
		n := jsonvalue.MaxDepth - 1
		in := strings.Repeat(tt.open, n) + tt.inner + strings.Repeat(tt.close, n)
		v, err := jsonvalue.Parse([]byte(in))
		if err != nil {
			t.Fatalf("Parse of %d levels of %s: %v", jsonvalue.MaxDepth, tt.open, err)
		}
		depth := 0
		for v != nil {
			depth++
			switch c := v.(type) {
			case []any:
				v = nil
				if len(c) == 1 {
					v = c[0]
				}
			case map[string]any:
				v = c["a"]
			default:
				t.Fatalf("unexpected %T at depth %d", v, depth)
			}
		}
		if depth != jsonvalue.MaxDepth {
			t.Errorf("tree of %s has depth %d, want %d", tt.open, depth, jsonvalue.MaxDepth)
		}
	}
}

func TestParseRejectsSyntax(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		offset int64
		msg    string
	}{
		{"empty", ``, 0, "unexpected end of input"},
		{"only whitespace", "  \n", 3, "unexpected end of input"},
		{"trailing value", `1 2`, 2, "invalid character '2' after top-level value"},
		{"trailing garbage", `{} x`, 3, "invalid character 'x' after top-level value"},
		{"trailing nul", "null\x00", 4, "invalid character byte 0x00 after top-level value"},
		{"byte order mark", "\xef\xbb\xbf{}", 0, "invalid character byte 0xef looking for beginning of value"},
		{"leading zero", `01`, 1, "leading zero in number"},
		{"negative leading zero", `-012`, 2, "leading zero in number"},
		{"plus sign", `+1`, 0, "invalid character '+' looking for beginning of value"},
		{"bare minus", `-`, 1, "unexpected end of input"},
		{"minus letter", `-a`, 1, "invalid character 'a' in number"},
		{"leading dot", `.5`, 0, "invalid character '.' looking for beginning of value"},
		{"trailing dot", `1.`, 2, "unexpected end of input"},
		{"dot without digits", `[1.]`, 3, "invalid character ']' after decimal point in number"},
		{"empty exponent", `1e`, 2, "unexpected end of input"},
		{"exponent without digits", `[1e+]`, 4, "invalid character ']' in exponent of number"},
		{"hex number", `0x10`, 1, "invalid character 'x' after top-level value"},
		{"NaN", `NaN`, 0, "invalid character 'N' looking for beginning of value"},
		{"Infinity", `-Infinity`, 1, "invalid character 'I' in number"},
		{"bad literal", `nul`, 3, "unexpected end of input"},
		{"misspelled literal", `tru3`, 3, "invalid character '3' in literal true"},
		{"capital literal", `True`, 0, "invalid character 'T' looking for beginning of value"},
		{"single quotes", `'a'`, 0, `invalid character '\'' looking for beginning of value`},
		{"unterminated string", `"abc`, 4, "unexpected end of input"},
		{"unterminated escaped string", `"a\n`, 4, "unexpected end of input"},
		{"raw newline in string", "\"a\nb\"", 2, "control character byte 0x0a in string"},
		{"raw tab in escaped string", "\"\\n\t\"", 3, "control character byte 0x09 in string"},
		{"bad escape", `"\x41"`, 2, "invalid escape character 'x' in string"},
		{"escape at end", `"\`, 2, "unexpected end of input"},
		{"short unicode escape", `"\u12"`, 5, `invalid character '"' in \u escape`},
		{"bad hex", `"\u12g4"`, 5, `invalid character 'g' in \u escape`},
		{"invalid utf8", "\"a\xffb\"", 2, jsonvalue.MsgInvalidUTF8},
		{"invalid utf8 after escape", "\"\\n\xc3\"", 3, jsonvalue.MsgInvalidUTF8},
		{"overlong utf8", "\"\xc0\xaf\"", 1, jsonvalue.MsgInvalidUTF8},
		{"utf8 encoded surrogate", "\"\xed\xa0\x80\"", 1, jsonvalue.MsgInvalidUTF8},
		{"truncated utf8", "\"\xe2\x82\"", 1, jsonvalue.MsgInvalidUTF8},
		{"invalid utf8 in key", "{\"\xff\":1}", 2, jsonvalue.MsgInvalidUTF8},
		{"lone high surrogate", `"\ud800"`, 1, jsonvalue.MsgSurrogate},
		{"lone low surrogate", `"\udc00"`, 1, jsonvalue.MsgSurrogate},
		{"high surrogate then letter", `"\ud800x"`, 1, jsonvalue.MsgSurrogate},
		{"high surrogate then other escape", `"\ud800\n"`, 1, jsonvalue.MsgSurrogate},
		{"two high surrogates", `"\ud800\ud800"`, 1, jsonvalue.MsgSurrogate},
		{"high surrogate at end", `"\ud800`, 7, "unexpected end of input"},
		{"high surrogate then backslash at end", `"\ud800\`, 8, "unexpected end of input"},
		{"unclosed object", `{"a":1`, 6, "unexpected end of input"},
		{"unclosed array", `[1,2`, 4, "unexpected end of input"},
		{"trailing comma in object", `{"a":1,}`, 7, "invalid character '}' looking for beginning of object key"},
		{"trailing comma in array", `[1,]`, 3, "invalid character ']' looking for beginning of value"},
		{"leading comma in array", `[,1]`, 1, "invalid character ',' looking for beginning of value"},
		{"missing colon", `{"a" 1}`, 5, "invalid character '1' after object key"},
		{"missing value", `{"a":}`, 5, "invalid character '}' looking for beginning of value"},
		{"unquoted key", `{a:1}`, 1, "invalid character 'a' looking for beginning of object key"},
		{"number key", `{1:1}`, 1, "invalid character '1' looking for beginning of object key"},
		{"missing comma in object", `{"a":1 "b":2}`, 7, `invalid character '"' after object value`},
		{"missing comma in array", `[1 2]`, 3, "invalid character '2' after array element"},
		{"mismatched bracket", `[1}`, 2, "invalid character '}' after array element"},
		{"object key colon end", `{"a":`, 5, "unexpected end of input"},
		{"comment", `{} // c`, 3, "invalid character '/' after top-level value"},
		{"vertical tab whitespace", "\v1", 0, "invalid character byte 0x0b looking for beginning of value"},
		{"exponent too big", `[1e401]`, 1, jsonvalue.MsgExponentTooBig},
		{"negative exponent too big", `-2.5E-401`, 0, jsonvalue.MsgExponentTooBig},
		{"huge exponent", `{"n":1e1000000}`, 5, jsonvalue.MsgExponentTooBig},
		{"overflowing exponent", `1e99999999999999999999999999`, 0, jsonvalue.MsgExponentTooBig},
		{"number too long", "[" + strings.Repeat("1", jsonvalue.MaxNumberLen+1) + "]", 1, jsonvalue.MsgNumberTooLong},
		{"fraction too long", "0." + strings.Repeat("5", jsonvalue.MaxNumberLen-1), 0, jsonvalue.MsgNumberTooLong},
		{"too deep arrays", strings.Repeat("[", jsonvalue.MaxDepth+1), jsonvalue.MaxDepth, jsonvalue.MsgTooDeep},
		{"too deep objects", strings.Repeat(`{"a":`, jsonvalue.MaxDepth+1), 5 * jsonvalue.MaxDepth, jsonvalue.MsgTooDeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jsonvalue.Parse([]byte(tt.in))
			var se *jsonvalue.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) = %v, %v; want *SyntaxError", tt.in, got, err)
			}
			want := &jsonvalue.SyntaxError{Offset: tt.offset, Msg: tt.msg}
			if diff := cmp.Diff(want, se); diff != "" {
				t.Errorf("Parse(%q) error mismatch (-want +got):\n%s", tt.in, diff)
			}
			if got != nil {
				t.Errorf("Parse(%q) returned a value with an error: %v", tt.in, got)
			}
		})
	}
}

func TestParseRejectsDuplicateKeys(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want *jsonvalue.DuplicateKeyError
	}{
		{"top level", `{"a":1,"b":2,"a":3}`, &jsonvalue.DuplicateKeyError{Path: "", Key: "a"}},
		{"same value", `{"a":1,"a":1}`, &jsonvalue.DuplicateKeyError{Path: "", Key: "a"}},
		{"escaped spelling", `{"ab":1,"a\u0062":2}`, &jsonvalue.DuplicateKeyError{Path: "", Key: "ab"}},
		{"empty key", `{"":1,"":2}`, &jsonvalue.DuplicateKeyError{Path: "", Key: ""}},
		{"nested object", `{"x":{"y":{"k":1,"k":2}}}`, &jsonvalue.DuplicateKeyError{Path: "/x/y", Key: "k"}},
		{"inside array", `{"items":[{},{"k":1,"k":2}]}`, &jsonvalue.DuplicateKeyError{Path: "/items/1", Key: "k"}},
		{"escaped pointer tokens", `{"a/b":{"c~d":{"k":1,"k":2}}}`, &jsonvalue.DuplicateKeyError{Path: "/a~1b/c~0d", Key: "k"}},
		{"top-level array", `[0,[{"k":1,"k":2}]]`, &jsonvalue.DuplicateKeyError{Path: "/1/0", Key: "k"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := jsonvalue.Parse([]byte(tt.in))
			var de *jsonvalue.DuplicateKeyError
			if !errors.As(err, &de) {
				t.Fatalf("Parse(%q) error = %v; want *DuplicateKeyError", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, de); diff != "" {
				t.Errorf("Parse(%q) error mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestErrorMessagesAreShort(t *testing.T) {
	long := strings.Repeat("k", 500)
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"duplicate at top", `{"a":1,"a":2}`, `duplicate key "a" in the top-level object`},
		{"duplicate nested", `{"x":{"a":1,"a":2}}`, `duplicate key "a" in the object at "/x"`},
		{"long duplicate", `{"` + long + `":1,"` + long + `":2}`, `duplicate key "` + long[:32] + `"... in the top-level object`},
		{"syntax", `[1 x]`, `invalid character 'x' after array element at offset 3`},
		{"binary byte", "[\x01]", `invalid character byte 0x01 looking for beginning of value at offset 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := jsonvalue.Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse(%q) succeeded", tt.in)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("message mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseObject(t *testing.T) {
	data := []byte(` { "amount" : 12.50 , "to":{"iban":"DE00"} ,"tags":[ "a" ],"note":null} `)
	obj, members, err := jsonvalue.ParseObject(data)
	if err != nil {
		t.Fatalf("ParseObject error: %v", err)
	}
	wantObj := map[string]any{
		"amount": json.Number("12.50"),
		"to":     map[string]any{"iban": "DE00"},
		"tags":   []any{"a"},
		"note":   nil,
	}
	if diff := cmp.Diff(wantObj, obj); diff != "" {
		t.Errorf("object mismatch (-want +got):\n%s", diff)
	}
	wantMembers := map[string]json.RawMessage{
		"amount": json.RawMessage(`12.50`),
		"to":     json.RawMessage(`{"iban":"DE00"}`),
		"tags":   json.RawMessage(`[ "a" ]`),
		"note":   json.RawMessage(`null`),
	}
	if diff := cmp.Diff(wantMembers, members); diff != "" {
		t.Errorf("members mismatch (-want +got):\n%s", diff)
	}

	// Members alias data, and appending to one must not overwrite data.
	before := string(data)
	raw := members["amount"]
	if &raw[0] != &data[strings.Index(before, "12.50")] {
		t.Error("member is a copy, want a sub-slice of data")
	}
	if grown := append(raw, 'X'); string(grown) != "12.50X" {
		t.Errorf("appended member = %q", grown)
	}
	if string(data) != before {
		t.Errorf("appending to a member changed data: %q", data)
	}

	// The tree does not alias data: reusing the buffer leaves it intact.
	for i := range data {
		data[i] = ' '
	}
	if diff := cmp.Diff(wantObj, obj); diff != "" {
		t.Errorf("object changed with its input buffer (-want +got):\n%s", diff)
	}
}

func TestParseObjectEmpty(t *testing.T) {
	obj, members, err := jsonvalue.ParseObject([]byte(`{}`))
	if err != nil {
		t.Fatalf("ParseObject error: %v", err)
	}
	if obj == nil || len(obj) != 0 || members == nil || len(members) != 0 {
		t.Errorf("ParseObject({}) = %#v, %#v; want empty non-nil maps", obj, members)
	}
}

func TestParseObjectRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"array", `[1]`, &jsonvalue.NotObjectError{Got: "array"}},
		{"string", ` "x" `, &jsonvalue.NotObjectError{Got: "string"}},
		{"number", `1`, &jsonvalue.NotObjectError{Got: "number"}},
		{"boolean", `true`, &jsonvalue.NotObjectError{Got: "boolean"}},
		{"null", `null`, &jsonvalue.NotObjectError{Got: "null"}},
		{"empty", ``, &jsonvalue.SyntaxError{Offset: 0, Msg: "unexpected end of input"}},
		{"broken array", `[1,`, &jsonvalue.SyntaxError{Offset: 3, Msg: "unexpected end of input"}},
		{"array with trailing data", `[] {}`, &jsonvalue.SyntaxError{Offset: 3, Msg: "invalid character '{' after top-level value"}},
		{"object with trailing data", `{} {}`, &jsonvalue.SyntaxError{Offset: 3, Msg: "invalid character '{' after top-level value"}},
		{"duplicate", `{"a":1,"a":2}`, &jsonvalue.DuplicateKeyError{Key: "a"}},
		{"nested duplicate", `{"a":{"b":1,"b":2}}`, &jsonvalue.DuplicateKeyError{Path: "/a", Key: "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, members, err := jsonvalue.ParseObject([]byte(tt.in))
			if diff := cmp.Diff(tt.want, err); diff != "" {
				t.Errorf("ParseObject(%q) error mismatch (-want +got):\n%s", tt.in, diff)
			}
			if obj != nil || members != nil {
				t.Errorf("ParseObject(%q) returned values with an error", tt.in)
			}
		})
	}
	if got := (&jsonvalue.NotObjectError{Got: "array"}).Error(); got != "value must be an object, got array" {
		t.Errorf("NotObjectError message = %q", got)
	}
}

func TestPointer(t *testing.T) {
	tests := []struct {
		base, token, want string
	}{
		{"", "a", "/a"},
		{"", "", "/"},
		{"/a", "b", "/a/b"},
		{"", "a/b", "/a~1b"},
		{"", "m~n", "/m~0n"},
		{"/x", "~/~1", "/x/~0~1~01"},
		{"", "0", "/0"},
	}
	for _, tt := range tests {
		if got := jsonvalue.Pointer(tt.base, tt.token); got != tt.want {
			t.Errorf("Pointer(%q, %q) = %q, want %q", tt.base, tt.token, got, tt.want)
		}
	}
}

// TestParseConcurrent shares the pooled parser state between goroutines; run
// with -race it proves parses do not leak state into one another.
func TestParseConcurrent(t *testing.T) {
	docs := []string{
		`{"a":[1,{"b":"c\n"}],"d":true}`,
		`[{"x":{"y":[null,false,"\u00e9"]}},2.5]`,
		`{"k":1,"k":2}`,
		`{"e":"` + strings.Repeat(`\"`, 100) + `"}`,
	}
	want := make([]any, len(docs))
	for i, d := range docs {
		want[i], _ = jsonvalue.Parse([]byte(d))
	}
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func() {
			for n := 0; n < 200; n++ {
				i := (g + n) % len(docs)
				got, _ := jsonvalue.Parse([]byte(docs[i]))
				if !cmp.Equal(want[i], got) {
					done <- errors.New("concurrent parse of " + docs[i] + " differs")
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
