package schema

import (
	"encoding/json"
	"hash/maphash"
	"math/big"
	"strconv"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// Messages of the keywords the library reports without a message of its
// own that fits a caller; Validate uses them for both validators.
const (
	msgMissing    = "missing required field"
	msgUnknown    = "unknown field"
	msgNotAllowed = "value not allowed"
)

// run collects the violations of one Validate call and tracks the path to
// the value being checked. The path is a stack of steps kept inside run,
// not a chain of frames on the call stack: escape analysis moves frames
// that point to their callers' frames to the heap, and a value that passes
// must cost no allocation. It becomes a JSON Pointer only when a violation
// needs one.
type run struct {
	out   []Violation
	depth int
	near  [16]step
	far   []step // steps below the first len(near)
}

// step is an object member name or, when isKey is false, an array index.
type step struct {
	key   string
	index int
	isKey bool
}

func (r *run) push(s step) {
	if r.depth < len(r.near) {
		r.near[r.depth] = s
	} else {
		r.far = append(r.far[:r.depth-len(r.near)], s)
	}
	r.depth++
}

func (r *run) pop() { r.depth-- }

func (r *run) step(i int) step {
	if i < len(r.near) {
		return r.near[i]
	}
	return r.far[i-len(r.near)]
}

func (r *run) pointer() string {
	p := ""
	for i := range r.depth {
		s := r.step(i)
		token := s.key
		if !s.isKey {
			token = strconv.Itoa(s.index)
		}
		p = jsonvalue.Pointer(p, token)
	}
	return p
}

func (r *run) add(message string) {
	r.out = append(r.out, Violation{Path: r.pointer(), Message: message})
}

// addAt reports a violation of the member name of the current object.
func (r *run) addAt(name, message string) {
	r.push(step{key: name, isKey: true})
	r.add(message)
	r.pop()
}

// report words a violation with the library's message for the same
// failure, so both validators read alike.
func (r *run) report(k jsonschema.ErrorKind) {
	r.add(k.LocalizedString(english))
}

// check validates v against n, in the library's order: a value that is not
// JSON, the wrong type, a value outside the enum or a string not in its
// format gets that one violation and no other.
func (n *nativeNode) check(r *run, v any) {
	if n.open {
		return
	}
	if n.never {
		r.add(msgNotAllowed)
		return
	}
	var num jsonvalue.Decimal
	t := typeInvalid
	if text, ok := v.(json.Number); ok {
		// The common case, read once for the type and the keywords.
		if num, ok = jsonvalue.ParseDecimal(string(text)); ok {
			t = typeNumber
		}
	} else if t = typeOfValue(v); t == typeNumber {
		num = decimalOf(v)
	}
	if t == typeInvalid {
		r.report(&kind.InvalidJsonValue{Value: v})
		return
	}
	if n.types != 0 && n.types&t == 0 && !(t == typeNumber && n.types&typeInteger != 0 && num.IsInteger()) {
		r.report(&kind.Type{Got: t.String(), Want: n.typeNames})
		return
	}
	if n.hasEnum && !n.inEnum(v, t, num) {
		r.report(&kind.Enum{Got: v, Want: n.enum})
		return
	}
	switch t {
	case typeObject:
		n.checkObject(r, v.(map[string]any))
	case typeArray:
		n.checkArray(r, v.([]any))
	case typeString:
		s := v.(string)
		if n.format != nil {
			if err := n.format(s); err != nil {
				r.add(formatMessage(s, n.formatName, err))
				return
			}
		}
		n.checkString(r, s)
	case typeNumber:
		if n.numeric {
			n.checkNumber(r, num, func() *big.Rat { return ratOf(v) })
		}
	}
	if n.orNull != nil && t != typeNull {
		before := len(r.out)
		n.orNull.check(r, v)
		if len(r.out) > before {
			// Neither branch matched: the library lists both failures.
			r.report(&kind.Type{Got: t.String(), Want: []string{"null"}})
		}
	}
}

func (n *nativeNode) inEnum(v any, t jsonType, num jsonvalue.Decimal) bool {
	switch t {
	case typeString:
		return n.inEnumString(v.(string))
	case typeNumber:
		return n.inEnumNumber(num)
	}
	if n.enumTypes&t == 0 {
		return false
	}
	for _, item := range n.enum {
		if equalValues(v, item) {
			return true
		}
	}
	return false
}

func (n *nativeNode) inEnumString(s string) bool {
	if n.enumTypes&typeString == 0 {
		return false
	}
	for _, item := range n.enum {
		if e, ok := item.(string); ok && e == s {
			return true
		}
	}
	return false
}

func (n *nativeNode) inEnumNumber(num jsonvalue.Decimal) bool {
	if n.enumTypes&typeNumber == 0 {
		return false
	}
	for _, item := range n.enum {
		if typeOfValue(item) == typeNumber && jsonvalue.CompareDecimals(num, decimalOf(item)) == 0 {
			return true
		}
	}
	return false
}

func (n *nativeNode) checkObject(r *run, obj map[string]any) {
	if n.minProperties >= 0 && len(obj) < n.minProperties {
		r.report(&kind.MinProperties{Got: len(obj), Want: n.minProperties})
	}
	if n.maxProperties >= 0 && len(obj) > n.maxProperties {
		r.report(&kind.MaxProperties{Got: len(obj), Want: n.maxProperties})
	}
	// Looking the schema's properties up in the value, rather than ranging
	// over the value, also finds the missing required ones; the value's
	// own members need a pass only when some are not properties.
	found := 0
	for i := range n.properties {
		p := &n.properties[i]
		member, ok := obj[p.name]
		if !ok {
			if p.required {
				r.addAt(p.name, msgMissing)
			}
			continue
		}
		found++
		r.push(step{key: p.name, isKey: true})
		p.schema.check(r, member)
		r.pop()
	}
	for _, name := range n.requiredOnly {
		if _, ok := obj[name]; !ok {
			r.addAt(name, msgMissing)
		}
	}
	if found == len(obj) || (!n.noAdditional && n.additional == nil) {
		return
	}
	for name, member := range obj {
		if n.hasProperty(name) {
			continue
		}
		if n.noAdditional {
			r.addAt(name, msgUnknown)
			continue
		}
		r.push(step{key: name, isKey: true})
		n.additional.check(r, member)
		r.pop()
	}
}

func (n *nativeNode) hasProperty(name string) bool {
	_, ok := n.propertyIndex(name)
	return ok
}

func (n *nativeNode) checkArray(r *run, arr []any) {
	if n.minItems >= 0 && len(arr) < n.minItems {
		r.report(&kind.MinItems{Got: len(arr), Want: n.minItems})
	}
	if n.maxItems >= 0 && len(arr) > n.maxItems {
		r.report(&kind.MaxItems{Got: len(arr), Want: n.maxItems})
	}
	if n.uniqueItems {
		if i, j, ok := duplicate(arr); ok {
			r.report(&kind.UniqueItems{Duplicates: [2]int{i, j}})
		}
	}
	if n.items == nil {
		return
	}
	for i, item := range arr {
		r.push(step{index: i})
		n.items.check(r, item)
		r.pop()
	}
}

func (n *nativeNode) checkString(r *run, s string) {
	if n.minLength >= 0 || n.maxLength >= 0 {
		length := utf8.RuneCountInString(s)
		if n.minLength >= 0 && length < n.minLength {
			r.report(&kind.MinLength{Got: length, Want: n.minLength})
		}
		if n.maxLength >= 0 && length > n.maxLength {
			r.report(&kind.MaxLength{Got: length, Want: n.maxLength})
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		r.report(&kind.Pattern{Got: clip(s), Want: n.pattern.String()})
	}
}

// checkNumber applies the numeric keywords to num. got gives the number
// as the library's messages take it; it is called only for a violation.
func (n *nativeNode) checkNumber(r *run, num jsonvalue.Decimal, got func() *big.Rat) {
	if b := n.minimum; b != nil && jsonvalue.CompareDecimals(num, b.dec) < 0 {
		r.report(&kind.Minimum{Got: got(), Want: b.rat})
	}
	if b := n.maximum; b != nil && jsonvalue.CompareDecimals(num, b.dec) > 0 {
		r.report(&kind.Maximum{Got: got(), Want: b.rat})
	}
	if b := n.exclMinimum; b != nil && jsonvalue.CompareDecimals(num, b.dec) <= 0 {
		r.report(&kind.ExclusiveMinimum{Got: got(), Want: b.rat})
	}
	if b := n.exclMaximum; b != nil && jsonvalue.CompareDecimals(num, b.dec) >= 0 {
		r.report(&kind.ExclusiveMaximum{Got: got(), Want: b.rat})
	}
	if b := n.multipleOf; b != nil && !num.IsMultipleOf(b.dec) {
		r.report(&kind.MultipleOf{Got: got(), Want: b.rat})
	}
}

// duplicate finds the first item equal to an earlier one and returns the
// earlier index first, as the library does: the smallest such later
// index, then the smallest earlier one.
func duplicate(arr []any) (int, int, bool) {
	if len(arr) <= 20 {
		for i := 1; i < len(arr); i++ {
			for j := range i {
				if equalValues(arr[j], arr[i]) {
					return j, i, true
				}
			}
		}
		return 0, 0, false
	}
	seen := make(map[uint64][]int, len(arr))
	for i, item := range arr {
		h := hashValue(item)
		for _, j := range seen[h] {
			if equalValues(arr[j], item) {
				return j, i, true
			}
		}
		seen[h] = append(seen[h], i)
	}
	return 0, 0, false
}

var hashSeed = maphash.MakeSeed()

// hashValue hashes a JSON value so that equal values, in the sense of
// equalValues, hash alike: numbers by their digits and decimal point,
// objects by members in any order.
func hashValue(v any) uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	switch v := v.(type) {
	case map[string]any:
		// Adding the members' hashes ignores their order.
		var sum uint64
		for k, member := range v {
			var mh maphash.Hash
			mh.SetSeed(hashSeed)
			mh.WriteString(k)
			writeUint64(&mh, hashValue(member))
			sum += mh.Sum64()
		}
		h.WriteByte('o')
		writeUint64(&h, sum)
	case []any:
		h.WriteByte('a')
		for _, item := range v {
			writeUint64(&h, hashValue(item))
		}
	case string:
		h.WriteByte('s')
		h.WriteString(v)
	case bool:
		if v {
			h.WriteByte('t')
		} else {
			h.WriteByte('f')
		}
	case nil:
		h.WriteByte('n')
	default:
		if typeOfValue(v) != typeNumber {
			h.WriteByte('?')
			break
		}
		decimalOf(v).WriteHash(&h)
	}
	return h.Sum64()
}

func writeUint64(h *maphash.Hash, x uint64) {
	var b [8]byte
	for i := range b {
		b[i] = byte(x >> (8 * i))
	}
	h.Write(b[:])
}
