package jsonvalue

import "unicode/utf8"

// The scanner below checks JSON text by the grammar of encoding/json,
// the one it documents and Valid applies: nesting up to ScanMaxDepth,
// any number, and any surrogate escape, but UTF-8 checked in strings. It
// finds where values end without building anything, for readers, such as
// the envelope of an execute request, that look at the top level of a
// document and hand the rest on raw, to Parse.

// ScanMaxDepth is encoding/json's nesting limit, which ScanValue keeps so
// that it accepts exactly the texts encoding/json.Valid accepts (in valid
// UTF-8).
const ScanMaxDepth = 10000

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// containers remembers, for each open array or object, which of the two
// it is. The first 64 levels live in one word; only a document nested
// deeper than that costs an allocation.
type containers struct {
	n    int
	low  uint64
	high []uint64
}

func (c *containers) push(object bool) {
	var bit uint64
	if object {
		bit = 1
	}
	if c.n < 64 {
		c.low = c.low&^(1<<c.n) | bit<<c.n
	} else {
		w, b := (c.n-64)/64, uint(c.n-64)%64
		if w == len(c.high) {
			c.high = append(c.high, 0)
		}
		c.high[w] = c.high[w]&^(1<<b) | bit<<b
	}
	c.n++
}

// inObject reports whether the innermost open container is an object.
func (c *containers) inObject() bool {
	top := c.n - 1
	if top < 64 {
		return c.low>>top&1 == 1
	}
	top -= 64
	return c.high[top/64]>>(uint(top)%64)&1 == 1
}

// ScanValue checks the JSON value that starts at data[i] and returns the
// index just past it, or -1 when the bytes there are not a value. depth
// is the number of containers already open around it, which counts
// towards ScanMaxDepth.
func ScanValue(data []byte, i, depth int) int {
	var open containers
	for {
		// A value starts at i.
		if i >= len(data) {
			return -1
		}
		switch c := data[i]; c {
		case '{', '[':
			if depth+open.n >= ScanMaxDepth {
				return -1
			}
			open.push(c == '{')
			i = SkipSpace(data, i+1)
			if i < len(data) && (c == '{' && data[i] == '}' || c == '[' && data[i] == ']') {
				open.n--
				i++
				break
			}
			if c == '{' {
				if i = scanKey(data, i); i < 0 {
					return -1
				}
			}
			continue
		case '"':
			if i, _ = ScanString(data, i); i < 0 {
				return -1
			}
		case 't':
			if i = scanLiteral(data, i, "true"); i < 0 {
				return -1
			}
		case 'f':
			if i = scanLiteral(data, i, "false"); i < 0 {
				return -1
			}
		case 'n':
			if i = scanLiteral(data, i, "null"); i < 0 {
				return -1
			}
		default:
			if i = scanNumber(data, i); i < 0 {
				return -1
			}
		}
		// A value ended at i: close containers until another value is due.
		for {
			if open.n == 0 {
				return i
			}
			i = SkipSpace(data, i)
			if i >= len(data) {
				return -1
			}
			object := open.inObject()
			c := data[i]
			if c == ',' {
				i = SkipSpace(data, i+1)
				if object {
					if i = scanKey(data, i); i < 0 {
						return -1
					}
				}
				break
			}
			if object && c != '}' || !object && c != ']' {
				return -1
			}
			open.n--
			i++
		}
	}
}

// scanKey checks a member name and its colon at data[i] and returns the
// index of the member's value.
func scanKey(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	i, _ = ScanString(data, i)
	if i < 0 {
		return -1
	}
	i = SkipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	return SkipSpace(data, i+1)
}

// ScanString checks the string that starts at data[i], a quote, and
// returns the index just past it, or -1. escaped reports a backslash in
// it. Control characters and invalid UTF-8 are refused.
func ScanString(data []byte, i int) (end int, escaped bool) {
	for i++; i < len(data); {
		c := data[i]
		switch {
		case c == '"':
			return i + 1, escaped
		case c == '\\':
			escaped = true
			_, n, fail, _ := ReadEscape(data, i)
			if fail != 0 {
				return -1, escaped
			}
			i += n
		case c < 0x20:
			return -1, escaped
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return -1, escaped
			}
			i += size
		}
	}
	return -1, escaped
}

// scanLiteral checks that lit starts at data[i].
func scanLiteral(data []byte, i int, lit string) int {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// scanNumber checks the number that starts at data[i]:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(data []byte, i int) int {
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		i = scanDigits(data, i+1)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		j := scanDigits(data, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := scanDigits(data, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func scanDigits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}
