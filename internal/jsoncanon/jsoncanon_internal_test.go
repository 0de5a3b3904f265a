package jsoncanon

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// treeCanonical is the canonical form built the obvious way, from a
// parsed tree; Append must agree with it on every JSON text.
func treeCanonical(dst []byte, v any) []byte {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonvalue.AppendString(dst, k)
			dst = append(dst, ':')
			dst = treeCanonical(dst, x[k])
		}
		return append(dst, '}')
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = treeCanonical(dst, e)
		}
		return append(dst, ']')
	case json.Number:
		if f, err := strconv.ParseFloat(string(x), 64); err == nil {
			return strconv.AppendFloat(dst, f, 'g', -1, 64)
		}
		return append(dst, x...)
	default:
		return jsonvalue.Append(dst, v)
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[1,2.0,{"z":null,"y":"\u00e9"}]}`, ` [ ] `, `{"a\"b":"x\ny"}`, `1e400`, `-0.0`,
		`{"a":{"b":{"c":[true,false]}}}`, `"plain"`, `{"k":1,"k":2}`, `{"a":`, `[1,]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, ok := Append(nil, []byte(text))
		tree, err := jsonvalue.Parse([]byte(text))
		if err != nil {
			return // invalid text: any answer will do, as long as nothing panics
		}
		if !ok {
			t.Fatalf("valid JSON %q refused", text)
		}
		want := treeCanonical(nil, tree)
		if string(got) != string(want) && !duplicated(text) {
			t.Fatalf("canonical form of %q:\n got %s\nwant %s", text, got, want)
		}
	})
}

// duplicated reports text with a repeated key in some object, which the
// tree keeps once and the canonical form keeps twice (the executor
// refuses such arguments anyway).
func duplicated(text string) bool {
	d := json.NewDecoder(strings.NewReader(text))
	var walk func() bool
	walk = func() bool {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for d.More() {
				k, _ := d.Token()
				ks, _ := k.(string)
				if seen[ks] {
					return true
				}
				seen[ks] = true
				if walk() {
					return true
				}
			}
			_, _ = d.Token()
		case json.Delim('['):
			for d.More() {
				if walk() {
					return true
				}
			}
			_, _ = d.Token()
		}
		return false
	}
	return walk()
}
