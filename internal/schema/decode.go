package schema

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"time"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// Decoder fills Go values of one type from the generic trees that
// jsonvalue.Parse builds, so that a document parsed once for validation
// need not be decoded from its text a second time.
//
// The value it builds is the one encoding/json's Unmarshal builds from the
// same text, with one difference on purpose: object keys must match a
// struct field's JSON name exactly, as KeyChecker demands, so a key that
// differs only by letter case is an error rather than a second spelling of
// the field. encoding/json's rules are kept otherwise: embedded structs
// promote their fields (embedded pointers are allocated when one of their
// fields is set); null sets pointers, slices and maps to nil and leaves
// other values unchanged; numbers must fit the integer or float type they
// are decoded into, and integers must be written without a fraction or an
// exponent; []byte takes standard base64; time.Time takes RFC 3339; types
// implementing encoding.TextUnmarshaler take strings; and types
// implementing json.Unmarshaler receive the compact text of their value
// (jsonvalue.Append), which is equivalent JSON but not necessarily the
// caller's bytes: object members come in key order and escapes are
// normalised. (encoding/json hands time.Time the raw bytes of its string,
// escapes and all, so it refuses a date-time spelled with a needless
// escape such as \u0030; the decoder reads the string's value.)
//
// A Decoder is safe for concurrent use.
type Decoder struct {
	typ  reflect.Type
	root *decNode
}

// decOp is how a position of the Go value is filled.
type decOp uint8

const (
	opBool decOp = iota
	opInt
	opUint
	opFloat
	opString
	opNumber // json.Number
	opTime
	opText // encoding.TextUnmarshaler
	opJSON // json.Unmarshaler
	opPointer
	opSlice
	opArray
	opMap
	opStruct
)

// decNode fills one position. Nodes are shared by type, which also ties
// the knot for recursive types.
type decNode struct {
	op   decOp
	typ  reflect.Type
	elem *decNode // pointer target, slice, array and map elements

	// bytes: a slice whose elements are uint8-kinded, which also takes a
	// base64 string.
	bytes bool
	// key is how a map's keys are converted from JSON strings.
	key mapKey

	fields []decField // struct fields, in Go field order
	names  []string   // their JSON names, in the same order
	byName map[string]bool
}

type mapKey uint8

const (
	keyString mapKey = iota // a string-kinded type, set directly
	keyText                 // *K implements encoding.TextUnmarshaler
	keyJSON                 // *K implements json.Unmarshaler as well
)

type decField struct {
	name  string
	index []int
	node  *decNode
}

type nodeKey struct {
	t reflect.Type
	// via is the pointer type whose methods decide whether the position
	// unmarshals itself, or nil; see compile.
	via reflect.Type
}

// NewDecoder builds the decoder of values of type t. It fails, with a
// *DeriveError naming the field, for types whose decoding by encoding/json
// it does not reproduce: interfaces, channels, functions, complex numbers,
// json.RawMessage (whose value is the caller's exact bytes), maps whose
// keys are neither string-kinded nor text unmarshalers, fields with the
// ",string" option, and embedded pointers to unexported struct types.
// Callers decode such types with encoding/json instead.
func NewDecoder(t reflect.Type) (*Decoder, error) {
	if t == nil {
		return nil, &DeriveError{Reason: "no type given"}
	}
	c := decCompiler{top: t, built: map[nodeKey]*decNode{}}
	// Unmarshal is given a pointer to the value, so the value's own
	// methods are those of that pointer.
	root, err := c.compile(t, reflect.PointerTo(t), "")
	if err != nil {
		return nil, err
	}
	return &Decoder{typ: t, root: root}, nil
}

type decCompiler struct {
	top   reflect.Type
	built map[nodeKey]*decNode
}

func (c *decCompiler) fail(path, reason string) error {
	return &DeriveError{Type: c.top, Field: path, Reason: reason}
}

// addressed is the pointer type whose methods encoding/json consults for
// an addressable value of type t that is not reached through a pointer:
// it takes the address of named types only.
func addressed(t reflect.Type) reflect.Type {
	if t.Kind() != reflect.Pointer && t.Name() != "" {
		return reflect.PointerTo(t)
	}
	return nil
}

// compile builds the node of a position of type t. via mirrors how
// encoding/json finds a value's UnmarshalJSON or UnmarshalText: on the
// pointer it reached the value through, or on the value's address for
// named types.
func (c *decCompiler) compile(t, via reflect.Type, path string) (*decNode, error) {
	key := nodeKey{t, via}
	if n, ok := c.built[key]; ok {
		return n, nil
	}
	n := &decNode{typ: t}
	c.built[key] = n
	if via != nil {
		switch {
		case via.Implements(jsonUnmarshalerType):
			switch t {
			case timeType:
				n.op = opTime
			case rawMessageType:
				return nil, c.fail(path, "json.RawMessage keeps the caller's exact bytes, which a tree does not hold")
			default:
				n.op = opJSON
			}
			return n, nil
		case via.Implements(textUnmarshalerType):
			n.op = opText
			return n, nil
		}
	}
	var err error
	switch t.Kind() {
	case reflect.Bool:
		n.op = opBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n.op = opInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n.op = opUint
	case reflect.Float32, reflect.Float64:
		n.op = opFloat
	case reflect.String:
		n.op = opString
		if t == numberType {
			n.op = opNumber
		}
	case reflect.Pointer:
		n.op = opPointer
		n.elem, err = c.compile(t.Elem(), t, path)
	case reflect.Slice:
		n.op = opSlice
		n.bytes = t.Elem().Kind() == reflect.Uint8
		n.elem, err = c.compile(t.Elem(), addressed(t.Elem()), path+"[]")
	case reflect.Array:
		n.op = opArray
		n.elem, err = c.compile(t.Elem(), addressed(t.Elem()), path+"[]")
	case reflect.Map:
		n.op = opMap
		kt := reflect.PointerTo(t.Key())
		switch {
		case kt.Implements(textUnmarshalerType) && kt.Implements(jsonUnmarshalerType):
			n.key = keyJSON
		case kt.Implements(textUnmarshalerType):
			n.key = keyText
		case t.Key().Kind() == reflect.String:
			n.key = keyString
		default:
			return nil, c.fail(path, "map key type "+t.Key().String()+" is neither string-kinded nor an encoding.TextUnmarshaler")
		}
		n.elem, err = c.compile(t.Elem(), addressed(t.Elem()), path+"[key]")
	case reflect.Struct:
		n.op = opStruct
		err = c.structFields(n, t, path)
	default:
		return nil, c.fail(path, t.Kind().String()+" type "+t.String()+" is not decoded")
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}

func (c *decCompiler) structFields(n *decNode, t reflect.Type, path string) error {
	fields, problems := jsonFields(t)
	for _, p := range problems {
		// Ambiguous names are simply not fields, as for encoding/json; an
		// embedded pointer to an unexported type is an error it reports
		// only when a value reaches it.
		if p.unexportedPointer {
			return c.fail(join(path, p.goPath), p.reason)
		}
	}
	n.byName = make(map[string]bool, len(fields))
	for _, f := range fields {
		fpath := join(path, f.goPath)
		if f.stringOpt {
			return c.fail(fpath, `the ",string" json option is not decoded`)
		}
		fn, err := c.compile(f.field.Type, addressed(f.field.Type), fpath)
		if err != nil {
			return err
		}
		n.fields = append(n.fields, decField{name: f.name, index: f.index, node: fn})
		n.names = append(n.names, f.name)
		n.byName[f.name] = true
	}
	return nil
}

// Decode fills the value target points to, which must be a non-nil
// pointer to the Decoder's type, from value, a tree as jsonvalue.Parse
// builds it.
//
// Violations are reported with JSON Pointer paths, sorted by path. Keys
// that match no field are reported as KeyChecker reports them; when there
// are any, only they are returned. Otherwise each value that cannot be
// decoded is reported, as "cannot be decoded as" its Go type: a value of
// the wrong JSON type, an integer with a fraction or out of range, bad
// base64, or a value its own UnmarshalJSON or UnmarshalText refuses. The
// error is the first such method's or strconv's error, for logs; it may be
// nil even when there are violations. After a violation the target holds
// a partial value.
func (d *Decoder) Decode(value any, target any) ([]Violation, error) {
	rv := reflect.ValueOf(target)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Type().Elem() != d.typ {
		return nil, errors.New("schema: Decode target must be a non-nil *" + d.typ.String())
	}
	var s decodeState
	s.decode(d.root, rv.Elem(), value)
	if len(s.keys) > 0 {
		sortViolations(s.keys)
		return s.keys, nil
	}
	if len(s.r.out) > 0 {
		sortViolations(s.r.out)
		return s.r.out, s.cause
	}
	return nil, nil
}

// decodeState is one Decode call: the path being decoded and the decode
// violations in r, key violations apart.
type decodeState struct {
	r     run
	keys  []Violation
	cause error
}

func (s *decodeState) bad(n *decNode, cause error) {
	s.r.add("cannot be decoded as " + n.typ.String())
	if s.cause == nil && cause != nil {
		s.cause = cause
	}
}

// decode fills v, which is addressable and settable, from x.
func (s *decodeState) decode(n *decNode, v reflect.Value, x any) {
	switch n.op {
	case opPointer:
		if x == nil {
			v.SetZero()
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(n.typ.Elem()))
		}
		s.decode(n.elem, v.Elem(), x)
		return
	case opJSON:
		u := v.Addr().Interface().(json.Unmarshaler)
		if err := u.UnmarshalJSON(jsonvalue.Append(nil, x)); err != nil {
			s.bad(n, err)
		}
		return
	case opTime:
		switch x := x.(type) {
		case nil:
		case string:
			// Time's UnmarshalJSON is UnmarshalText of the string's
			// content.
			if err := v.Addr().Interface().(*time.Time).UnmarshalText([]byte(x)); err != nil {
				s.bad(n, err)
			}
		default:
			s.bad(n, nil)
		}
		return
	case opText:
		switch x := x.(type) {
		case nil:
			if k := n.typ.Kind(); k == reflect.Map || k == reflect.Slice {
				v.SetZero()
			}
		case string:
			if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(x)); err != nil {
				s.bad(n, err)
			}
		default:
			s.bad(n, nil)
		}
		return
	}
	if x == nil {
		switch n.op {
		case opSlice, opMap:
			v.SetZero()
		}
		return
	}
	switch x := x.(type) {
	case bool:
		if n.op != opBool {
			s.bad(n, nil)
			return
		}
		v.SetBool(x)
	case json.Number:
		s.number(n, v, string(x))
	case string:
		switch {
		case n.op == opString:
			v.SetString(x)
		case n.op == opNumber:
			if !isJSONNumber(x) {
				s.bad(n, nil)
				return
			}
			v.SetString(x)
		case n.op == opSlice && n.bytes:
			b := make([]byte, base64.StdEncoding.DecodedLen(len(x)))
			k, err := base64.StdEncoding.Decode(b, []byte(x))
			if err != nil {
				s.bad(n, err)
				return
			}
			v.SetBytes(b[:k])
		default:
			s.bad(n, nil)
		}
	case []any:
		s.array(n, v, x)
	case map[string]any:
		switch n.op {
		case opStruct:
			s.object(n, v, x)
		case opMap:
			s.mapOf(n, v, x)
		default:
			s.bad(n, nil)
		}
	default:
		s.bad(n, nil)
	}
}

func (s *decodeState) number(n *decNode, v reflect.Value, text string) {
	switch n.op {
	case opInt:
		i, err := strconv.ParseInt(text, 10, 64)
		if err != nil || v.OverflowInt(i) {
			s.bad(n, err)
			return
		}
		v.SetInt(i)
	case opUint:
		u, err := strconv.ParseUint(text, 10, 64)
		if err != nil || v.OverflowUint(u) {
			s.bad(n, err)
			return
		}
		v.SetUint(u)
	case opFloat:
		f, err := strconv.ParseFloat(text, n.typ.Bits())
		if err != nil || v.OverflowFloat(f) {
			s.bad(n, err)
			return
		}
		v.SetFloat(f)
	case opNumber:
		v.SetString(text)
	default:
		s.bad(n, nil)
	}
}

func (s *decodeState) array(n *decNode, v reflect.Value, items []any) {
	switch n.op {
	case opSlice:
		sl := reflect.MakeSlice(n.typ, len(items), len(items))
		for i, item := range items {
			s.r.push(step{index: i})
			s.decode(n.elem, sl.Index(i), item)
			s.r.pop()
		}
		v.Set(sl)
	case opArray:
		// Items beyond the array's length are ignored, and elements beyond
		// the items' count are zeroed.
		for i := range v.Len() {
			if i >= len(items) {
				v.Index(i).SetZero()
				continue
			}
			s.r.push(step{index: i})
			s.decode(n.elem, v.Index(i), items[i])
			s.r.pop()
		}
	default:
		s.bad(n, nil)
	}
}

func (s *decodeState) object(n *decNode, v reflect.Value, obj map[string]any) {
	found := 0
	for i := range n.fields {
		f := &n.fields[i]
		x, ok := obj[f.name]
		if !ok {
			continue
		}
		found++
		fv := v.Field(f.index[0])
		for _, k := range f.index[1:] {
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					fv.Set(reflect.New(fv.Type().Elem()))
				}
				fv = fv.Elem()
			}
			fv = fv.Field(k)
		}
		s.r.push(step{key: f.name, isKey: true})
		s.decode(f.node, fv, x)
		s.r.pop()
	}
	if found == len(obj) {
		return
	}
	for key := range obj {
		if !n.byName[key] {
			s.r.push(step{key: key, isKey: true})
			s.keys = append(s.keys, Violation{Path: s.r.pointer(), Message: unknownField(n.names, key)})
			s.r.pop()
		}
	}
}

func (s *decodeState) mapOf(n *decNode, v reflect.Value, obj map[string]any) {
	if v.IsNil() {
		v.Set(reflect.MakeMapWithSize(n.typ, len(obj)))
	}
	// One key and one element value serve every member: SetMapIndex
	// copies them.
	elem := reflect.New(n.typ.Elem()).Elem()
	var key reflect.Value
	if n.key == keyString {
		key = reflect.New(n.typ.Key()).Elem()
	}
	for k, x := range obj {
		s.r.push(step{key: k, isKey: true})
		switch n.key {
		case keyString:
			key.SetString(k)
		case keyText:
			key = reflect.New(n.typ.Key())
			if err := key.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(k)); err != nil {
				s.badKey(n, err)
				continue
			}
			key = key.Elem()
		case keyJSON:
			key = reflect.New(n.typ.Key())
			if err := key.Interface().(json.Unmarshaler).UnmarshalJSON(jsonvalue.AppendString(nil, k)); err != nil {
				s.badKey(n, err)
				continue
			}
			key = key.Elem()
		}
		elem.SetZero()
		s.decode(n.elem, elem, x)
		v.SetMapIndex(key, elem)
		s.r.pop()
	}
}

// badKey reports a member whose key the map's key type refuses, and leaves
// the member.
func (s *decodeState) badKey(n *decNode, cause error) {
	s.r.add("cannot be decoded as a key of type " + n.typ.Key().String())
	if s.cause == nil {
		s.cause = cause
	}
	s.r.pop()
}

// isJSONNumber reports whether s is a JSON number (RFC 8259), as a string
// decoded into json.Number must be.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	return i == len(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
