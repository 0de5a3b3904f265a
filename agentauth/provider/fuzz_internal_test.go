package provider

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/core"
)

func FuzzParseHostToken(f *testing.F) {
	f.Add("eyJhbGciOiJFZERTQSIsInR5cCI6Imhvc3Qrand0In0.eyJpc3MiOiJ4IiwiYXVkIjoieSIsImlhdCI6MSwiZXhwIjoyLCJqdGkiOiJ6In0.c2ln")
	f.Add("a.b.c")
	f.Add("..")
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Fuzz(func(t *testing.T, token string) {
		tok, err := parseHostToken(token)
		if err != nil {
			return
		}
		if tok.iss == "" {
			t.Fatal("a parsed token without iss")
		}
	})
}

func FuzzParseObject(f *testing.F) {
	f.Add([]byte(`{"name":"a","capabilities":["x",{"name":"y","constraints":{"a":{"max":1}}}]}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`{"a":"\ud800"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseObject(data)
		if err != nil {
			return
		}
		for k, v := range m {
			if !json.Valid(v) {
				t.Fatalf("member %q holds invalid JSON %q", k, v)
			}
		}
	})
}

type fuzzIn struct {
	M string `json:"m"`
}

func FuzzParseRequested(f *testing.F) {
	reg, err := core.NewRegistry(core.MustDefine("echo", "Echo.",
		func(_ context.Context, _ struct{}, in fuzzIn) (struct{}, error) { return struct{}{}, nil }))
	if err != nil {
		f.Fatal(err)
	}
	p := &Provider{reg: reg}
	f.Add([]byte(`["echo"]`))
	f.Add([]byte(`[{"name":"echo","constraints":{"m":{"in":["a"]}}}]`))
	f.Add([]byte(`[{"name":"echo","constraints":{"m":{"lte":1}}}]`))
	f.Add([]byte(`[{"name":"nope"},"echo","echo"]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		caps, err := p.parseRequested(raw, false)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, c := range caps {
			if c.Name != "echo" || seen[c.Name] {
				t.Fatalf("accepted %q", c.Name)
			}
			seen[c.Name] = true
		}
	})
}

func FuzzDisplayText(f *testing.F) {
	f.Add("plain", 10)
	f.Add("a\u202eb\x00c\nd", 3)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		if limit < 0 || limit > 1000 {
			return
		}
		out := displayText(s, limit)
		n := 0
		for _, r := range out {
			n++
			if r < 0x20 || r == 0x7f || (r >= 0x202a && r <= 0x202e) {
				t.Fatalf("control character %U kept", r)
			}
		}
		if n > limit {
			t.Fatalf("%d runes kept, limit %d", n, limit)
		}
	})
}

type fuzzLimitIn struct {
	Text   string  `json:"text"`
	Amount float64 `json:"amount"`
	Flag   bool    `json:"flag"`
}

// FuzzConstraintInput reads arbitrary text typed as the approval page's
// limit on a field of each JSON type: what it accepts is a constraint
// agentauth accepts, and plain text on a string field is that very text.
func FuzzConstraintInput(f *testing.F) {
	def := core.MustDefine("limit", "Limit.",
		func(_ context.Context, _ struct{}, in fuzzLimitIn) (struct{}, error) { return struct{}{}, nil }).Definition()
	for _, s := range []string{"acc_456", `"acc_456"`, `{"max": 500}`, `{"in": ["a", "b"]}`, `{"max":`, "500", "true", "12abc",
		`{"nope": 1}`, `["a"]`, `{"max":"5"}`, "\xed\xa0\x80", `"\ud800"`, "null"} {
		for _, field := range []string{"text", "amount", "flag"} {
			f.Add(field, s)
		}
	}
	f.Fuzz(func(t *testing.T, field, text string) {
		text = strings.TrimSpace(text)
		if text == "" {
			return
		}
		raw, err := constraintInput(def, field, text)
		if err != nil {
			return
		}
		if err := agentauth.ValidateConstraints(map[string]json.RawMessage{field: raw}); err != nil {
			t.Fatalf("%s %q read as %s, which agentauth refuses: %v", field, text, raw, err)
		}
		if c := text[0]; fieldType(def, field) == "string" && c != '{' && c != '"' && c != '[' {
			var s string
			if json.Unmarshal(raw, &s) != nil || s != text {
				t.Fatalf("%s %q read as %s, not as the text", field, text, raw)
			}
		}
	})
}
