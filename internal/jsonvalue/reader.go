package jsonvalue

import (
	"encoding/json"
	"slices"
	"strconv"
)

// Kind is the JSON type of the value a Reader is about to read.
type Kind uint8

// The kinds of JSON values.
const (
	KindNull Kind = iota + 1
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

// String names the kind as JSON Schema's "type" keyword does.
func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindBool:
		return "boolean"
	case KindNumber:
		return "number"
	case KindString:
		return "string"
	case KindArray:
		return "array"
	case KindObject:
		return "object"
	}
	return "invalid"
}

// Reader reads one JSON document a token at a time, under exactly the
// rules of Parse: the same grammar, the same string and number checks, the
// same nesting bound, and duplicate keys are errors. It lets a caller that
// only inspects a document, such as a validator, walk it without building a
// tree.
//
// A document is read by calling Peek before each value and then the
// method for its kind: ReadNull, ReadBool, ReadNumber, ReadString, Skip,
// or BeginObject followed by NextMember until it reports false, or
// BeginArray followed by NextElement until it reports false. Finish checks
// that nothing but whitespace follows the top-level value. A duplicate key
// is reported by the NextMember call that closes its object.
//
// Errors are *SyntaxError or *DuplicateKeyError; a DuplicateKeyError's Path
// is always empty, since a Reader does not track where it is. After an
// error the Reader must be Reset before further use. Strings and keys that
// contain no escape sequence are substrings of one copy of the document
// made by Reset.
//
// The zero Reader reads an empty document; Reset gives it one. A Reader
// keeps its scratch space across Reset calls, so one reused Reader reads
// documents without allocating beyond that copy.
type Reader struct {
	p parser
	// keys holds the keys read so far in every open object, innermost
	// last; opens holds, for each open object or array, where its keys
	// start in keys and whether a member or element has been read.
	keys  []string
	opens []open
	// maxDepth and outerKeysOnly are the Rules of the document.
	maxDepth      int
	outerKeysOnly bool
}

// Rules are the ways in which a Reader may read a document otherwise than
// Parse does, for a caller whose documents are bounded, or whose readings
// were decided, elsewhere. The zero Rules are Parse's.
type Rules struct {
	// MaxDepth, when positive, replaces MaxDepth as the deepest nesting
	// read.
	MaxDepth int
	// AnyNumber lifts MaxNumberLen and MaxExponent, for a document small
	// enough whose numbers the caller converts itself, if at all.
	AnyNumber bool
	// Replace reads strings and keys as encoding/json does (see
	// Unquote): each byte that is not part of valid UTF-8, and each
	// surrogate escape that is not half of a pair, becomes U+FFFD instead
	// of being an error. Keys are compared as read, so two that read as
	// one are duplicates.
	Replace bool
	// OuterKeysOnly checks for duplicate keys in the top-level object
	// only.
	OuterKeysOnly bool
}

type open struct {
	keyBase int
	object  bool
	started bool
}

// Reset makes r read data from its beginning. Scratch space grown by an
// unusually large document is released rather than kept.
func (r *Reader) Reset(data []byte) {
	r.ResetText(string(data), Rules{})
	r.p.data = data
}

// ResetText is Reset for a document held in a string, which the Reader
// reads in place, without a copy, under rules.
func (r *Reader) ResetText(doc string, rules Rules) {
	r.p.s = doc
	r.p.data = nil
	r.p.anyNumber, r.p.replace = rules.AnyNumber, rules.Replace
	r.maxDepth, r.outerKeysOnly = rules.MaxDepth, rules.OuterKeysOnly
	r.p.i = 0
	r.p.depth = 0
	clear(r.keys)
	r.keys = r.keys[:0]
	r.opens = r.opens[:0]
	if cap(r.keys) > maxPooledScratch || cap(r.opens) > maxPooledScratch || cap(r.p.buf) > 16*maxPooledScratch {
		r.keys, r.opens, r.p.buf = nil, nil, nil
	}
}

// Offset is the byte offset in the document where the next token starts,
// once Peek has skipped the whitespace before it.
func (r *Reader) Offset() int { return r.p.i }

// Peek skips whitespace and reports the kind of the value that starts
// there, without consuming it.
func (r *Reader) Peek() (Kind, error) {
	p := &r.p
	p.skipSpace()
	if p.i >= len(p.s) {
		return 0, p.eof()
	}
	switch c := p.s[p.i]; c {
	case '{':
		return KindObject, nil
	case '[':
		return KindArray, nil
	case '"':
		return KindString, nil
	case 't', 'f':
		return KindBool, nil
	case 'n':
		return KindNull, nil
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return KindNumber, nil
		}
		return 0, p.errAt(p.i, "invalid character "+describe(c)+" looking for beginning of value")
	}
}

// ReadNull reads the literal null that Peek reported.
func (r *Reader) ReadNull() error { return r.p.literal("null") }

// ReadBool reads the literal true or false that Peek reported.
func (r *Reader) ReadBool() (bool, error) {
	if r.p.s[r.p.i] == 't' {
		return true, r.p.literal("true")
	}
	return false, r.p.literal("false")
}

// ReadNumber reads the number that Peek reported, as its exact text.
func (r *Reader) ReadNumber() (json.Number, error) { return r.p.number() }

// ReadString reads the string that Peek reported, unescaped.
func (r *Reader) ReadString() (string, error) { return r.p.str() }

// BeginObject consumes the opening brace of the object that Peek reported.
func (r *Reader) BeginObject() error {
	return r.begin(true)
}

// BeginArray consumes the opening bracket of the array that Peek reported.
func (r *Reader) BeginArray() error {
	return r.begin(false)
}

func (r *Reader) begin(object bool) error {
	p := &r.p
	p.depth++
	if limit := r.maxDepth; limit > 0 && p.depth > limit || limit <= 0 && p.depth > MaxDepth {
		return p.errAt(p.i, tooDeep(limit))
	}
	p.i++
	r.opens = append(r.opens, open{keyBase: len(r.keys), object: object})
	return nil
}

// NextMember moves to the next member of the innermost open object. It
// returns the member's key, with the reader positioned at its value, which
// the caller must then read; or false once the object has closed.
func (r *Reader) NextMember() (string, bool, error) {
	p := &r.p
	top := &r.opens[len(r.opens)-1]
	p.skipSpace()
	if p.i >= len(p.s) {
		return "", false, p.eof()
	}
	c := p.s[p.i]
	if !top.started {
		top.started = true
		if c == '}' {
			p.i++
			return "", false, r.close()
		}
	} else {
		p.i++
		switch c {
		case '}':
			return "", false, r.close()
		case ',':
		default:
			return "", false, p.errAt(p.i-1, "invalid character "+describe(c)+" after object value")
		}
		p.skipSpace()
		if p.i >= len(p.s) {
			return "", false, p.eof()
		}
		c = p.s[p.i]
	}
	if c != '"' {
		return "", false, p.errAt(p.i, "invalid character "+describe(c)+" looking for beginning of object key")
	}
	key, err := p.str()
	if err != nil {
		return "", false, err
	}
	p.skipSpace()
	if p.i >= len(p.s) {
		return "", false, p.eof()
	}
	if p.s[p.i] != ':' {
		return "", false, p.errAt(p.i, "invalid character "+describe(p.s[p.i])+" after object key")
	}
	p.i++
	if !r.outerKeysOnly || len(r.opens) == 1 {
		r.keys = append(r.keys, key)
	}
	return key, true, nil
}

// NextElement moves to the next element of the innermost open array,
// which the caller must then read; or reports false once the array has
// closed.
func (r *Reader) NextElement() (bool, error) {
	p := &r.p
	top := &r.opens[len(r.opens)-1]
	p.skipSpace()
	if p.i >= len(p.s) {
		return false, p.eof()
	}
	c := p.s[p.i]
	if !top.started {
		top.started = true
		if c == ']' {
			p.i++
			return false, r.close()
		}
		return true, nil
	}
	p.i++
	switch c {
	case ']':
		return false, r.close()
	case ',':
		return true, nil
	}
	return false, p.errAt(p.i-1, "invalid character "+describe(c)+" after array element")
}

// close ends the innermost open object or array, checking an object's
// keys for duplicates.
func (r *Reader) close() error {
	top := r.opens[len(r.opens)-1]
	r.opens = r.opens[:len(r.opens)-1]
	r.p.depth--
	if !top.object {
		return nil
	}
	keys := r.keys[top.keyBase:]
	defer func() {
		clear(keys)
		r.keys = r.keys[:top.keyBase]
	}()
	if len(keys) <= 8 {
		for i := 1; i < len(keys); i++ {
			for j := range i {
				// Keys are short and often of one length: their ends
				// tell most apart before the whole is compared.
				a, b := keys[i], keys[j]
				if len(a) == len(b) && (len(a) == 0 || a[0] == b[0] && a[len(a)-1] == b[len(b)-1]) && a == b {
					return &DuplicateKeyError{Key: keys[i]}
				}
			}
		}
		return nil
	}
	// The keys are not needed in their order any more.
	slices.Sort(keys)
	for i := 1; i < len(keys); i++ {
		if keys[i] == keys[i-1] {
			return &DuplicateKeyError{Key: keys[i]}
		}
	}
	return nil
}

// tooDeep is the message of a nesting deeper than limit, or than MaxDepth
// when limit is not positive.
func tooDeep(limit int) string {
	if limit <= 0 || limit == MaxDepth {
		return MsgTooDeep
	}
	return "nesting deeper than " + strconv.Itoa(limit) + " levels"
}

// Skip reads one whole value, of any kind, checking it as Parse would.
func (r *Reader) Skip() error {
	k, err := r.Peek()
	if err != nil {
		return err
	}
	switch k {
	case KindNull:
		return r.ReadNull()
	case KindBool:
		_, err = r.ReadBool()
	case KindNumber:
		_, err = r.ReadNumber()
	case KindString:
		_, err = r.ReadString()
	case KindObject:
		if err = r.BeginObject(); err != nil {
			return err
		}
		for {
			_, more, err := r.NextMember()
			if err != nil || !more {
				return err
			}
			if err := r.Skip(); err != nil {
				return err
			}
		}
	case KindArray:
		if err = r.BeginArray(); err != nil {
			return err
		}
		for {
			more, err := r.NextElement()
			if err != nil || !more {
				return err
			}
			if err := r.Skip(); err != nil {
				return err
			}
		}
	}
	return err
}

// Finish checks that only whitespace follows the top-level value.
func (r *Reader) Finish() error { return r.p.end() }

// Raw returns the document's text from byte offset start to the current
// position: after a value has been read from start, that value's text.
func (r *Reader) Raw(start int) string { return r.p.s[start:r.p.i] }
