package httpx

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
)

// FuzzParseExecute checks the hand-written envelope scanner against
// encoding/json: whatever it accepts must decode to the same capability
// and arguments, and it must never panic.
func FuzzParseExecute(f *testing.F) {
	for _, s := range []string{
		`{"capability":"echo","arguments":{"text":"hi"}}`,
		`{"capability":"a\"b","arguments":null}`,
		`{"arguments":{"x":[1,{"y":"}"}]},"capability":"x"}`,
		`{"capability":"echo","capability":"x"}`,
		`  {"capability" : "e\u0063ho" , "arguments" : { } }  `,
		`[]`, `{`, `"x"`, `{"capability":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		name, args, _, err := parseExecute(body)
		if err != nil {
			if err.Code != agentcap.CodeInvalidRequest {
				t.Fatalf("code %s", err.Code)
			}
			return
		}
		var ref struct {
			Capability string          `json:"capability"`
			Arguments  json.RawMessage `json:"arguments"`
		}
		if e := json.Unmarshal(body, &ref); e != nil {
			t.Fatalf("accepted a body encoding/json refuses: %v", e)
		}
		if name != ref.Capability || name == "" {
			t.Fatalf("capability %q, encoding/json says %q", name, ref.Capability)
		}
		want := bytes.TrimSpace(ref.Arguments)
		if string(want) == "null" {
			want = nil
		}
		if !bytes.Equal(args, want) {
			t.Fatalf("arguments %q, encoding/json says %q", args, want)
		}
	})
}

// FuzzParseBatch checks the batch scanner the same way.
func FuzzParseBatch(f *testing.F) {
	for _, s := range []string{
		`{"requests":[{"id":"a","capability":"x","arguments":{"k":"]"}},{"capability":"y"}]}`,
		`{"requests":[]}`, `{"requests":{}}`, `{"requests":[1,"2",[3]]}`,
		`{"requests":[{"capability":"x","id":"\u0041"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		calls, err := parseBatch(body, 5)
		if err != nil {
			return
		}
		var ref struct {
			Requests []struct {
				ID         *string         `json:"id"`
				Capability string          `json:"capability"`
				Arguments  json.RawMessage `json:"arguments"`
			} `json:"requests"`
		}
		if e := json.Unmarshal(body, &ref); e != nil {
			t.Fatalf("accepted a body encoding/json refuses: %v", e)
		}
		if len(calls) != len(ref.Requests) || len(calls) == 0 || len(calls) > 5 {
			t.Fatalf("%d calls, encoding/json sees %d", len(calls), len(ref.Requests))
		}
		for i, c := range calls {
			r := ref.Requests[i]
			id := strconv.Itoa(i)
			if r.ID != nil {
				id = *r.ID
			}
			if c.ID != id || c.Capability != r.Capability {
				t.Fatalf("item %d: %+v, encoding/json says %+v", i, c, r)
			}
		}
	})
}

func TestAppendString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{"quote\" back\\slash", `"quote\" back\\slash"`},
		{"<&>", `"<&>"`},
		{"\x00\x1f\n\r\t\b\f\x7f", `"\u0000\u001f\n\r\t\u0008\u000c` + "\x7f" + `"`},
		{"\u2028\u2029", "\"\u2028\u2029\""},
		{"é日本🎉", `"é日本🎉"`},
		{"bad \xff utf8", `"bad \ufffd utf8"`},
		{"\xed\xa0\x80", `"\ufffd\ufffd\ufffd"`},
	}
	for _, tt := range tests {
		got := appendString(nil, tt.in)
		if string(got) != tt.want {
			t.Errorf("appendString(%q) = %s, want %s", tt.in, got, tt.want)
		}
		checkSameStringAsEncodingJSON(t, tt.in, got)
	}
}

// FuzzAppendString checks that every string is written as valid JSON that
// decodes to what encoding/json's own text for it decodes to: the escapes
// may differ, the string may not.
func FuzzAppendString(f *testing.F) {
	f.Add("héllo <world> \u2028 \xff")
	f.Fuzz(func(t *testing.T, s string) {
		checkSameStringAsEncodingJSON(t, s, appendString(nil, s))
	})
}

func checkSameStringAsEncodingJSON(t *testing.T, s string, got []byte) {
	t.Helper()
	ref, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var want, decoded string
	if err := json.Unmarshal(ref, &want); err != nil {
		t.Fatal(err)
	}
	if !encodingJSONAccepts(got) {
		t.Fatalf("appendString(%q) = %s, not valid JSON", s, got)
	}
	if err := json.Unmarshal(got, &decoded); err != nil || decoded != want {
		t.Fatalf("appendString(%q) = %s decodes to %q (%v), encoding/json's %s to %q", s, got, decoded, err, ref, want)
	}
}

func TestIsJSONContentType(t *testing.T) {
	for v, want := range map[string]bool{
		"application/json":                  true,
		"Application/JSON; charset=utf-8":   true,
		" application/json ;x=y":            true,
		"application/problem+json":          true,
		"application/+json":                 false,
		"application/jsonx":                 false,
		"text/json":                         false,
		"application/x-www-form-urlencoded": false,
		"":                                  false,
		"application/":                      false,
		"multipart/form-data+json":          false,
	} {
		if got := isJSONContentType(v); got != want {
			t.Errorf("isJSONContentType(%q) = %v", v, got)
		}
	}
}

// encodingJSONAccepts is the rule the envelope scanner replaces: one JSON
// text that encoding/json accepts, in valid UTF-8.
func encodingJSONAccepts(data []byte) bool { return utf8.Valid(data) && json.Valid(data) }

func TestIsJSONMatchesEncodingJSON(t *testing.T) {
	nest := func(n int, open, inner, close string) string {
		return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
	}
	for _, s := range []string{
		``, ` `, `{}`, `[]`, ` {"a":1} `, `{"a":1}x`, `{"a":1}}`, `{"a" 1}`, `{"a":}`, `{,}`, `{"a":1,}`,
		`[1,]`, `[,1]`, `[1 2]`, `{"a":[1,{"b":null}],"c":"d"}`, `{1:2}`, `{"a":1 "b":2}`,
		`0`, `-0`, `01`, `-`, `1.`, `.5`, `1.5e`, `1e+5`, `1E-05`, `-1.25e3`, `1x`, `+1`, `0x10`, `1.e5`,
		`true`, `tru`, `truee`, `false`, `nul`, `null `, `NaN`, `Infinity`,
		`""`, `"\"`, `"\u12"`, `"\u12g4"`, `"\uD800"`, `"\x"`, `"\/\b\f\n\r\t\\\""`, "\"tab\there\"", "\"\x7f\"",
		"\"\xff\"", "\"\xed\xa0\x80\"", "\"\xef\xbf\xbd\"", "\"é日本🎉\"", "\"\xf0\x9f\x8e\"",
		"\xef\xbb\xbf{}", "{\"a\":\xff}", "{\"\xff\":1}", "[\"a\"\x00]", "\v{}",
		nest(64, "[", "", "]"), nest(65, "[", "1", "]"), nest(200, `{"a":`, "1", "}"),
		nest(100, `[{"a":`, "[]", "}]"),
		nest(maxDepth, "[", "", "]"), nest(maxDepth+1, "[", "", "]"),
		nest(maxDepth-1, `{"a":`, "[]", "}"), nest(maxDepth, `{"a":`, "[]", "}"),
		nest(maxDepth, "[", "", ""),
	} {
		if got, want := isJSON([]byte(s)), encodingJSONAccepts([]byte(s)); got != want {
			t.Errorf("isJSON(%.60q) = %v, encoding/json says %v", s, got, want)
		}
	}
}

// FuzzIsJSON checks the single-pass scanner against encoding/json on
// whole documents and on the object walk the envelope parsers use.
func FuzzIsJSON(f *testing.F) {
	for _, s := range []string{
		`{"capability":"echo","arguments":{"text":"hi","n":[1,2.5e-3,true,false,null]}}`,
		`[{"a":"\u00e9\n"},-0.0]`, `{"a":1}x`, "\"\xed\xa0\x80\"", `{"a":[}`, `01`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := encodingJSONAccepts(data)
		if got := isJSON(data); got != want {
			t.Fatalf("isJSON(%q) = %v, encoding/json says %v", data, got, want)
		}
		sc, ok := newObjectScanner(data)
		if !ok {
			return
		}
		for {
			if _, _, _, more := sc.next(); !more {
				break
			}
		}
		if sc.bad == want {
			t.Fatalf("object walk of %q: bad %v, encoding/json accepts %v", data, sc.bad, want)
		}
	})
}

// TestMalformedArgumentsAnswer pins the answer to a body whose arguments
// break the grammar: the whole body is refused as JSON, before the
// capability name or any other member is looked at.
func TestMalformedArgumentsAnswer(t *testing.T) {
	notJSON := []agentcap.Violation{{Message: msgNotJSON}}
	for _, body := range []string{
		`{"capability":"echo","arguments":{"text":}}`,
		`{"capability":"echo","arguments":{"text":"hi",}}`,
		`{"capability":"nope","arguments":[1 2],"extra":true}`,
		`{"capability":"echo","arguments":{"text":"` + "\xff" + `"}}`,
		`{"capability":"echo","capability":"echo","arguments":{"a":01}}`,
		`{"capability":"echo","arguments":{"text":"hi"}} {}`,
		`{"capability":"echo","arguments":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`,
	} {
		_, _, _, err := parseExecute([]byte(body))
		if err == nil {
			t.Errorf("%.60q accepted", body)
			continue
		}
		if diff := cmp.Diff(notJSON, err.Details); diff != "" {
			t.Errorf("%.60q (-want +got):\n%s", body, diff)
		}
		_, err = parseBatch([]byte(`{"requests":[`+body+`]}`), 5)
		if err == nil {
			t.Errorf("batch of %.60q accepted", body)
			continue
		}
		if diff := cmp.Diff(notJSON, err.Details); diff != "" {
			t.Errorf("batch of %.60q (-want +got):\n%s", body, diff)
		}
	}
}

// TestDuplicatesPastTheInlineKeys checks that a repeated key is found
// wherever it sits, also past the keys the scanner keeps inline.
func TestDuplicatesPastTheInlineKeys(t *testing.T) {
	_, _, _, err := parseExecute([]byte(`{"a":1,"b":2,"c":3,"capability":"x","d":4,"e":5,"a":6,"e":7,"capability":"y"}`))
	if err == nil {
		t.Fatal("accepted")
	}
	want := []agentcap.Violation{
		{Path: "/a", Message: msgUnknownMember}, {Path: "/b", Message: msgUnknownMember},
		{Path: "/c", Message: msgUnknownMember}, {Path: "/d", Message: msgUnknownMember},
		{Path: "/e", Message: msgUnknownMember}, {Path: "/a", Message: msgDuplicateKey},
		{Path: "/e", Message: msgDuplicateKey}, {Path: "/capability", Message: msgDuplicateKey},
	}
	if diff := cmp.Diff(want, err.Details); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}
