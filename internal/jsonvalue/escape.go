package jsonvalue

import (
	"unicode/utf8"
)

// This file is the one place of the module that decodes the escape
// sequences of JSON strings. The readers differ only in what they do with
// a surrogate escape that is not half of a pair, which is policy, not
// grammar: Parse and Reader refuse it, the constraint grammar keeps it as
// its own three bytes (as WTF-8 does), and Unquote and a Reader under
// Rules.Replace, which read as encoding/json does, replace it with U+FFFD.

// EscapeFailure says why ReadEscape could not read an escape sequence.
type EscapeFailure uint8

// The failures of ReadEscape.
const (
	// EscapeTruncated: the input ends inside the escape sequence.
	EscapeTruncated EscapeFailure = iota + 1
	// EscapeBadChar: the byte after the backslash starts no escape.
	EscapeBadChar
	// EscapeBadHex: a byte of a \u escape's four is not a hex digit.
	EscapeBadHex
)

// ReadEscape reads the escape sequence whose backslash is at s[i]: one of
// the eight two-byte escapes, or a \u escape of four hex digits. It
// returns the code point and the length of the sequence, 2 or 6. A \u
// escape of one half of a surrogate pair is returned as that half, for the
// caller to pair (see ReadSurrogatePair), refuse, replace or keep.
//
// On failure n is 0, and at is the offset of the byte at fault: the byte
// after the backslash for EscapeBadChar, the first bad digit for
// EscapeBadHex, and len(s) for EscapeTruncated.
func ReadEscape[T string | []byte](s T, i int) (r rune, n int, fail EscapeFailure, at int) {
	if i+1 >= len(s) {
		return 0, 0, EscapeTruncated, len(s)
	}
	switch c := s[i+1]; c {
	case '"', '\\', '/':
		return rune(c), 2, 0, 0
	case 'b':
		return '\b', 2, 0, 0
	case 'f':
		return '\f', 2, 0, 0
	case 'n':
		return '\n', 2, 0, 0
	case 'r':
		return '\r', 2, 0, 0
	case 't':
		return '\t', 2, 0, 0
	case 'u':
		for k := i + 2; k < i+6; k++ {
			if k >= len(s) {
				return 0, 0, EscapeTruncated, len(s)
			}
			c := s[k]
			switch {
			case c >= '0' && c <= '9':
				r = r<<4 | rune(c-'0')
			case c >= 'a' && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case c >= 'A' && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, 0, EscapeBadHex, k
			}
		}
		return r, 6, 0, 0
	}
	return 0, 0, EscapeBadChar, i + 1
}

// IsHighSurrogate and IsLowSurrogate tell the two halves of a UTF-16
// surrogate pair.
func IsHighSurrogate(r rune) bool { return r >= 0xD800 && r <= 0xDBFF }

// IsLowSurrogate: see IsHighSurrogate.
func IsLowSurrogate(r rune) bool { return r >= 0xDC00 && r <= 0xDFFF }

// ReadSurrogatePair reads, after a \u escape of the high surrogate hi
// that ended at s[j], the \u escape of a low surrogate that must follow at
// once, and returns the character of the pair and the length of the second
// escape, 6. ok is false, and n 0, when no such escape is at s[j]; the
// caller decides what the lone half is then.
func ReadSurrogatePair[T string | []byte](s T, hi rune, j int) (r rune, n int, ok bool) {
	if j+1 >= len(s) || s[j] != '\\' || s[j+1] != 'u' {
		return 0, 0, false
	}
	lo, n, fail, _ := ReadEscape(s, j)
	if fail != 0 || !IsLowSurrogate(lo) {
		return 0, 0, false
	}
	return 0x10000 + (hi-0xD800)<<10 + (lo - 0xDC00), n, true
}

// Unquote decodes a JSON string token, quotes included, exactly as
// encoding/json's Unmarshal into a string does: the token must be a valid
// JSON string (no control character, every escape well formed, nothing
// after the closing quote), while each byte that is not part of valid
// UTF-8, and each surrogate escape that is not half of a pair, becomes
// U+FFFD. ok is false for a token encoding/json would refuse.
func Unquote(tok []byte) (string, bool) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return "", false
	}
	body := tok[1 : len(tok)-1]
	// The common case: nothing to decode or replace.
	i := 0
	for i < len(body) {
		c := body[i]
		if c == '\\' || c == '"' || c < 0x20 {
			break
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	if i == len(body) {
		return string(body), true
	}
	b := make([]byte, 0, len(body)+2*utf8.UTFMax)
	b = append(b, body[:i]...)
	for i < len(body) {
		c := body[i]
		switch {
		case c == '"' || c < 0x20:
			return "", false
		case c == '\\':
			r, n, fail, _ := ReadEscape(body, i)
			if fail != 0 {
				return "", false
			}
			if r >= 0xD800 && r <= 0xDFFF {
				if IsHighSurrogate(r) {
					if pair, n2, ok := ReadSurrogatePair(body, r, i+n); ok {
						b = utf8.AppendRune(b, pair)
						i += n + n2
						continue
					}
				}
				r = utf8.RuneError
			}
			b = utf8.AppendRune(b, r)
			i += n
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune(body[i:])
			// RuneError of size 1 is a byte outside valid UTF-8,
			// written as U+FFFD, which is what r holds.
			b = utf8.AppendRune(b, r)
			i += size
		}
	}
	return string(b), true
}
