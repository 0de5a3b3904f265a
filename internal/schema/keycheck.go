package schema

import (
	"reflect"
	"strconv"
	"strings"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// KeyChecker reports object keys that do not exactly match a JSON field
// name of the Go struct at that position: unknown keys and keys that differ
// from a field name only by letter case.
//
// It exists because encoding/json matches names case-insensitively: a key
// "Amount" could otherwise slip past validation of "amount" and still set
// the field. A map's keys are data, so only its values are checked; types
// implementing json.Unmarshaler or encoding.TextUnmarshaler are not
// descended into, their keys being their own business. A KeyChecker is
// safe for concurrent use.
type KeyChecker struct {
	root *keyNode
}

// keyNode checks one position of the value. A nil *keyNode checks nothing.
type keyNode struct {
	// fields maps each JSON field name of a struct to the checker of its
	// value; nil for slices, arrays and maps.
	fields map[string]*keyNode
	names  []string // the field names, for case-insensitive suggestions
	elem   *keyNode // the element checker of a slice or array
	// length is an array's length: encoding/json ignores the items beyond
	// it, so their keys are not checked either. -1 for slices.
	length int
	values *keyNode // the value checker of a map
}

// NewKeyChecker builds the checker for values decoded into t. Field names
// follow encoding/json, including promotion from embedded structs; names
// that encoding/json ignores because they are ambiguous count as unknown.
func NewKeyChecker(t reflect.Type) *KeyChecker {
	if t == nil {
		return &KeyChecker{}
	}
	return &KeyChecker{root: buildKeyNode(t, map[reflect.Type]*keyNode{})}
}

// buildKeyNode shares nodes by type through built, which also ties the
// knot for recursive types.
func buildKeyNode(t reflect.Type, built map[reflect.Type]*keyNode) *keyNode {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n, ok := built[t]; ok {
		return n
	}
	if implements(t, jsonUnmarshalerType) || implements(t, textUnmarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		fields, _ := jsonFields(t)
		n := &keyNode{fields: make(map[string]*keyNode, len(fields)), names: make([]string, 0, len(fields))}
		built[t] = n
		for _, f := range fields {
			n.fields[f.name] = buildKeyNode(f.field.Type, built)
			n.names = append(n.names, f.name)
		}
		return n
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && isByteSlice(t) {
			return nil
		}
		n := &keyNode{length: -1}
		if t.Kind() == reflect.Array {
			n.length = t.Len()
		}
		built[t] = n
		n.elem = buildKeyNode(t.Elem(), built)
		if n.elem == nil {
			// Nothing below to check; later lookups of t share the nil.
			built[t] = nil
			return nil
		}
		return n
	case reflect.Map:
		n := &keyNode{}
		built[t] = n
		n.values = buildKeyNode(t.Elem(), built)
		if n.values == nil {
			built[t] = nil
			return nil
		}
		return n
	default:
		return nil
	}
}

// Check returns the violations in value, sorted by path and then message,
// or nil. Values of the wrong JSON type are skipped: reporting those is
// schema validation's job.
func (k *KeyChecker) Check(value any) []Violation {
	if k == nil || k.root == nil {
		return nil
	}
	out := k.root.check(value)
	sortViolations(out)
	return out
}

// check returns violations with paths relative to value. Paths are built
// only when something is wrong, so a clean value costs no allocation.
func (n *keyNode) check(value any) []Violation {
	if n.fields != nil {
		obj, ok := value.(map[string]any)
		if !ok {
			return nil
		}
		var out []Violation
		for key, v := range obj {
			child, known := n.fields[key]
			if !known {
				out = append(out, Violation{Path: jsonvalue.Pointer("", key), Message: n.unknown(key)})
				continue
			}
			if child == nil {
				continue
			}
			if vs := child.check(v); len(vs) > 0 {
				out = prefixed(out, jsonvalue.Pointer("", key), vs)
			}
		}
		return out
	}
	if n.values != nil {
		obj, ok := value.(map[string]any)
		if !ok {
			return nil
		}
		var out []Violation
		for key, v := range obj {
			if vs := n.values.check(v); len(vs) > 0 {
				out = prefixed(out, jsonvalue.Pointer("", key), vs)
			}
		}
		return out
	}
	arr, ok := value.([]any)
	if !ok || n.elem == nil {
		return nil
	}
	if n.length >= 0 && len(arr) > n.length {
		arr = arr[:n.length]
	}
	var out []Violation
	for i, v := range arr {
		if vs := n.elem.check(v); len(vs) > 0 {
			out = prefixed(out, "/"+strconv.Itoa(i), vs)
		}
	}
	return out
}

func prefixed(out []Violation, prefix string, vs []Violation) []Violation {
	for _, v := range vs {
		v.Path = prefix + v.Path
		out = append(out, v)
	}
	return out
}

// unknown explains an unmatched key.
func (n *keyNode) unknown(key string) string { return unknownField(n.names, key) }

// unknownField explains a key that matches none of a struct's JSON field
// names, naming the field encoding/json would have filled with it anyway.
func unknownField(names []string, key string) string {
	for _, name := range names {
		if strings.EqualFold(name, key) {
			return "unknown field; field names are case-sensitive, did you mean " + strconv.Quote(name) + "?"
		}
	}
	return "unknown field"
}
