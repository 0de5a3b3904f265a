package jsonvalue

import (
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// Append appends the compact JSON text of a tree as Parse builds it:
// map[string]any, []any, json.Number, string, bool and nil. Object members
// are written in key order, so equal trees give equal text. Strings escape
// only what JSON requires (the quote, the backslash and control
// characters), and text that is not valid UTF-8 is written as U+FFFD, as
// encoding/json does; a tree from Parse holds none. A json.Number is
// written as it is, so it must hold a valid number.
//
// Append panics on any other Go type: trees come from Parse, and a value
// that is not JSON is a programming error.
func Append(dst []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		if v {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case json.Number:
		return append(dst, v...)
	case string:
		return AppendString(dst, v)
	case []any:
		dst = append(dst, '[')
		for i, item := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = Append(dst, item)
		}
		return append(dst, ']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			dst = Append(dst, v[k])
		}
		return append(dst, '}')
	}
	panic("jsonvalue: Append of a value that is not a JSON tree")
}

// AppendString appends s as a JSON string, escaping only the quote, the
// backslash and control characters, and writing each byte of s that is
// not part of valid UTF-8 as U+FFFD.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
