package schema

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// node is one derived schema. Keywords are fields rather than map entries
// so that the marshaled layout is fixed: the same Go type always yields the
// same bytes, which keeps describe responses and golden tests stable.
type node struct {
	types []string

	// raw is a schema a type supplied itself (see Schemer); when set, the
	// keyword fields are unused. rawNull admits null as well.
	raw     []byte
	rawNull bool

	description     string
	format          string
	contentEncoding string
	enum            []string // JSON texts

	// Numeric keywords hold JSON number texts; "" means absent.
	minimum, exclusiveMinimum, maximum, exclusiveMaximum, multipleOf string

	minLength, maxLength optCount
	pattern              string

	items              *node
	minItems, maxItems optCount
	uniqueItems        bool

	// object is set for structs and maps: only they carry "properties".
	object     bool
	properties []property
	required   []string
	// additional is the schema of map values; nil on an object means
	// additionalProperties false.
	additional                   *node
	minProperties, maxProperties optCount

	defaultValue string   // JSON text, "" when absent
	examples     []string // JSON texts
}

type property struct {
	name   string
	schema *node
}

// optCount is a non-negative count keyword that may be absent.
type optCount struct {
	n   int
	set bool
}

func count(n int) optCount { return optCount{n: n, set: true} }

// nullable lets the node accept null as well, the encoding of a nil pointer.
func (n *node) nullable() {
	if n.raw != nil {
		n.rawNull = true
		return
	}
	if slices.Contains(n.types, "null") {
		return
	}
	n.types = append(n.types, "null")
	if n.enum != nil && !slices.Contains(n.enum, "null") {
		n.enum = append(n.enum, "null")
	}
}

// base is the node's JSON type other than "null".
func (n *node) base() string {
	for _, t := range n.types {
		if t != "null" {
			return t
		}
	}
	return "null"
}

const draft2020 = "https://json-schema.org/draft/2020-12/schema"

// marshal writes the node as JSON. top adds the "$schema" keyword, which
// belongs only at the root of a document.
func (n *node) marshal(top bool) []byte {
	w := writer{buf: make([]byte, 0, 256)}
	w.node(n, top)
	return w.buf
}

type writer struct {
	buf   []byte
	first bool
}

func (w *writer) key(k string) {
	if !w.first {
		w.buf = append(w.buf, ',')
	}
	w.first = false
	w.buf = appendString(w.buf, k)
	w.buf = append(w.buf, ':')
}

func (w *writer) str(k, v string) {
	if v != "" {
		w.key(k)
		w.buf = appendString(w.buf, v)
	}
}

func (w *writer) raw(k, v string) {
	if v != "" {
		w.key(k)
		w.buf = append(w.buf, v...)
	}
}

func (w *writer) count(k string, c optCount) {
	if c.set {
		w.key(k)
		w.buf = strconv.AppendInt(w.buf, int64(c.n), 10)
	}
}

func (w *writer) rawList(k string, vs []string) {
	if vs == nil {
		return
	}
	w.key(k)
	w.buf = append(w.buf, '[')
	for i, v := range vs {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		w.buf = append(w.buf, v...)
	}
	w.buf = append(w.buf, ']')
}

func (w *writer) node(n *node, top bool) {
	// A schema a type supplied is a whole document already, also at the
	// top (a result type with its own schema).
	if n.raw != nil {
		if n.rawNull {
			w.buf = append(w.buf, `{"anyOf":[`...)
			w.buf = append(w.buf, n.raw...)
			w.buf = append(w.buf, `,{"type":"null"}]}`...)
		} else {
			w.buf = append(w.buf, n.raw...)
		}
		return
	}
	w.buf = append(w.buf, '{')
	w.first = true
	if top {
		w.str("$schema", draft2020)
	}
	switch len(n.types) {
	case 0:
	case 1:
		w.str("type", n.types[0])
	default:
		w.key("type")
		w.buf = append(w.buf, '[')
		for i, t := range n.types {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			w.buf = appendString(w.buf, t)
		}
		w.buf = append(w.buf, ']')
	}
	w.str("description", n.description)
	w.str("format", n.format)
	w.str("contentEncoding", n.contentEncoding)
	w.rawList("enum", n.enum)
	w.raw("minimum", n.minimum)
	w.raw("exclusiveMinimum", n.exclusiveMinimum)
	w.raw("maximum", n.maximum)
	w.raw("exclusiveMaximum", n.exclusiveMaximum)
	w.raw("multipleOf", n.multipleOf)
	w.count("minLength", n.minLength)
	w.count("maxLength", n.maxLength)
	w.str("pattern", n.pattern)
	if n.items != nil {
		w.key("items")
		w.node(n.items, false)
	}
	w.count("minItems", n.minItems)
	w.count("maxItems", n.maxItems)
	if n.uniqueItems {
		w.key("uniqueItems")
		w.buf = append(w.buf, "true"...)
	}
	if n.object {
		w.key("properties")
		w.buf = append(w.buf, '{')
		for i, p := range n.properties {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			w.buf = appendString(w.buf, p.name)
			w.buf = append(w.buf, ':')
			w.node(p.schema, false)
		}
		w.buf = append(w.buf, '}')
		if len(n.required) > 0 {
			w.key("required")
			w.buf = append(w.buf, '[')
			for i, r := range n.required {
				if i > 0 {
					w.buf = append(w.buf, ',')
				}
				w.buf = appendString(w.buf, r)
			}
			w.buf = append(w.buf, ']')
		}
		w.key("additionalProperties")
		if n.additional == nil {
			w.buf = append(w.buf, "false"...)
		} else {
			w.node(n.additional, false)
		}
	}
	w.count("minProperties", n.minProperties)
	w.count("maxProperties", n.maxProperties)
	w.raw("default", n.defaultValue)
	w.rawList("examples", n.examples)
	w.buf = append(w.buf, '}')
	w.first = false
}

// appendString appends s as a JSON string. Unlike encoding/json it leaves
// <, > and & alone, since schemas are not embedded in HTML, and it turns
// invalid UTF-8 (possible in struct tags) into U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
