package schema

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// DeriveError reports why For or ForOutput cannot describe a Go type.
type DeriveError struct {
	// Type is the type given to For or ForOutput.
	Type reflect.Type
	// Field is the Go path of the offending field, "" for Type itself:
	// field names joined by ".", "[]" for a slice or array element and
	// "[key]" for a map value, as in "Items[].Meta".
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error names the type, the field path and the reason.
func (e *DeriveError) Error() string {
	name := "<nil>"
	if e.Type != nil {
		name = e.Type.String()
	}
	if e.Field == "" {
		return "schema: " + name + ": " + e.Reason
	}
	return "schema: " + name + ": field " + e.Field + ": " + e.Reason
}

var (
	timeType            = reflect.TypeFor[time.Time]()
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
	numberType          = reflect.TypeFor[json.Number]()
	jsonMarshalerType   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	schemerType         = reflect.TypeFor[Schemer]()
)

// implements reports whether t or *t implements iface: encoding/json uses
// pointer-receiver methods of addressable values, which all decoded values
// and all struct fields reached through a pointer are.
func implements(t, iface reflect.Type) bool {
	return t.Implements(iface) || (t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(iface))
}

// For derives the JSON Schema (draft 2020-12) of a capability's input type
// t and returns it marshaled, with a deterministic layout. t must be a
// struct or a pointer to one: capability arguments are a JSON object. It
// fails for types that cannot be described and for struct tags that do not
// fit their field; the *DeriveError names the field path and the reason.
// ForOutput describes result types, which need not be objects.
//
// Derivation follows encoding/json. Structs become closed objects
// (additionalProperties false) with properties in Go field order; a field is
// required unless its json tag says omitempty or omitzero or it is promoted
// through an embedded pointer. Pointers, slices and maps also accept null,
// the encoding of nil. time.Time is a date-time string, other
// encoding.TextMarshaler types are strings, json.Number is a number, and
// []byte is a base64 string. A type implementing Schemer supplies its own
// schema. Interfaces, channels, functions, complex numbers, unsafe
// pointers, maps without string keys, json.RawMessage, other types with
// their own MarshalJSON or UnmarshalJSON, and recursive types cannot be
// described.
//
// Field tags refine a property: description, enum (comma-separated),
// minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf,
// minLength, maxLength, pattern, format, minItems, maxItems, uniqueItems,
// minProperties, maxProperties, default and example (emitted as
// "examples"). Values are parsed as the field's type; enum, default and
// example values must also satisfy the field's other keywords.
func For(t reflect.Type) ([]byte, error) {
	if t == nil {
		return nil, &DeriveError{Reason: "no type given"}
	}
	st := t
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() != reflect.Struct {
		return nil, &DeriveError{Type: t, Reason: "must be a struct or a pointer to a struct, since arguments are a JSON object; got " + kindName(st)}
	}
	d := deriver{top: t, visiting: map[reflect.Type]bool{}}
	n, err := d.schemaOf(st, "")
	if err != nil {
		return nil, err
	}
	if !n.object {
		return nil, &DeriveError{Type: t, Reason: "must be described by a JSON object, not a " + n.base()}
	}
	return finish(t, n)
}

// finish marshals the top-level node of t's schema and compiles it.
// Derivation builds only schemas that compile; checking costs little at
// definition time and guards against a derivation bug reaching requests.
func finish(t reflect.Type, n *node) ([]byte, error) {
	out := n.marshal(true)
	if _, err := Compile(out); err != nil {
		return nil, &DeriveError{Type: t, Reason: "derived schema does not compile: " + err.Error()}
	}
	return out, nil
}

func kindName(t reflect.Type) string {
	if t.Kind() == reflect.Interface {
		return "interface " + t.String()
	}
	return t.String()
}

type deriver struct {
	top      reflect.Type
	visiting map[reflect.Type]bool
}

func (d *deriver) fail(path, reason string) error {
	return &DeriveError{Type: d.top, Field: path, Reason: reason}
}

// schemaOf describes type t found at Go field path path.
func (d *deriver) schemaOf(t reflect.Type, path string) (*node, error) {
	if t.Kind() == reflect.Pointer {
		n, err := d.guard(t, path, func() (*node, error) { return d.schemaOf(t.Elem(), path) })
		if err != nil {
			return nil, err
		}
		n.nullable()
		return n, nil
	}
	switch {
	case t.Kind() == reflect.Interface:
		// An interface is described by the dynamic value it holds; there
		// is none at definition time, even when its method set promises a
		// JSONSchema, MarshalJSON or MarshalText method.
		return nil, d.fail(path, "interface type "+t.String()+" cannot be described: any JSON value would fit")
	case t == timeType:
		return &node{types: []string{"string"}, format: "date-time"}, nil
	case t == rawMessageType:
		return nil, d.fail(path, "json.RawMessage cannot be described: its content is arbitrary JSON")
	case t == numberType:
		return &node{types: []string{"number"}}, nil
	case implements(t, schemerType):
		return d.ownSchema(t, path)
	case implements(t, jsonMarshalerType) || implements(t, jsonUnmarshalerType):
		return nil, d.fail(path, "type "+t.String()+" has its own MarshalJSON or UnmarshalJSON, so its JSON form cannot be derived: give it a method JSONSchema() json.RawMessage that describes it")
	case implements(t, textMarshalerType):
		return &node{types: []string{"string"}}, nil
	}

	switch t.Kind() {
	case reflect.Bool:
		return &node{types: []string{"boolean"}}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := &node{types: []string{"integer"}}
		if bits := t.Bits(); bits < 64 {
			n.minimum = strconv.FormatInt(-1<<(bits-1), 10)
			n.maximum = strconv.FormatInt(1<<(bits-1)-1, 10)
		}
		return n, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n := &node{types: []string{"integer"}, minimum: "0"}
		if bits := t.Bits(); bits < 64 {
			n.maximum = strconv.FormatUint(1<<bits-1, 10)
		}
		return n, nil
	case reflect.Float32, reflect.Float64:
		return &node{types: []string{"number"}}, nil
	case reflect.String:
		return &node{types: []string{"string"}}, nil
	case reflect.Slice:
		if isByteSlice(t) {
			return &node{types: []string{"string", "null"}, contentEncoding: "base64"}, nil
		}
		return d.guard(t, path, func() (*node, error) {
			items, err := d.schemaOf(t.Elem(), path+"[]")
			if err != nil {
				return nil, err
			}
			return &node{types: []string{"array", "null"}, items: items}, nil
		})
	case reflect.Array:
		return d.guard(t, path, func() (*node, error) {
			items, err := d.schemaOf(t.Elem(), path+"[]")
			if err != nil {
				return nil, err
			}
			return &node{types: []string{"array"}, items: items, minItems: count(t.Len()), maxItems: count(t.Len())}, nil
		})
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, d.fail(path, "map key type "+t.Key().String()+" is not string-kinded")
		}
		return d.guard(t, path, func() (*node, error) {
			values, err := d.schemaOf(t.Elem(), path+"[key]")
			if err != nil {
				return nil, err
			}
			return &node{types: []string{"object", "null"}, object: true, additional: values}, nil
		})
	case reflect.Struct:
		return d.guard(t, path, func() (*node, error) { return d.structSchema(t, path) })
	default:
		return nil, d.fail(path, t.Kind().String()+" type "+t.String()+" has no JSON form")
	}
}

// Schemer is implemented by types that describe their own JSON form,
// typically because they have their own UnmarshalJSON (for example to
// normalise a value) and so cannot be derived. JSONSchema returns a
// draft 2020-12 schema object for a value of the type; it must compile on
// its own (no references) and is checked when the capability is defined.
type Schemer interface {
	JSONSchema() json.RawMessage
}

// ownSchema takes the schema a Schemer type supplies.
func (d *deriver) ownSchema(t reflect.Type, path string) (*node, error) {
	var v reflect.Value
	if t.Implements(schemerType) {
		v = reflect.New(t).Elem()
	} else {
		v = reflect.New(t)
	}
	raw := v.Interface().(Schemer).JSONSchema()
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil || len(buf.Bytes()) == 0 || buf.Bytes()[0] != '{' {
		return nil, d.fail(path, "type "+t.String()+": JSONSchema does not return a JSON object")
	}
	if _, err := Compile(buf.Bytes()); err != nil {
		return nil, d.fail(path, "type "+t.String()+": JSONSchema does not compile: "+err.Error())
	}
	return &node{raw: buf.Bytes()}, nil
}

// guard detects recursive types: a type met again while it is still being
// described would need an infinite schema.
func (d *deriver) guard(t reflect.Type, path string, describe func() (*node, error)) (*node, error) {
	if d.visiting[t] {
		where := "the top-level type"
		if path != "" {
			where = "field " + path
		}
		return nil, d.fail(path, "recursive type "+t.String()+": it contains itself at "+where)
	}
	d.visiting[t] = true
	defer delete(d.visiting, t)
	return describe()
}

// isByteSlice reports whether encoding/json encodes slice type t as a
// base64 string.
func isByteSlice(t reflect.Type) bool {
	if t.Elem().Kind() != reflect.Uint8 {
		return false
	}
	p := reflect.PointerTo(t.Elem())
	return !p.Implements(jsonMarshalerType) && !p.Implements(textMarshalerType)
}

func (d *deriver) structSchema(t reflect.Type, path string) (*node, error) {
	fields, problems := jsonFields(t)
	if len(problems) > 0 {
		return nil, d.fail(join(path, problems[0].goPath), problems[0].reason)
	}
	n := &node{types: []string{"object"}, object: true, properties: make([]property, 0, len(fields))}
	for _, f := range fields {
		fpath := join(path, f.goPath)
		if f.stringOpt {
			return nil, d.fail(fpath, `the ",string" json option is not supported: it changes the field's JSON type`)
		}
		fn, err := d.schemaOf(f.field.Type, fpath)
		if err != nil {
			return nil, err
		}
		if err := d.applyTags(fn, f.field, fpath); err != nil {
			return nil, err
		}
		n.properties = append(n.properties, property{name: f.name, schema: fn})
		if !f.optional {
			n.required = append(n.required, f.name)
		}
	}
	return n, nil
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func quote(s string) string { return strconv.Quote(s) }

// fieldKind is what a field's tags may constrain, from the JSON type of its
// schema and, for numbers, the Go type that bounds them.
type fieldKind struct {
	json  string       // boolean, integer, number, string, array, object
	goTyp reflect.Type // the field's type with pointers removed
	bytes bool         // []byte: a string whose text is base64
	fixed bool         // an array [N]T, whose length is already fixed
	isMap bool
}

func kindOf(n *node, t reflect.Type) fieldKind {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return fieldKind{
		json:  n.base(),
		goTyp: t,
		bytes: n.contentEncoding == "base64",
		fixed: t.Kind() == reflect.Array,
		isMap: n.object && n.additional != nil,
	}
}

func (k fieldKind) numeric() bool { return k.json == "integer" || k.json == "number" }
func (k fieldKind) scalar() bool {
	return k.json == "boolean" || k.numeric() || (k.json == "string" && !k.bytes)
}

// tagNames lists the struct tags For reads, in the order it applies them.
var tagNames = []string{
	"description", "enum",
	"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf",
	"minLength", "maxLength", "pattern", "format",
	"minItems", "maxItems", "uniqueItems",
	"minProperties", "maxProperties",
	"default", "example",
}

// formats are the "format" values the validator asserts; other names would
// be accepted silently and check nothing.
var formats = map[string]bool{
	"date-time": true, "date": true, "time": true, "duration": true, "period": true,
	"email": true, "hostname": true, "ipv4": true, "ipv6": true,
	"uri": true, "uri-reference": true, "iri": true, "iri-reference": true, "uri-template": true,
	"uuid": true, "json-pointer": true, "relative-json-pointer": true, "regex": true, "semver": true,
}

func (d *deriver) applyTags(n *node, sf reflect.StructField, path string) error {
	if n.raw != nil {
		for _, tag := range tagNames {
			if _, ok := sf.Tag.Lookup(tag); ok {
				return d.fail(path, "tag "+tag+": the field's type supplies its own schema (JSONSchema method); put the keyword there")
			}
		}
		return nil
	}
	k := kindOf(n, sf.Type)
	for _, tag := range tagNames {
		v, ok := sf.Tag.Lookup(tag)
		if !ok {
			continue
		}
		bad := func(reason string) error { return d.fail(path, "tag "+tag+": "+reason) }
		switch tag {
		case "description":
			n.description = v
		case "enum":
			if !k.scalar() {
				return bad("only string, integer, number and boolean fields take an enum")
			}
			seen := map[string]bool{}
			n.enum = nil
			for item := range strings.SplitSeq(v, ",") {
				text, err := k.value(item)
				if err != nil {
					return bad(err.Error())
				}
				if seen[text] {
					return bad("value " + quote(item) + " is listed twice")
				}
				seen[text] = true
				n.enum = append(n.enum, text)
			}
			if slices.Contains(n.types, "null") {
				n.enum = append(n.enum, "null")
			}
		case "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf":
			if !k.numeric() {
				return bad("only integer and number fields take numeric bounds")
			}
			text, err := k.number(v)
			if err != nil {
				return bad(err.Error())
			}
			switch tag {
			case "minimum":
				n.minimum = text
			case "exclusiveMinimum":
				n.exclusiveMinimum = text
			case "maximum":
				n.maximum = text
			case "exclusiveMaximum":
				n.exclusiveMaximum = text
			case "multipleOf":
				if r, _ := new(big.Rat).SetString(text); r.Sign() <= 0 {
					return bad("must be greater than 0")
				}
				n.multipleOf = text
			}
		case "minLength", "maxLength", "pattern", "format":
			if k.json != "string" || k.bytes {
				return bad("only string fields take " + tag)
			}
			switch tag {
			case "minLength", "maxLength":
				c, err := parseCount(v)
				if err != nil {
					return bad(err.Error())
				}
				if tag == "minLength" {
					n.minLength = c
				} else {
					n.maxLength = c
				}
			case "pattern":
				if _, err := regexp.Compile(v); err != nil {
					return bad("does not compile: " + err.Error())
				}
				n.pattern = v
			case "format":
				if !formats[v] {
					return bad("unknown format " + quote(v))
				}
				if n.format != "" && n.format != v {
					return bad("the type already has format " + quote(n.format))
				}
				n.format = v
			}
		case "minItems", "maxItems":
			if k.json != "array" {
				return bad("only slice fields take " + tag)
			}
			if k.fixed {
				return bad("an array's length is fixed by its type")
			}
			c, err := parseCount(v)
			if err != nil {
				return bad(err.Error())
			}
			if tag == "minItems" {
				n.minItems = c
			} else {
				n.maxItems = c
			}
		case "uniqueItems":
			if k.json != "array" {
				return bad("only slice and array fields take uniqueItems")
			}
			switch v {
			case "true":
				n.uniqueItems = true
			case "false":
				n.uniqueItems = false
			default:
				return bad(quote(v) + " is not true or false")
			}
		case "minProperties", "maxProperties":
			if !k.isMap {
				return bad("only map fields take " + tag)
			}
			c, err := parseCount(v)
			if err != nil {
				return bad(err.Error())
			}
			if tag == "minProperties" {
				n.minProperties = c
			} else {
				n.maxProperties = c
			}
		case "default", "example":
			if !k.scalar() && !k.bytes {
				return bad("only string, integer, number, boolean and []byte fields take " + tag)
			}
			text, err := k.value(v)
			if err != nil {
				return bad(err.Error())
			}
			if tag == "default" {
				n.defaultValue = text
			} else {
				n.examples = []string{text}
			}
		}
	}
	if err := checkBounds(n); err != nil {
		return d.fail(path, err.Error())
	}
	if err := checkValues(n); err != nil {
		return d.fail(path, err.Error())
	}
	return nil
}

type tagError string

func (e tagError) Error() string { return string(e) }

func parseCount(v string) (optCount, error) {
	n, err := strconv.ParseUint(v, 10, 31)
	if err != nil {
		return optCount{}, tagError(quote(v) + " is not a non-negative integer")
	}
	return count(int(n)), nil
}

// number parses a numeric bound as the field's Go type and returns its
// JSON text.
func (k fieldKind) number(v string) (string, error) {
	switch k.goTyp.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(v, 10, k.goTyp.Bits())
		if err != nil {
			return "", tagError(quote(v) + " is not a valid " + k.goTyp.String())
		}
		return strconv.FormatInt(i, 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u, err := strconv.ParseUint(v, 10, k.goTyp.Bits())
		if err != nil {
			return "", tagError(quote(v) + " is not a valid " + k.goTyp.String())
		}
		return strconv.FormatUint(u, 10), nil
	}
	bits := 64
	if k.goTyp.Kind() == reflect.Float32 {
		bits = 32
	}
	parsed, err := jsonvalue.Parse([]byte(v))
	num, isNum := parsed.(json.Number)
	if err != nil || !isNum || strings.TrimSpace(v) != v {
		return "", tagError(quote(v) + " is not a JSON number")
	}
	f, err := strconv.ParseFloat(string(num), bits)
	if err != nil || math.IsInf(f, 0) {
		return "", tagError(quote(v) + " is out of range for " + k.goTyp.String())
	}
	return string(num), nil
}

// value parses an enum, default or example value as the field's type and
// returns its JSON text.
func (k fieldKind) value(v string) (string, error) {
	switch k.json {
	case "boolean":
		if v != "true" && v != "false" {
			return "", tagError(quote(v) + " is not true or false")
		}
		return v, nil
	case "integer", "number":
		return k.number(v)
	}
	if k.bytes {
		if _, err := base64.StdEncoding.DecodeString(v); err != nil {
			return "", tagError(quote(v) + " is not standard base64")
		}
		return string(appendString(nil, v)), nil
	}
	if implements(k.goTyp, textUnmarshalerType) {
		target := reflect.New(k.goTyp).Interface().(encoding.TextUnmarshaler)
		if err := target.UnmarshalText([]byte(v)); err != nil {
			return "", tagError(quote(v) + " is not a valid " + k.goTyp.String() + ": " + err.Error())
		}
	}
	return string(appendString(nil, v)), nil
}

// checkBounds rejects keyword pairs that no value could satisfy.
func checkBounds(n *node) error {
	type pair struct {
		lowKey, low, highKey, high string
		strict                     bool
	}
	pairs := []pair{
		{"minimum", n.minimum, "maximum", n.maximum, false},
		{"exclusiveMinimum", n.exclusiveMinimum, "maximum", n.maximum, true},
		{"minimum", n.minimum, "exclusiveMaximum", n.exclusiveMaximum, true},
		{"exclusiveMinimum", n.exclusiveMinimum, "exclusiveMaximum", n.exclusiveMaximum, true},
	}
	for _, p := range pairs {
		if p.low == "" || p.high == "" {
			continue
		}
		lo, _ := new(big.Rat).SetString(p.low)
		hi, _ := new(big.Rat).SetString(p.high)
		if c := lo.Cmp(hi); c > 0 || (p.strict && c == 0) {
			return tagError(p.lowKey + " " + p.low + " leaves no room below " + p.highKey + " " + p.high)
		}
	}
	counts := []struct {
		lowKey  string
		low     optCount
		highKey string
		high    optCount
	}{
		{"minLength", n.minLength, "maxLength", n.maxLength},
		{"minItems", n.minItems, "maxItems", n.maxItems},
		{"minProperties", n.minProperties, "maxProperties", n.maxProperties},
	}
	for _, c := range counts {
		if c.low.set && c.high.set && c.low.n > c.high.n {
			return tagError(c.lowKey + " " + strconv.Itoa(c.low.n) + " is greater than " + c.highKey + " " + strconv.Itoa(c.high.n))
		}
	}
	return nil
}

// checkValues makes sure enum, default and example values satisfy the
// field's other keywords, so a schema never advertises a value it rejects.
func checkValues(n *node) error {
	if n.enum == nil && n.defaultValue == "" && n.examples == nil {
		return nil
	}
	bare := *n
	bare.defaultValue, bare.examples = "", nil
	if n.enum != nil {
		open := bare
		open.enum = nil
		v, err := Compile(open.marshal(false))
		if err != nil {
			return tagError("schema does not compile: " + err.Error())
		}
		for _, text := range n.enum {
			if err := fits(v, text); err != nil {
				return tagError("enum value " + text + " " + err.Error())
			}
		}
	}
	v, err := Compile(bare.marshal(false))
	if err != nil {
		return tagError("schema does not compile: " + err.Error())
	}
	if n.defaultValue != "" {
		if err := fits(v, n.defaultValue); err != nil {
			return tagError("default value " + n.defaultValue + " " + err.Error())
		}
	}
	for _, text := range n.examples {
		if err := fits(v, text); err != nil {
			return tagError("example value " + text + " " + err.Error())
		}
	}
	return nil
}

func fits(v *Validator, text string) error {
	value, err := jsonvalue.Parse([]byte(text))
	if err != nil {
		return err
	}
	if vs := v.Validate(value); len(vs) > 0 {
		return tagError("violates the field's schema: " + vs[0].Message)
	}
	return nil
}
