package schema

import (
	"reflect"
	"slices"
)

// ForOutput derives the JSON Schema (draft 2020-12) of a capability's
// result type t, as For does for inputs, with the same rules and tags and
// the same compile check. A result need not be an object: t may be any
// type For can describe as a struct field, such as a struct or a pointer
// to one, a slice or array, a map with string keys, a basic type, or a
// type that supplies its own schema (Schemer), which then stands as the
// whole document.
//
// The top level differs from a field in two ways, both about nil. A
// pointer stands for the value it points to, as in For: a nil pointer
// result is null, which the schema does not admit, so it fails
// validation rather than reach a caller as an answer. A slice or map type
// for which NilEncoding gives a text is described without null, since a
// nil result is sent as [] or {}; its encoder must do so, or a nil result
// fails its own schema. Only []byte (a base64 string, nil is null) and
// types with their own schema admit null at the top.
func ForOutput(t reflect.Type) ([]byte, error) {
	if t == nil {
		return nil, &DeriveError{Reason: "no type given"}
	}
	st := t
	for st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	d := deriver{top: t, visiting: map[reflect.Type]bool{}}
	n, err := d.schemaOf(st, "")
	if err != nil {
		return nil, err
	}
	if NilEncoding(st) != nil {
		n.types = slices.DeleteFunc(n.types, func(s string) bool { return s == "null" })
	}
	return finish(t, n)
}

// NilEncoding returns the JSON text a nil result of type t is sent as
// where encoding/json would write null: "[]" for a slice type that encodes
// as a JSON array, "{}" for a map type that encodes as a JSON object. It
// returns nil for every other type, including []byte (a base64 string),
// pointers, and types with their own MarshalJSON, MarshalText or
// JSONSchema method, whose nil values encode as encoding/json decides.
//
// An empty collection is then always an empty collection on the wire: a
// handler that returns a nil slice for "nothing found" answers [], not
// null.
func NilEncoding(t reflect.Type) []byte {
	if t == nil || implements(t, schemerType) || implements(t, jsonMarshalerType) || implements(t, textMarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice:
		if isByteSlice(t) {
			return nil
		}
		return []byte("[]")
	case reflect.Map:
		return []byte("{}")
	}
	return nil
}
