package schema

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
)

// ImpliedBy reports whether every encoding/json encoding of a value of
// type t is valid against the schema ForOutput derives for t, so that
// validating an encoded result would check nothing its type does not
// already guarantee.
//
// It answers true only for the plainest case, a struct (not a pointer:
// nil would encode as null) whose exported fields are all strings, bools,
// integers or floats without marshaling methods, without omitempty,
// omitzero or ",string" options, without keyword tags (description and
// example excepted), and not embedded. Each such field is always present
// and always of its schema's type: encoding/json writes every field,
// replaces invalid UTF-8 and refuses non-finite floats, and an integer
// kind's derived bounds are those of the kind itself. Anything else is
// validated.
func ImpliedBy(t reflect.Type) bool {
	if t == nil || t.Kind() != reflect.Struct || ownsEncoding(t) {
		return false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return false
		}
		if !f.IsExported() {
			continue
		}
		tag, hasTag := f.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		if hasTag {
			if _, opts, _ := strings.Cut(tag, ","); opts != "" {
				return false
			}
		}
		if !ScalarKind(f.Type.Kind()) || ownsEncoding(f.Type) || f.Type == reflect.TypeFor[json.Number]() {
			return false
		}
		for _, k := range tagNames {
			if k == "description" || k == "example" {
				continue
			}
			if _, ok := f.Tag.Lookup(k); ok {
				return false
			}
		}
	}
	return true
}

// ownsEncoding reports a type (or its pointer) that writes or describes
// itself.
func ownsEncoding(t reflect.Type) bool {
	for _, u := range []reflect.Type{t, reflect.PointerTo(t)} {
		if u.Implements(reflect.TypeFor[json.Marshaler]()) ||
			u.Implements(reflect.TypeFor[encoding.TextMarshaler]()) ||
			u.Implements(schemerType) {
			return true
		}
	}
	return false
}

// ScalarKind reports the kinds encoding/json writes as a JSON string,
// boolean or number by themselves: strings, bools, integers and floats.
func ScalarKind(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}
