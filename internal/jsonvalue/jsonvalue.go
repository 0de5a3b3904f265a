// Package jsonvalue parses untrusted JSON text (RFC 8259) strictly into a
// generic tree of map[string]any, []any, json.Number, string, bool and nil.
//
// It is stricter than encoding/json where leniency would let two readers of
// one document disagree: duplicate object keys, invalid UTF-8 and lone
// surrogate escapes are errors rather than silently resolved. It also bounds
// what would let a small document cost a lot to process: nesting depth
// (MaxDepth) and the size of numbers (MaxNumberLen, MaxExponent).
// Everything else follows the RFC grammar exactly.
//
// Surrogates: a \uD800-\uDBFF escape must be followed directly by a
// \uDC00-\uDFFF escape; any other use of a surrogate escape is a syntax
// error. encoding/json replaces such escapes with U+FFFD, which can make two
// different keys collide after decoding, so this package rejects them.
//
// A Reader can be given Rules that relax some of this for a document whose
// reading was decided elsewhere, such as a host JWT, which has always been
// read as encoding/json reads it.
//
// The tree shares memory: every string, key and number that contains no
// escape sequence is a substring of a single copy of the input made by the
// parse, so a retained value keeps that copy alive. Request-scoped trees are
// the intended use.
package jsonvalue

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects Parse accepts. The
// parser recurses once per level, so the limit bounds the stack an attacker
// can make it use.
const MaxDepth = 1000

// MaxNumberLen and MaxExponent bound the numbers Parse accepts, as RFC 8259
// section 9 allows. Schema validation compares numbers exactly with
// math/big, whose cost grows with the digits and the exponent of a number
// (1e1000000 takes tens of milliseconds to convert), so unbounded numbers
// would let a short request burn seconds of CPU. The bounds are far beyond
// float64 and any integer type.
const (
	MaxNumberLen = 256
	MaxExponent  = 400
)

// Messages of the SyntaxError values that describe input encoding/json
// accepts but this package refuses on purpose.
const (
	MsgInvalidUTF8    = "invalid UTF-8 in string"
	MsgSurrogate      = "invalid surrogate escape in string"
	MsgTooDeep        = "nesting deeper than 1000 levels"
	MsgNumberTooLong  = "number longer than 256 bytes"
	MsgExponentTooBig = "number exponent beyond 400"
)

// SyntaxError reports input that is not a single well-formed JSON value.
type SyntaxError struct {
	// Offset is the byte offset in the input where the problem was found.
	Offset int64
	// Msg describes the problem without quoting more than one input byte.
	Msg string
}

// Error describes the problem and its byte offset. Like the other errors
// of this package it names no package: callers show it to the client that
// sent the JSON, to whom an internal package name means nothing.
func (e *SyntaxError) Error() string {
	return e.Msg + " at offset " + strconv.FormatInt(e.Offset, 10)
}

// DuplicateKeyError reports an object that names the same key twice.
type DuplicateKeyError struct {
	// Path is the JSON Pointer (RFC 6901) of the object holding the key;
	// "" is the top-level value.
	Path string
	// Key is the repeated key, unescaped.
	Key string
}

// Error names the key and the object, each truncated to a few bytes.
func (e *DuplicateKeyError) Error() string {
	where := "the top-level object"
	if e.Path != "" {
		where = "the object at " + shortQuote(e.Path)
	}
	return "duplicate key " + shortQuote(e.Key) + " in " + where
}

// NotObjectError reports that ParseObject was given a well-formed JSON value
// other than an object.
type NotObjectError struct {
	// Got is the JSON type that was found: "array", "string", "number",
	// "boolean" or "null".
	Got string
}

// Error names the JSON type that was found.
func (e *NotObjectError) Error() string {
	return "value must be an object, got " + e.Got
}

// Parse parses exactly one JSON value (RFC 8259) into a generic tree:
// objects become map[string]any, arrays []any, numbers json.Number holding
// the exact text, strings string, true and false bool, and null nil.
// Whitespace may surround the value; anything else after it is an error.
//
// Errors are *SyntaxError or *DuplicateKeyError.
func Parse(data []byte) (any, error) {
	p := getParser(data)
	defer putParser(p)
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return v, nil
}

// ParseObject is Parse for a document whose top level must be an object.
// members maps each top-level key to the raw bytes of its value, without
// surrounding whitespace. Those are sub-slices of data, not copies, with
// their capacity cut to their length so that appending to one never writes
// into data. A well-formed document that is not an object yields a
// *NotObjectError.
func ParseObject(data []byte) (obj map[string]any, members map[string]json.RawMessage, err error) {
	p := getParser(data)
	defer putParser(p)
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] != '{' {
		v, err := p.value()
		if err != nil {
			return nil, nil, err
		}
		if err := p.end(); err != nil {
			return nil, nil, err
		}
		return nil, nil, &NotObjectError{Got: typeName(v)}
	}
	if p.i >= len(p.s) {
		return nil, nil, p.eof()
	}
	p.raw = true
	obj, err = p.object()
	if err != nil {
		return nil, nil, err
	}
	if err := p.end(); err != nil {
		return nil, nil, err
	}
	return obj, p.members, nil
}

// Pointer appends a reference token to a JSON Pointer, escaping ~ and /
// as RFC 6901 requires.
func Pointer(base string, token string) string {
	if strings.IndexByte(token, '~') < 0 && strings.IndexByte(token, '/') < 0 {
		return base + "/" + token
	}
	var b strings.Builder
	b.Grow(len(base) + len(token) + 4)
	b.WriteString(base)
	b.WriteByte('/')
	for i := 0; i < len(token); i++ {
		switch c := token[i]; c {
		case '~':
			b.WriteString("~0")
		case '/':
			b.WriteString("~1")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// member is one parsed key/value pair waiting for its object to close, when
// the number of members is known and the map can be allocated at its final
// size.
type member struct {
	key string
	val any
}

// span locates a top-level member's value in the input for ParseObject.
type span struct{ start, end int }

type parser struct {
	// s is a copy of the input; unescaped strings are substrings of it.
	s    string
	data []byte
	i    int

	depth int
	// anyNumber lifts MaxNumberLen and MaxExponent, and replace reads
	// strings as encoding/json does (see Rules); both are off for Parse.
	anyNumber, replace bool
	// raw asks the next object parsed at depth 1 to record member spans.
	raw     bool
	members map[string]json.RawMessage

	// Scratch stacks shared by all nesting levels; each level uses the
	// part above the length it found on entry.
	mstack []member
	vstack []any
	spans  []span
	buf    []byte
}

var parsers = sync.Pool{New: func() any { return new(parser) }}

func getParser(data []byte) *parser {
	p := parsers.Get().(*parser)
	p.s = string(data)
	p.data = data
	return p
}

// maxPooledScratch keeps one huge document from pinning large scratch
// buffers in the pool.
const maxPooledScratch = 4096

func putParser(p *parser) {
	p.s, p.data, p.i, p.depth, p.raw, p.members = "", nil, 0, 0, false, nil
	p.anyNumber, p.replace = false, false
	if cap(p.mstack) > maxPooledScratch || cap(p.vstack) > maxPooledScratch || cap(p.buf) > 16*maxPooledScratch {
		return
	}
	// Stacks are cleared as levels close, so nothing stale is retained.
	p.mstack, p.vstack, p.spans, p.buf = p.mstack[:0], p.vstack[:0], p.spans[:0], p.buf[:0]
	parsers.Put(p)
}

// whitespace marks the four bytes RFC 8259 allows between tokens.
var whitespace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// plain marks string bytes that can be taken as they are: printable ASCII
// other than the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plainWord reports whether the eight bytes of b are all plain, testing
// them at once as one word: none is below 0x20, none is the quote or the
// backslash, and none has its high bit set. Each test is exact for the
// word as a whole (a borrow only starts at a byte that matches).
func plainWord(b string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
	control := (w - 0x20*ones) &^ w
	q := w ^ '"'*ones
	quote := (q - ones) &^ q
	bs := w ^ '\\'*ones
	backslash := (bs - ones) &^ bs
	return (control|quote|backslash|w)&highs == 0
}

func (p *parser) skipSpace() {
	for p.i < len(p.s) && whitespace[p.s[p.i]] {
		p.i++
	}
}

// end checks that only whitespace follows the top-level value.
func (p *parser) end() error {
	p.skipSpace()
	if p.i < len(p.s) {
		return p.errAt(p.i, "invalid character "+describe(p.s[p.i])+" after top-level value")
	}
	return nil
}

func (p *parser) value() (any, error) {
	p.skipSpace()
	if p.i >= len(p.s) {
		return nil, p.eof()
	}
	switch c := p.s[p.i]; c {
	case '{':
		m, err := p.object()
		if err != nil {
			return nil, err
		}
		return m, nil
	case '[':
		a, err := p.array()
		if err != nil {
			return nil, err
		}
		return a, nil
	case '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return s, nil
	case 't':
		return true, p.literal("true")
	case 'f':
		return false, p.literal("false")
	case 'n':
		return nil, p.literal("null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			n, err := p.number()
			if err != nil {
				return nil, err
			}
			return n, nil
		}
		return nil, p.errAt(p.i, "invalid character "+describe(c)+" looking for beginning of value")
	}
}

func (p *parser) literal(word string) error {
	if strings.HasPrefix(p.s[p.i:], word) {
		p.i += len(word)
		return nil
	}
	// Report the first byte that differs, or the end of input.
	for k := 0; k < len(word); k++ {
		at := p.i + k
		if at >= len(p.s) {
			return p.eof()
		}
		if p.s[at] != word[k] {
			return p.errAt(at, "invalid character "+describe(p.s[at])+" in literal "+word)
		}
	}
	return nil
}

func (p *parser) object() (map[string]any, error) {
	raw := p.raw
	p.raw = false
	p.depth++
	if p.depth > MaxDepth {
		return nil, p.errAt(p.i, MsgTooDeep)
	}
	p.i++ // '{'
	base := len(p.mstack)
	sbase := len(p.spans)
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		p.depth--
		if raw {
			p.members = map[string]json.RawMessage{}
		}
		return map[string]any{}, nil
	}
	for {
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, p.unwindObject(base, sbase, p.eof())
		}
		if p.s[p.i] != '"' {
			return nil, p.unwindObject(base, sbase, p.errAt(p.i, "invalid character "+describe(p.s[p.i])+" looking for beginning of object key"))
		}
		key, err := p.str()
		if err != nil {
			return nil, p.unwindObject(base, sbase, err)
		}
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, p.unwindObject(base, sbase, p.eof())
		}
		if p.s[p.i] != ':' {
			return nil, p.unwindObject(base, sbase, p.errAt(p.i, "invalid character "+describe(p.s[p.i])+" after object key"))
		}
		p.i++
		p.skipSpace()
		start := p.i
		val, err := p.value()
		if err != nil {
			return nil, p.unwindObject(base, sbase, inside(err, key))
		}
		if raw {
			p.spans = append(p.spans, span{start, p.i})
		}
		p.mstack = append(p.mstack, member{key, val})
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, p.unwindObject(base, sbase, p.eof())
		}
		c := p.s[p.i]
		p.i++
		if c == ',' {
			continue
		}
		if c == '}' {
			break
		}
		return nil, p.unwindObject(base, sbase, p.errAt(p.i-1, "invalid character "+describe(c)+" after object value"))
	}

	ms := p.mstack[base:]
	m := make(map[string]any, len(ms))
	for _, mb := range ms {
		n := len(m)
		m[mb.key] = mb.val
		if len(m) == n {
			return nil, p.unwindObject(base, sbase, &DuplicateKeyError{Key: mb.key})
		}
	}
	if raw {
		p.members = make(map[string]json.RawMessage, len(ms))
		for k, sp := range p.spans[sbase:] {
			p.members[ms[k].key] = json.RawMessage(p.data[sp.start:sp.end:sp.end])
		}
	}
	p.unwindObject(base, sbase, nil)
	p.depth--
	return m, nil
}

// unwindObject drops an object's scratch entries, clearing them so that the
// pooled parser holds no reference into the tree, and passes err through.
func (p *parser) unwindObject(base, sbase int, err error) error {
	clear(p.mstack[base:])
	p.mstack = p.mstack[:base]
	p.spans = p.spans[:sbase]
	return err
}

func (p *parser) array() ([]any, error) {
	p.depth++
	if p.depth > MaxDepth {
		return nil, p.errAt(p.i, MsgTooDeep)
	}
	p.i++ // '['
	base := len(p.vstack)
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		p.depth--
		return []any{}, nil
	}
	for idx := 0; ; idx++ {
		val, err := p.value()
		if err != nil {
			return nil, p.unwindArray(base, inside(err, strconv.Itoa(idx)))
		}
		p.vstack = append(p.vstack, val)
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, p.unwindArray(base, p.eof())
		}
		c := p.s[p.i]
		p.i++
		if c == ',' {
			continue
		}
		if c == ']' {
			break
		}
		return nil, p.unwindArray(base, p.errAt(p.i-1, "invalid character "+describe(c)+" after array element"))
	}
	a := make([]any, len(p.vstack)-base)
	copy(a, p.vstack[base:])
	p.unwindArray(base, nil)
	p.depth--
	return a, nil
}

func (p *parser) unwindArray(base int, err error) error {
	clear(p.vstack[base:])
	p.vstack = p.vstack[:base]
	return err
}

// inside prefixes the path of a duplicate-key error found in a nested value
// with the token leading to that value. Paths are built only on this
// failure path, so successful parses never pay for them.
func inside(err error, token string) error {
	if d, ok := err.(*DuplicateKeyError); ok {
		d.Path = Pointer("", token) + d.Path
	}
	return err
}

// str parses a string starting at the opening quote.
func (p *parser) str() (string, error) {
	s := p.s
	start := p.i + 1
	i := start
	// Eight plain bytes at a time, then byte by byte from the first that
	// is not.
	for i+8 <= len(s) && plainWord(s[i:i+8]) {
		i += 8
	}
	for i < len(s) {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			p.i = i + 1
			return s[start:i], nil
		case c == '\\':
			return p.escapedStr(start, i)
		case c < 0x20:
			return "", p.errAt(i, "control character "+describe(c)+" in string")
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			if p.replace {
				return p.escapedStr(start, i)
			}
			return "", p.errAt(i, MsgInvalidUTF8)
		}
		i += size
	}
	return "", p.eof()
}

// escapedStr continues str from the first backslash at i, building the
// unescaped text in the parser's scratch buffer.
func (p *parser) escapedStr(start, i int) (string, error) {
	s := p.s
	b := append(p.buf[:0], s[start:i]...)
	for i < len(s) {
		c := s[i]
		if plain[c] {
			i++
			b = append(b, c)
			continue
		}
		switch {
		case c == '"':
			p.i = i + 1
			p.buf = b
			return string(b), nil
		case c < 0x20:
			return "", p.errAt(i, "control character "+describe(c)+" in string")
		case c >= 0x80:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				if !p.replace {
					return "", p.errAt(i, MsgInvalidUTF8)
				}
				b = utf8.AppendRune(b, utf8.RuneError)
				i++
				continue
			}
			b = append(b, s[i:i+size]...)
			i += size
			continue
		}
		// Backslash.
		r, n, fail, at := ReadEscape(s, i)
		switch fail {
		case EscapeTruncated:
			return "", p.eof()
		case EscapeBadChar:
			return "", p.errAt(at, "invalid escape character "+describe(s[at])+" in string")
		case EscapeBadHex:
			return "", p.errAt(at, "invalid character "+describe(s[at])+" in \\u escape")
		}
		switch {
		case p.replace && IsHighSurrogate(r):
			// As encoding/json reads it: a pair is a character, any
			// other surrogate escape U+FFFD.
			if pair, n2, ok := ReadSurrogatePair(s, r, i+n); ok {
				r, n = pair, n+n2
			} else {
				r = utf8.RuneError
			}
		case p.replace && IsLowSurrogate(r):
			r = utf8.RuneError
		case IsLowSurrogate(r):
			return "", p.errAt(i, MsgSurrogate)
		case IsHighSurrogate(r):
			// A high surrogate must be followed at once by a \u
			// escape holding a low surrogate.
			r, n, err := p.lowSurrogate(r, i)
			if err != nil {
				return "", err
			}
			b = utf8.AppendRune(b, r)
			i += n
			continue
		}
		b = utf8.AppendRune(b, r)
		i += n
	}
	return "", p.eof()
}

// lowSurrogate reads the escape of a low surrogate that must follow at
// once the escape of the high surrogate hi at s[i], and returns the
// character of the pair and the length of both escapes.
func (p *parser) lowSurrogate(hi rune, i int) (rune, int, error) {
	s := p.s
	for k, want := range [2]byte{'\\', 'u'} {
		if i+6+k >= len(s) {
			return 0, 0, p.eof()
		}
		if s[i+6+k] != want {
			return 0, 0, p.errAt(i, MsgSurrogate)
		}
	}
	lo, _, fail, at := ReadEscape(s, i+6)
	switch fail {
	case EscapeTruncated:
		return 0, 0, p.eof()
	case EscapeBadHex:
		return 0, 0, p.errAt(at, "invalid character "+describe(s[at])+" in \\u escape")
	}
	if !IsLowSurrogate(lo) {
		return 0, 0, p.errAt(i, MsgSurrogate)
	}
	return 0x10000 + (hi-0xD800)<<10 + (lo - 0xDC00), 12, nil
}

func (p *parser) number() (json.Number, error) {
	s := p.s
	start := p.i
	i := p.i
	if s[i] == '-' {
		i++
	}
	if i >= len(s) {
		return "", p.eof()
	}
	switch c := s[i]; {
	case c == '0':
		i++
		if i < len(s) && isDigit(s[i]) {
			return "", p.errAt(i, "leading zero in number")
		}
	case c >= '1' && c <= '9':
		i = digits(s, i+1)
	default:
		return "", p.errAt(i, "invalid character "+describe(c)+" in number")
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) {
			return "", p.eof()
		}
		if !isDigit(s[i]) {
			return "", p.errAt(i, "invalid character "+describe(s[i])+" after decimal point in number")
		}
		i = digits(s, i+1)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) {
			return "", p.eof()
		}
		if !isDigit(s[i]) {
			return "", p.errAt(i, "invalid character "+describe(s[i])+" in exponent of number")
		}
		exp := 0
		for ; i < len(s) && isDigit(s[i]); i++ {
			if exp <= MaxExponent {
				exp = exp*10 + int(s[i]-'0')
			}
		}
		if exp > MaxExponent && !p.anyNumber {
			return "", p.errAt(start, MsgExponentTooBig)
		}
	}
	if i-start > MaxNumberLen && !p.anyNumber {
		return "", p.errAt(start, MsgNumberTooLong)
	}
	p.i = i
	return json.Number(s[start:i]), nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digits(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

func (p *parser) eof() error {
	return &SyntaxError{Offset: int64(len(p.s)), Msg: "unexpected end of input"}
}

func (p *parser) errAt(i int, msg string) error {
	return &SyntaxError{Offset: int64(i), Msg: msg}
}

// describe names one input byte for an error message without echoing
// anything unprintable.
func describe(c byte) string {
	if c >= 0x20 && c < 0x7f {
		if c == '\'' {
			return `'\''`
		}
		return "'" + string(rune(c)) + "'"
	}
	const hex = "0123456789abcdef"
	return "byte 0x" + string([]byte{hex[c>>4], hex[c&0xf]})
}

// shortQuote quotes s for an error message, truncated so that an error
// never carries a large piece of the input.
func shortQuote(s string) string {
	const limit = 32
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

func typeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	default:
		return "null"
	}
}
