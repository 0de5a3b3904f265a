package schema

import "reflect"

// Redaction replaces, in the JSON tree of a value of one Go type, the
// values of the struct fields that a predicate calls secret: at any depth,
// through pointers, slices, arrays and maps, under the names encoding/json
// gives the fields (promoted fields of embedded structs included). A type
// with its own MarshalJSON or MarshalText is opaque: nothing inside it is
// looked at.
type Redaction struct {
	root *redactNode
}

// redactNode is what to redact below one Go type: secret members of a
// struct, nodes of its other members, or the node of a collection's
// elements.
type redactNode struct {
	secret  map[string]bool
	members map[string]*redactNode
	elem    *redactNode
}

// NewRedaction returns the redaction of type t's secret fields, or nil
// when t has none.
func NewRedaction(t reflect.Type, secret func(reflect.StructField) bool) *Redaction {
	root := redactionOf(t, secret, map[reflect.Type]bool{})
	if root == nil {
		return nil
	}
	return &Redaction{root: root}
}

func redactionOf(t reflect.Type, secret func(reflect.StructField) bool, visiting map[reflect.Type]bool) *redactNode {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if visiting[t] || implements(t, jsonMarshalerType) || implements(t, textMarshalerType) {
		return nil
	}
	visiting[t] = true
	defer delete(visiting, t)
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		if elem := redactionOf(t.Elem(), secret, visiting); elem != nil {
			return &redactNode{elem: elem}
		}
	case reflect.Struct:
		fields, _ := jsonFields(t)
		var n redactNode
		for _, f := range fields {
			if secret(f.field) {
				if n.secret == nil {
					n.secret = make(map[string]bool)
				}
				n.secret[f.name] = true
				continue
			}
			if m := redactionOf(f.field.Type, secret, visiting); m != nil {
				if n.members == nil {
					n.members = make(map[string]*redactNode)
				}
				n.members[f.name] = m
			}
		}
		if n.secret != nil || n.members != nil {
			return &n
		}
	}
	return nil
}

// Apply replaces the secret values in tree, a tree as jsonvalue.Parse
// builds it from the encoding of a value of the redaction's type, with
// replacement. Null values are kept: they tell nothing.
func (r *Redaction) Apply(tree any, replacement any) {
	r.root.apply(tree, replacement)
}

func (n *redactNode) apply(v any, replacement any) {
	switch v := v.(type) {
	case map[string]any:
		if n.elem != nil {
			for _, item := range v {
				n.elem.apply(item, replacement)
			}
			return
		}
		for name, item := range v {
			switch {
			case n.secret[name]:
				if item != nil {
					v[name] = replacement
				}
			case n.members[name] != nil:
				n.members[name].apply(item, replacement)
			}
		}
	case []any:
		if n.elem != nil {
			for _, item := range v {
				n.elem.apply(item, replacement)
			}
		}
	}
}
