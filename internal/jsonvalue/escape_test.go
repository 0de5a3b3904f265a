package jsonvalue_test

import (
	"encoding/json"
	"testing"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

func TestUnquote(t *testing.T) {
	for _, tok := range []string{
		`""`, `"plain"`, `"\"\\\/\b\f\n\r\t"`, `"\u00e9\u65e5"`, `"\ud83d\ude00"`, `"\uD83D\uDE00"`,
		`"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\ud800\ud800\udc00"`, `"\udc00\ud800"`, `"\ud800x"`,
		`"\ud800\n"`, "\"\xff\"", "\"\xed\xa0\x80\"", "\"a\xf0\x9f\x8e\"", "\"é日本🎉\"",
		`"\u12"`, `"\u12g4"`, `"\x"`, `"\"`, "\"\x01\"", "\"\t\"", `"a"b"`, `"`, ``, `x`, `"a" `,
		`"\ud800\u12"`, `"\ud800\uzzzz"`, `"\`, `"\u"`,
	} {
		checkUnquote(t, []byte(tok))
	}
}

// FuzzUnquote checks Unquote against encoding/json on string tokens.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"a\u00e9\ud83d\ude00"`, `"\ud800\u0041"`, "\"\xff\\n\"", `"\q"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, tok []byte) {
		checkUnquote(t, tok)
		quoted := append(append([]byte{'"'}, tok...), '"')
		checkUnquote(t, quoted)
	})
}

func checkUnquote(t *testing.T, tok []byte) {
	t.Helper()
	got, ok := jsonvalue.Unquote(tok)
	var want string
	err := json.Unmarshal(tok, &want)
	// encoding/json also takes whitespace around the token, and null;
	// Unquote takes exactly one string token.
	isToken := len(tok) >= 2 && tok[0] == '"' && tok[len(tok)-1] == '"'
	if !isToken {
		if ok {
			t.Fatalf("Unquote(%q) accepted a text that is not one string token", tok)
		}
		return
	}
	if ok != (err == nil) || got != want {
		t.Fatalf("Unquote(%q) = %q, %v; encoding/json: %q, %v", tok, got, ok, want, err)
	}
}

func TestReadEscape(t *testing.T) {
	for _, tt := range []struct {
		in   string
		r    rune
		n    int
		fail jsonvalue.EscapeFailure
		at   int
	}{
		{`\n`, '\n', 2, 0, 0},
		{`\/`, '/', 2, 0, 0},
		{`\u00e9`, 'é', 6, 0, 0},
		{`\uD800`, 0xD800, 6, 0, 0},
		{`\`, 0, 0, jsonvalue.EscapeTruncated, 1},
		{`\u12`, 0, 0, jsonvalue.EscapeTruncated, 4},
		{`\u12x4`, 0, 0, jsonvalue.EscapeBadHex, 4},
		{`\x`, 0, 0, jsonvalue.EscapeBadChar, 1},
	} {
		r, n, fail, at := jsonvalue.ReadEscape(tt.in, 0)
		if r != tt.r || n != tt.n || fail != tt.fail || at != tt.at {
			t.Errorf("ReadEscape(%q) = %q, %d, %d, %d; want %q, %d, %d, %d", tt.in, r, n, fail, at, tt.r, tt.n, tt.fail, tt.at)
		}
		if r2, n2, fail2, at2 := jsonvalue.ReadEscape([]byte(tt.in), 0); r2 != r || n2 != n || fail2 != fail || at2 != at {
			t.Errorf("ReadEscape of the bytes of %q differs from that of the string", tt.in)
		}
	}
}
