package httpx

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
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
		name, args, err := parseExecute(body)
		if err != nil {
			if err.Code != "invalid_input" {
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

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "<&>", "\x00\x1f\n\r\t", "\u2028\u2029", "é日本🎉", "bad \xff utf8", "\xed\xa0\x80"} {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("appendString(%q) = %s, encoding/json gives %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("héllo <world> \u2028 \xff")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, encoding/json gives %s", s, got, want)
		}
	})
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
