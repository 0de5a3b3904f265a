package schema

import (
	"encoding/json"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// The native validator runs the schemas For derives, and hand-written ones
// in the same vocabulary, without the general validation library: a value
// that passes costs a walk of the tree and no allocation. Compile builds it
// whenever the whole document stays inside that vocabulary and otherwise
// keeps the library's validator. Both report the same violations with the
// same messages; the differential fuzz test holds them to it.

// jsonType is a set of JSON types, as the "type" keyword names them.
type jsonType uint8

const (
	typeNull jsonType = 1 << iota
	typeBoolean
	typeNumber
	typeInteger
	typeString
	typeArray
	typeObject
	typeInvalid jsonType = 0
)

// typeNames lists the types in the order violation messages name them.
var typeNames = []struct {
	t    jsonType
	name string
}{
	{typeNull, "null"}, {typeBoolean, "boolean"}, {typeNumber, "number"}, {typeInteger, "integer"},
	{typeString, "string"}, {typeArray, "array"}, {typeObject, "object"},
}

func typeNamed(name string) jsonType {
	for _, tn := range typeNames {
		if tn.name == name {
			return tn.t
		}
	}
	return typeInvalid
}

func (t jsonType) String() string {
	for _, tn := range typeNames {
		if tn.t == t {
			return tn.name
		}
	}
	return "invalid"
}

func (t jsonType) names() []string {
	var out []string
	for _, tn := range typeNames {
		if t&tn.t != 0 {
			out = append(out, tn.name)
		}
	}
	return out
}

// nativeNode is one compiled schema of the native vocabulary. Absent count
// keywords are -1.
type nativeNode struct {
	// never is the schema false. open is the schema true, which accepts
	// even Go values that are not JSON; a node with nothing set, {} or
	// annotations only, accepts every JSON value.
	never bool
	open  bool

	types     jsonType
	typeNames []string

	hasEnum   bool
	enum      []any
	enumTypes jsonType

	format      func(string) error
	formatName  string
	minLength   int
	maxLength   int
	pattern     *regexp.Regexp
	numeric     bool // one of the five numeric keywords is present
	minimum     *bound
	maximum     *bound
	exclMinimum *bound
	exclMaximum *bound
	multipleOf  *bound

	items       *nativeNode
	minItems    int
	maxItems    int
	uniqueItems bool

	properties []nativeProperty
	// requiredOnly lists required names that have no property schema.
	requiredOnly []string
	// additional is the schema of other members; noAdditional is
	// additionalProperties false, reported member by member.
	additional    *nativeNode
	noAdditional  bool
	minProperties int
	maxProperties int

	// orNull is S in {"anyOf": [S, {"type": "null"}]}, the form For gives
	// a nullable type that supplies its own schema.
	orNull *nativeNode
}

type nativeProperty struct {
	name     string
	schema   *nativeNode
	required bool
}

// bound is a numeric keyword's value, exact for comparisons and as a
// rational for the library's message types.
type bound struct {
	dec jsonvalue.Decimal
	rat *big.Rat
}

// annotations are keywords that describe without asserting.
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true,
	"contentEncoding": true, "contentMediaType": true, "deprecated": true,
	"readOnly": true, "writeOnly": true, "$comment": true,
}

// compileNative compiles a schema document, already accepted by the
// library's compiler and so valid against the meta-schema. It returns
// false if any part of it is outside the native vocabulary.
func compileNative(doc any) (*nativeNode, bool) {
	return compileNode(doc, true)
}

func compileNode(doc any, root bool) (*nativeNode, bool) {
	switch doc := doc.(type) {
	case bool:
		return &nativeNode{never: !doc, open: doc, minLength: -1, maxLength: -1, minItems: -1, maxItems: -1, minProperties: -1, maxProperties: -1}, true
	case map[string]any:
		n := &nativeNode{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1, minProperties: -1, maxProperties: -1}
		for key, value := range doc {
			if !n.keyword(key, value, root, doc) {
				return nil, false
			}
		}
		if n.orNull != nil {
			for key := range doc {
				if key != "anyOf" && !annotations[key] && !(root && key == "$schema") {
					return nil, false
				}
			}
		}
		if !n.linkRequired(doc["required"]) {
			return nil, false
		}
		return n, true
	}
	return nil, false
}

// keyword compiles one keyword into n.
func (n *nativeNode) keyword(key string, value any, root bool, doc map[string]any) bool {
	var ok bool
	switch key {
	case "$schema":
		// Compile has checked the root's; anywhere else it would start a
		// new resource.
		return root
	case "type":
		n.types, ok = compileTypes(value)
		n.typeNames = n.types.names()
		return ok
	case "enum":
		n.enum, ok = value.([]any)
		n.hasEnum = true
		for _, v := range n.enum {
			t := typeOfValue(v)
			if t == typeInvalid {
				return false
			}
			n.enumTypes |= t
		}
		return ok
	case "format":
		n.formatName, _ = value.(string)
		n.format = nativeFormats[n.formatName]
		return n.format != nil
	case "minLength":
		n.minLength, ok = compileCount(value)
	case "maxLength":
		n.maxLength, ok = compileCount(value)
	case "pattern":
		s, isString := value.(string)
		re, err := regexp.Compile(s)
		n.pattern, ok = re, isString && err == nil
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
		var b *bound
		b, ok = compileBound(value)
		n.numeric = true
		switch key {
		case "minimum":
			n.minimum = b
		case "maximum":
			n.maximum = b
		case "exclusiveMinimum":
			n.exclMinimum = b
		case "exclusiveMaximum":
			n.exclMaximum = b
		case "multipleOf":
			n.multipleOf = b
			ok = ok && b.dec.Sign() > 0
		}
	case "items":
		n.items, ok = compileNode(value, false)
	case "minItems":
		n.minItems, ok = compileCount(value)
	case "maxItems":
		n.maxItems, ok = compileCount(value)
	case "uniqueItems":
		n.uniqueItems, ok = value.(bool)
	case "properties":
		props, isObject := value.(map[string]any)
		if !isObject {
			return false
		}
		// Sorted names keep the compiled form, and so the order in which
		// a value is visited, independent of map iteration.
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			sub, subOK := compileNode(props[name], false)
			if !subOK {
				return false
			}
			n.properties = append(n.properties, nativeProperty{name: name, schema: sub})
		}
		return true
	case "required":
		_, ok = value.([]any) // linked to the properties once all are read
	case "additionalProperties":
		if b, isBool := value.(bool); isBool {
			n.noAdditional = !b
			return true
		}
		n.additional, ok = compileNode(value, false)
	case "minProperties":
		n.minProperties, ok = compileCount(value)
	case "maxProperties":
		n.maxProperties, ok = compileCount(value)
	case "anyOf":
		n.orNull, ok = compileOrNull(value)
	default:
		return annotations[key]
	}
	return ok
}

func (n *nativeNode) linkRequired(value any) bool {
	if value == nil {
		return true
	}
	for _, item := range value.([]any) {
		name, ok := item.(string)
		if !ok {
			return false
		}
		found := false
		for i := range n.properties {
			if n.properties[i].name == name {
				n.properties[i].required = true
				found = true
			}
		}
		if !found {
			n.requiredOnly = append(n.requiredOnly, name)
		}
	}
	return true
}

func compileTypes(value any) (jsonType, bool) {
	switch value := value.(type) {
	case string:
		t := typeNamed(value)
		return t, t != typeInvalid
	case []any:
		var set jsonType
		for _, item := range value {
			name, _ := item.(string)
			t := typeNamed(name)
			if t == typeInvalid {
				return 0, false
			}
			set |= t
		}
		return set, set != 0
	}
	return 0, false
}

// compileCount reads a count keyword written as plain digits; other
// spellings the meta-schema allows, such as 2.0, are left to the library.
func compileCount(value any) (int, bool) {
	num, ok := value.(json.Number)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(string(num), 10, 31)
	return int(n), err == nil
}

func compileBound(value any) (*bound, bool) {
	num, ok := value.(json.Number)
	if !ok {
		return nil, false
	}
	d, ok := jsonvalue.ParseDecimal(string(num))
	if !ok {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(string(num))
	return &bound{dec: d, rat: r}, ok
}

// compileOrNull recognises {"anyOf": [S, {"type": "null"}]}, in either
// order, and returns S.
func compileOrNull(value any) (*nativeNode, bool) {
	list, ok := value.([]any)
	if !ok || len(list) != 2 {
		return nil, false
	}
	for k, item := range list {
		if isNullSchema(item) {
			return compileNode(list[1-k], false)
		}
	}
	return nil, false
}

func isNullSchema(v any) bool {
	obj, ok := v.(map[string]any)
	return ok && len(obj) == 1 && obj["type"] == "null"
}

// typeOfValue is the JSON type of a value of a generic tree; typeInvalid
// for Go values that are not JSON, NaN and infinities included, and for a
// json.Number whose text is not a JSON number.
func typeOfValue(v any) jsonType {
	switch v := v.(type) {
	case nil:
		return typeNull
	case bool:
		return typeBoolean
	case string:
		return typeString
	case map[string]any:
		return typeObject
	case []any:
		return typeArray
	case json.Number:
		if _, ok := jsonvalue.ParseDecimal(string(v)); !ok {
			return typeInvalid
		}
		return typeNumber
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return typeInvalid
		}
		return typeNumber
	case float32:
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return typeInvalid
		}
		return typeNumber
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return typeNumber
	}
	return typeInvalid
}

// numberText is the decimal text of a number of a generic tree: a
// json.Number as it is, and a Go number the way fmt prints it, which is
// how the library reads one.
func numberText(v any) string {
	switch v := v.(type) {
	case json.Number:
		return string(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(v), 'g', -1, 32)
	case int:
		return strconv.Itoa(v)
	case int8:
		return strconv.FormatInt(int64(v), 10)
	case int16:
		return strconv.FormatInt(int64(v), 10)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case int64:
		return strconv.FormatInt(v, 10)
	case uint:
		return strconv.FormatUint(uint64(v), 10)
	case uint8:
		return strconv.FormatUint(uint64(v), 10)
	case uint16:
		return strconv.FormatUint(uint64(v), 10)
	case uint32:
		return strconv.FormatUint(uint64(v), 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	}
	return ""
}

// decimalOf reads a number that typeOfValue accepted.
func decimalOf(v any) jsonvalue.Decimal {
	d, _ := jsonvalue.ParseDecimal(numberText(v))
	return d
}

// equalValues is JSON equality: numbers by value, objects by members
// whatever their order.
func equalValues(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !equalValues(av, bv) {
				return false
			}
		}
		return true
	case []any:
		ba, ok := b.([]any)
		if !ok || len(a) != len(ba) {
			return false
		}
		for i := range a {
			if !equalValues(a[i], ba[i]) {
				return false
			}
		}
		return true
	}
	if typeOfValue(a) != typeNumber || typeOfValue(b) != typeNumber {
		return false
	}
	return jsonvalue.CompareDecimals(decimalOf(a), decimalOf(b)) == 0
}
