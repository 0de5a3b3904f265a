// Package jsoncanon writes JSON text in one canonical form, so that
// arguments that differ only in member order, white space or the spelling
// of a number can be recognised as the same: idempotency fingerprints,
// confirmation bindings and audit digests all use it.
package jsoncanon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// Append appends the canonical form of the JSON text data: object
// members in key order, strings with only the escapes JSON requires,
// numbers in one spelling (as float64), no white space. It works on the
// text itself, without building a tree, so fingerprinting costs next to
// nothing beside the call it guards. ok is false for text that is not one
// JSON value.
func Append(dst, data []byte) (out []byte, ok bool) {
	i := skipWS(data, 0)
	dst, i, ok = canonValue(dst, data, i, 0)
	if !ok || skipWS(data, i) != len(data) {
		return dst, false
	}
	return dst, true
}

// Digest returns the hex SHA-256 of the canonical form of a call's
// arguments. Absent, empty and null arguments are the same, {}. Text that
// is not JSON is digested as it is, after a byte no canonical form starts
// with, so that it never matches a JSON text's digest.
func Digest(args []byte) string {
	var inline [256]byte
	buf := inline[:0]
	if trimmed := trimWS(args); len(trimmed) == 0 || string(trimmed) == "null" {
		buf = append(buf, '{', '}')
	} else if c, ok := Append(buf, trimmed); ok {
		buf = c
	} else {
		buf = append(buf[:0], 1)
		buf = append(buf, trimmed...)
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// trimWS drops JSON white space from both ends of b.
func trimWS(b []byte) []byte {
	b = b[skipWS(b, 0):]
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// maxCanonDepth bounds nesting, as encoding/json does.
const maxCanonDepth = 10000

func skipWS(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// member is an object member: its key as compared (unescaped) and where
// its value is.
type member struct {
	key        []byte
	raw        []byte // the key's text as written, quotes included
	escaped    bool
	start, end int
}

func canonValue(dst, data []byte, i, depth int) ([]byte, int, bool) {
	if i >= len(data) || depth > maxCanonDepth {
		return dst, i, false
	}
	switch c := data[i]; {
	case c == '{':
		var inline [8]member
		members := inline[:0]
		i = skipWS(data, i+1)
		if i < len(data) && data[i] == '}' {
			return append(dst, '{', '}'), i + 1, true
		}
		for {
			if i >= len(data) || data[i] != '"' {
				return dst, i, false
			}
			end, escaped, ok := stringEnd(data, i)
			if !ok {
				return dst, i, false
			}
			m := member{raw: data[i:end], escaped: escaped, key: data[i+1 : end-1]}
			if escaped {
				key, ok := unescape(m.raw)
				if !ok {
					return dst, i, false
				}
				m.key = []byte(key)
			}
			i = skipWS(data, end)
			if i >= len(data) || data[i] != ':' {
				return dst, i, false
			}
			i = skipWS(data, i+1)
			m.start = i
			if i, ok = skipValue(data, i, depth+1); !ok {
				return dst, i, false
			}
			m.end = i
			members = append(members, m)
			i = skipWS(data, i)
			if i < len(data) && data[i] == ',' {
				i = skipWS(data, i+1)
				continue
			}
			if i < len(data) && data[i] == '}' {
				i++
				break
			}
			return dst, i, false
		}
		slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
		dst = append(dst, '{')
		for k, m := range members {
			if k > 0 {
				dst = append(dst, ',')
			}
			if m.escaped {
				dst = jsonvalue.AppendString(dst, string(m.key))
			} else {
				dst = append(dst, m.raw...)
			}
			dst = append(dst, ':')
			var ok bool
			if dst, _, ok = canonValue(dst, data[:m.end], m.start, depth+1); !ok {
				return dst, i, false
			}
		}
		return append(dst, '}'), i, true
	case c == '[':
		dst = append(dst, '[')
		i = skipWS(data, i+1)
		if i < len(data) && data[i] == ']' {
			return append(dst, ']'), i + 1, true
		}
		for n := 0; ; n++ {
			if n > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, i, ok = canonValue(dst, data, i, depth+1); !ok {
				return dst, i, false
			}
			i = skipWS(data, i)
			if i < len(data) && data[i] == ',' {
				i = skipWS(data, i+1)
				continue
			}
			if i < len(data) && data[i] == ']' {
				return append(dst, ']'), i + 1, true
			}
			return dst, i, false
		}
	case c == '"':
		end, escaped, ok := stringEnd(data, i)
		if !ok {
			return dst, i, false
		}
		if !escaped {
			return append(dst, data[i:end]...), end, true
		}
		s, ok := unescape(data[i:end])
		if !ok {
			return dst, i, false
		}
		return jsonvalue.AppendString(dst, s), end, true
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if len(data)-i >= len(lit) && string(data[i:i+len(lit)]) == lit {
				return append(dst, lit...), i + len(lit), true
			}
		}
		return dst, i, false
	default:
		end := i
		for end < len(data) && (data[end] == '-' || data[end] == '+' || data[end] == '.' || data[end] == 'e' || data[end] == 'E' || data[end] >= '0' && data[end] <= '9') {
			end++
		}
		if end == i {
			return dst, i, false
		}
		f, err := strconv.ParseFloat(string(data[i:end]), 64)
		if err != nil {
			// Out of float64's range: the spelling is all there is.
			if !json.Valid(data[i:end]) {
				return dst, i, false
			}
			return append(dst, data[i:end]...), end, true
		}
		return strconv.AppendFloat(dst, f, 'g', -1, 64), end, true
	}
}

// unescape decodes a JSON string with escapes, quotes included, as
// encoding/json does (see jsonvalue.Unquote).
func unescape(quoted []byte) (string, bool) { return jsonvalue.Unquote(quoted) }

// stringEnd returns the index after the string starting at data[i] and
// whether it holds escapes.
func stringEnd(data []byte, i int) (end int, escaped, ok bool) {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped, true
		}
	}
	return 0, false, false
}

// skipValue returns the index after the value starting at data[i].
func skipValue(data []byte, i, depth int) (int, bool) {
	if i >= len(data) || depth > maxCanonDepth {
		return i, false
	}
	switch data[i] {
	case '"':
		end, _, ok := stringEnd(data, i)
		return end, ok
	case '{', '[':
		open := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, _, ok := stringEnd(data, j)
				if !ok {
					return j, false
				}
				j = end - 1
			case '{', '[':
				open++
				if open > maxCanonDepth {
					return j, false
				}
			case '}', ']':
				open--
				if open == 0 {
					return j + 1, true
				}
			}
		}
		return len(data), false
	default:
		j := i
		for j < len(data) && data[j] != ',' && data[j] != '}' && data[j] != ']' && data[j] != ' ' && data[j] != '\t' && data[j] != '\n' && data[j] != '\r' {
			j++
		}
		return j, j > i
	}
}
