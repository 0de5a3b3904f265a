package core

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/agentcap/agentcap/internal/jsonvalue"
	"github.com/agentcap/agentcap/internal/schema"
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
	// plain: a string, bool, integer or float kind with no marshaling
	// methods (and not json.Number), written without encoding/json.
	plain bool
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
		if name == "" || !validJSONName(name) {
			// encoding/json ignores a name it does not accept.
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
		// An interface type that promises a marshaler is encoded through
		// it even when it holds a nil pointer; encoding the held value
		// alone would write null.
		if f.Type.Kind() == reflect.Interface && hasMarshaler(f.Type) {
			return whole
		}
		// json.Number is string-kinded but written as a number.
		tf.plain = schema.ScalarKind(f.Type.Kind()) && f.Type != jsonNumberType && !hasMarshaler(f.Type)
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

// validJSONName is encoding/json's rule for a usable tag name: letters,
// digits and the punctuation it allows.
func validJSONName(s string) bool {
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
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
	if tf.plain {
		if b, done := appendPlain(nil, fv); done {
			return b, true, true
		}
	}
	// Inside a *struct input every field is addressable, so encoding/json
	// calls pointer-receiver marshalers of values nested in it; encoding
	// through the field's address keeps that.
	fi := fv.Interface()
	if fv.CanAddr() {
		fi = fv.Addr().Interface()
	}
	b, err := json.Marshal(fi)
	if err != nil {
		// The whole encoding would have failed too; let it report.
		return nil, false, false
	}
	return b, true, true
}

// appendPlain writes a plain-kinded value the way encoding/json does
// (strings apart from escapes). done is false for what it leaves to
// encoding/json: invalid UTF-8, which encoding/json replaces, and
// non-finite floats, which it refuses.
func appendPlain(b []byte, v reflect.Value) (out []byte, done bool) {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if !utf8.ValidString(s) {
			return b, false
		}
		return jsonvalue.AppendString(b, s), true
	case reflect.Bool:
		return strconv.AppendBool(b, v.Bool()), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, v.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.AppendUint(b, v.Uint(), 10), true
	case reflect.Float32:
		return appendFloat(b, v.Float(), 32)
	case reflect.Float64:
		return appendFloat(b, v.Float(), 64)
	}
	return b, false
}

// appendFloat is encoding/json's float format: the shortest text that
// reads back as the same value, in exponent form only for very small or
// very large magnitudes, with a one-digit negative exponent unpadded.
func appendFloat(b []byte, f float64, bits int) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// 1e-07 becomes 1e-7.
		if n := len(b) - start; n >= 4 && b[len(b)-4] == 'e' && b[len(b)-3] == '-' && b[len(b)-2] == '0' {
			b[len(b)-2] = b[len(b)-1]
			b = b[:len(b)-1]
		}
	}
	return b, true
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
