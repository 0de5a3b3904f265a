package core

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// Invocation.Normalized answers for one top-level field at a time, and an
// authorizer usually asks about the one or two fields a grant constrains.
// Encoding the whole input and parsing the result back costs more than
// everything else the authorize step does, so for plain struct inputs
// each asked field is encoded alone, exactly as encoding/json would encode
// it inside the whole value. Inputs whose encoding that cannot predict
// without running encoding/json on the whole value (embedded structs,
// ",string" and ",omitzero" options, duplicate names, fields whose
// marshalers need an addressable value) use the whole encoding.

// topField is how encoding/json writes one top-level field of a struct.
type topField struct {
	index     int
	omitEmpty bool
	// plainString: a string kind with no marshaling methods, written by
	// jsonvalue.AppendString without reflection on the value.
	plainString bool
}

// topFields is the per-field plan of one input type. whole is set when
// the type needs the whole encoding.
type topFields struct {
	whole   bool
	pointer bool // the input is a *struct
	byName  map[string]topField
}

var topFieldPlans sync.Map // reflect.Type → *topFields

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	jsonNumberType    = reflect.TypeFor[json.Number]()
)

func topFieldsOf(t reflect.Type) *topFields {
	if p, ok := topFieldPlans.Load(t); ok {
		return p.(*topFields)
	}
	p := planTopFields(t)
	actual, _ := topFieldPlans.LoadOrStore(t, p)
	return actual.(*topFields)
}

func planTopFields(t reflect.Type) *topFields {
	whole := &topFields{whole: true}
	p := &topFields{byName: map[string]topField{}}
	st := t
	if st.Kind() == reflect.Pointer {
		p.pointer = true
		st = st.Elem()
	}
	if st.Kind() != reflect.Struct || hasMarshaler(st) || hasMarshaler(reflect.PointerTo(st)) {
		return whole
	}
	seen := map[string]int{}
	for i := range st.NumField() {
		f := st.Field(i)
		if f.Anonymous {
			return whole
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		tf := topField{index: i}
		for opts != "" {
			var o string
			o, opts, _ = strings.Cut(opts, ",")
			switch o {
			case "omitempty":
				tf.omitEmpty = true
			case "string", "omitzero":
				return whole
			}
		}
		// A field whose type marshals only through a pointer is written
		// differently depending on whether the whole value is
		// addressable; leave that to encoding/json.
		if !hasMarshaler(f.Type) && hasMarshaler(reflect.PointerTo(f.Type)) {
			return whole
		}
		// json.Number is string-kinded but written as a number.
		tf.plainString = f.Type.Kind() == reflect.String && f.Type != jsonNumberType && !hasMarshaler(f.Type)
		seen[name]++
		p.byName[name] = tf
	}
	for _, n := range seen {
		if n > 1 {
			// Colliding names follow encoding/json's dominance rules
			// (a tagged field wins; two equal ones both vanish).
			return whole
		}
	}
	return p
}

func hasMarshaler(t reflect.Type) bool {
	return t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType)
}

// normalizedField encodes one top-level field of in. ok is false when
// the whole encoding would not have the field; known is false when the
// plan cannot answer and the whole encoding must be used.
func normalizedField(in any, field string) (data json.RawMessage, ok, known bool) {
	if in == nil {
		return nil, false, false
	}
	plan := topFieldsOf(reflect.TypeOf(in))
	if plan.whole {
		return nil, false, false
	}
	v := reflect.ValueOf(in)
	if plan.pointer {
		if v.IsNil() {
			// The whole encoding is null, which has no fields.
			return nil, false, true
		}
		v = v.Elem()
	}
	tf, found := plan.byName[field]
	if !found {
		return nil, false, true
	}
	fv := v.Field(tf.index)
	if tf.omitEmpty && isEmptyJSON(fv) {
		return nil, false, true
	}
	if tf.plainString {
		if s := fv.String(); utf8.ValidString(s) {
			return jsonvalue.AppendString(nil, s), true, true
		}
	}
	b, err := json.Marshal(fv.Interface())
	if err != nil {
		// The whole encoding would have failed too; let it report.
		return nil, false, false
	}
	return b, true, true
}

// isEmptyJSON is encoding/json's omitempty test.
func isEmptyJSON(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}
