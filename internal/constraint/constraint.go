// Package constraint is the grammar of Agent Auth grant constraints
// (protocol §2.13) and their strict evaluation, on the standard library
// and internal/jsonvalue alone (its escape decoding and exact decimals),
// so that the verifier (package agentauth, which publishes it as
// CheckConstraints and ValidateConstraints) and the command-line client,
// which checks the constraints a user proposes before sending them, read
// constraints by the one set of rules.
//
// A constraint value is either an exact JSON value or an operator object.
// Every JSON object is read as an operator object, so each of its keys must
// be an operator: eq, in, max, min or not_in. The protocol gives no way to
// tell an exact object value apart from an object of operators this server
// does not know, and reading an unknown operator as data would quietly
// turn a restriction into an equality test; the protocol requires unknown
// operators to be refused instead. To require an exact object value, wrap
// it: {"eq": {...}}. Any other JSON value (string, number, boolean, null,
// array) is an exact value.
//
// The error messages are those agentauth has always answered with.
package constraint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// MaxDepth bounds the nesting of constraint values and of the
// arguments compared with them. Grants may come from remote servers, so
// parsing them must not recurse without limit. An argument nested deeper
// than this never satisfies a constraint on its field.
const MaxDepth = 64

// UnknownOperatorError reports operator names the server does not know in
// the constraint on one field. Such a grant can never be satisfied.
type UnknownOperatorError struct {
	// Field is the constrained top-level input field.
	Field string
	// Operators are the unknown names, sorted.
	Operators []string
}

// Error implements error.
func (e *UnknownOperatorError) Error() string {
	return fmt.Sprintf("agentauth: constraint on %q has unknown operators: %s", e.Field, strings.Join(e.Operators, ", "))
}

// ConstraintError reports a constraint that is not well formed: invalid
// JSON, nesting beyond MaxDepth, an empty operator object, or an
// operand of the wrong type. Such a grant can never be satisfied.
type ConstraintError struct {
	// Field is the constrained top-level input field.
	Field string
	// Reason says what is wrong, without quoting the constraint.
	Reason string
}

// Error implements error.
func (e *ConstraintError) Error() string {
	return fmt.Sprintf("agentauth: constraint on %q: %s", e.Field, e.Reason)
}

// Check evaluates every constraint against the raw top-level
// argument values and returns every violation (all fields, all failed
// operators), sorted by field and, within a field, by operator name.
//
// Comparison is strict: no type coercion ("5" is not 5); numbers compare by
// exact decimal value (5 equals 5.0, and no rounding ever happens); objects
// compare by members regardless of order; arrays compare in order. A
// missing field fails an exact value, eq, min, max and in, and passes
// not_in. min and max fail for an argument that is not a number.
//
// If any constraint is not well formed, Check evaluates nothing
// and returns a nil slice and an error: an *UnknownOperatorError or a
// *ConstraintError, or several of them joined (one per field, sorted by
// field), to be inspected with errors.As.
func Check(constraints map[string]json.RawMessage, args map[string]json.RawMessage) ([]agentcap.ConstraintViolation, error) {
	var keyBuf [8]string
	fields := keyBuf[:0]
	for f := range constraints {
		fields = append(fields, f)
	}
	slices.Sort(fields)

	var violations []agentcap.ConstraintViolation
	var errs []error
	for _, f := range fields {
		c, err := parseConstraint(f, constraints[f])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if errs != nil {
			continue
		}
		raw, present := args[f]
		violations = c.check(raw, present, violations)
	}
	if errs != nil {
		return nil, joinErrors(errs)
	}
	return violations, nil
}

// Validate checks that constraints are well formed: valid JSON within
// MaxDepth, only known operators, a non-empty operator object, numeric
// min and max, array in and not_in. It returns the same errors as Check,
// and is meant for grant time too, so that a grant that could never be
// satisfied is refused when it is made.
func Validate(constraints map[string]json.RawMessage) error {
	fields := make([]string, 0, len(constraints))
	for f := range constraints {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	var errs []error
	for _, f := range fields {
		if _, err := parseConstraint(f, constraints[f]); err != nil {
			errs = append(errs, err)
		}
	}
	return joinErrors(errs)
}

func joinErrors(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

// constraint is one field's parsed constraint.
type constraint struct {
	field string
	raw   json.RawMessage
	// exact is set for an exact value; otherwise value is the operator
	// object, whose members are sorted by operator name.
	exact bool
	value jval
}

func parseConstraint(field string, raw json.RawMessage) (constraint, error) {
	v, err := parseJSON(raw)
	if err != nil {
		return constraint{}, &ConstraintError{Field: field, Reason: err.Error()}
	}
	c := constraint{field: field, raw: raw, value: v}
	if v.kind != kindObject {
		c.exact = true
		return c, nil
	}
	if len(v.members) == 0 {
		// An empty operator object restricts nothing, yet would count as
		// constraining the field for required constraints.
		return constraint{}, &ConstraintError{Field: field, Reason: "empty operator object"}
	}
	// Unknown operators are looked for first: the protocol wants them
	// reported as such, whatever else is wrong with the object.
	var unknown []string
	for _, m := range v.members {
		if !isOperator(string(m.key)) {
			unknown = append(unknown, string(m.key))
		}
	}
	if unknown != nil {
		// Members are sorted by key, so unknown is sorted too.
		return constraint{}, &UnknownOperatorError{Field: field, Operators: unknown}
	}
	for _, m := range v.members {
		switch string(m.key) {
		case "min", "max":
			if m.value.kind != kindNumber {
				return constraint{}, &ConstraintError{Field: field, Reason: string(m.key) + " must be a number"}
			}
		case "in", "not_in":
			if m.value.kind != kindArray {
				return constraint{}, &ConstraintError{Field: field, Reason: string(m.key) + " must be an array"}
			}
		}
	}
	return c, nil
}

// isOperator knows the operators by heart: agentauth.Operators, which
// lists them, is a variable its callers could modify.
func isOperator(name string) bool {
	switch name {
	case "eq", "in", "max", "min", "not_in":
		return true
	}
	return false
}

// check appends the violations of argument raw (present or not) to out.
func (c *constraint) check(raw json.RawMessage, present bool, out []agentcap.ConstraintViolation) []agentcap.ConstraintViolation {
	var arg jval
	usable := false
	if present {
		if v, err := parseJSON(raw); err == nil {
			arg, usable = v, true
		}
	}
	// An argument that is missing passes only not_in; one that cannot be
	// read (invalid or too deep) passes nothing.
	if c.exact {
		if !usable || !jsonEqual(&c.value, &arg) {
			out = append(out, c.violation("", c.raw, raw, usable))
		}
		return out
	}
	for i := range c.value.members {
		m := &c.value.members[i]
		op := string(m.key)
		ok := false
		switch op {
		case "eq":
			ok = usable && jsonEqual(&m.value, &arg)
		case "min":
			ok = usable && arg.kind == kindNumber && compareNumbers(arg.text, m.value.text) >= 0
		case "max":
			ok = usable && arg.kind == kindNumber && compareNumbers(arg.text, m.value.text) <= 0
		case "in":
			ok = usable && containsJSON(m.value.items, &arg)
		case "not_in":
			ok = !present || (usable && !containsJSON(m.value.items, &arg))
		}
		if !ok {
			out = append(out, c.violation(op, m.raw, raw, usable))
		}
	}
	return out
}

// violation builds the report for a failed check. op is empty for an
// exact value; operand is the granted value of the operator or the whole
// constraint.
func (c *constraint) violation(op string, operand, actual json.RawMessage, usable bool) agentcap.ConstraintViolation {
	var b bytes.Buffer
	if op != "" {
		b.WriteString(`{"`)
		b.WriteString(op)
		b.WriteString(`":`)
	}
	compactInto(&b, operand)
	if op != "" {
		b.WriteByte('}')
	}
	v := agentcap.ConstraintViolation{Field: c.field, Constraint: b.Bytes(), Actual: json.RawMessage("null")}
	if usable {
		var a bytes.Buffer
		compactInto(&a, actual)
		v.Actual = a.Bytes()
	}
	return v
}

// compactInto writes raw, already validated by parseJSON, without
// insignificant whitespace so that reports are stable.
func compactInto(b *bytes.Buffer, raw []byte) {
	if err := json.Compact(b, raw); err != nil {
		// parseJSON is stricter than json.Compact, so this only happens if
		// the two disagree; keep the report valid JSON regardless.
		b.Reset()
		b.WriteString("null")
	}
}

func containsJSON(items []jval, v *jval) bool {
	for i := range items {
		if jsonEqual(&items[i], v) {
			return true
		}
	}
	return false
}

// jsonEqual is strict JSON equality: same kind, numbers by exact decimal
// value, strings by their decoded bytes, arrays in order, objects by
// members regardless of order.
func jsonEqual(a, b *jval) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case kindNumber:
		return compareNumbers(a.text, b.text) == 0
	case kindString:
		return bytes.Equal(a.text, b.text)
	case kindArray:
		if len(a.items) != len(b.items) {
			return false
		}
		for i := range a.items {
			if !jsonEqual(&a.items[i], &b.items[i]) {
				return false
			}
		}
		return true
	case kindObject:
		if len(a.members) != len(b.members) {
			return false
		}
		// Members are sorted by key, so equal objects line up.
		for i := range a.members {
			if !bytes.Equal(a.members[i].key, b.members[i].key) || !jsonEqual(&a.members[i].value, &b.members[i].value) {
				return false
			}
		}
		return true
	}
	return true
}

// EqualJSON reports whether a and b are the same JSON value under the
// strict equality used for constraints. Invalid JSON, or JSON nested
// beyond MaxDepth, equals nothing.
func EqualJSON(a, b json.RawMessage) bool {
	va, err := parseJSON(a)
	if err != nil {
		return false
	}
	vb, err := parseJSON(b)
	if err != nil {
		return false
	}
	return jsonEqual(&va, &vb)
}

// ---- a small, strict, bounded JSON reader ----

type jkind uint8

const (
	kindNull jkind = iota
	kindFalse
	kindTrue
	kindNumber
	kindString
	kindArray
	kindObject
)

// jval is a parsed JSON value. Strings without escapes and number texts
// alias the input instead of being copied.
type jval struct {
	kind jkind
	// text is a number's literal text or a string's decoded bytes.
	text    []byte
	items   []jval
	members []jmember // sorted by key, no duplicates
}

type jmember struct {
	key   []byte
	value jval
	raw   []byte // the member value's text as written
}

type jparser struct {
	data []byte
	pos  int
}

type jsonError struct {
	offset int
	msg    string
}

func (e *jsonError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.offset, e.msg)
}

// parseJSON parses exactly one JSON value (RFC 8259) with surrounding
// whitespace. It rejects duplicate object keys, invalid UTF-8 and nesting
// beyond MaxDepth.
func parseJSON(data []byte) (jval, error) {
	p := jparser{data: data}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return jval{}, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return jval{}, p.fail("unexpected data after the value")
	}
	return v, nil
}

func (p *jparser) fail(msg string) error {
	return &jsonError{offset: p.pos, msg: msg}
}

func (p *jparser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jparser) literal(word string, kind jkind) (jval, error) {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return jval{}, p.fail("invalid literal")
	}
	p.pos += len(word)
	return jval{kind: kind}, nil
}

func (p *jparser) value(depth int) (jval, error) {
	if p.pos >= len(p.data) {
		return jval{}, p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str()
		return jval{kind: kindString, text: s}, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true", kindTrue)
	case c == 'f':
		return p.literal("false", kindFalse)
	case c == 'n':
		return p.literal("null", kindNull)
	}
	return jval{}, p.fail("unexpected character")
}

func (p *jparser) array(depth int) (jval, error) {
	if depth > MaxDepth {
		return jval{}, p.fail("nesting too deep")
	}
	p.pos++ // [
	p.skipSpace()
	v := jval{kind: kindArray}
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		v.items = []jval{}
		return v, nil
	}
	for {
		item, err := p.value(depth)
		if err != nil {
			return jval{}, err
		}
		v.items = append(v.items, item)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return jval{}, p.fail("unexpected end of input")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case ']':
			p.pos++
			return v, nil
		default:
			return jval{}, p.fail("expected , or ]")
		}
	}
}

func (p *jparser) object(depth int) (jval, error) {
	if depth > MaxDepth {
		return jval{}, p.fail("nesting too deep")
	}
	p.pos++ // {
	p.skipSpace()
	v := jval{kind: kindObject}
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		v.members = []jmember{}
		return v, nil
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return jval{}, p.fail("expected a string key")
		}
		key, err := p.str()
		if err != nil {
			return jval{}, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return jval{}, p.fail("expected :")
		}
		p.pos++
		p.skipSpace()
		start := p.pos
		item, err := p.value(depth)
		if err != nil {
			return jval{}, err
		}
		v.members = append(v.members, jmember{key: key, value: item, raw: p.data[start:p.pos]})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return jval{}, p.fail("unexpected end of input")
		}
		if p.data[p.pos] == ',' {
			p.pos++
			p.skipSpace()
			continue
		}
		if p.data[p.pos] != '}' {
			return jval{}, p.fail("expected , or }")
		}
		p.pos++
		break
	}
	slices.SortFunc(v.members, func(a, b jmember) int { return bytes.Compare(a.key, b.key) })
	for i := 1; i < len(v.members); i++ {
		if bytes.Equal(v.members[i-1].key, v.members[i].key) {
			// Which of two values a reader keeps differs between
			// implementations, so an object with a repeated key has no
			// single meaning to compare.
			return jval{}, p.fail("duplicate key")
		}
	}
	return v, nil
}

// str reads a string starting at its opening quote and returns its decoded
// bytes. Escaped lone surrogates are kept as their own three-byte
// sequences (as WTF-8 does), so they never collide with U+FFFD or with any
// valid text.
func (p *jparser) str() ([]byte, error) {
	p.pos++ // opening quote
	start := p.pos
	var out []byte // nil while no escape has been seen
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			s := p.data[start:p.pos]
			if out != nil {
				s = out
			}
			p.pos++
			return s, nil
		case c == '\\':
			if out == nil {
				out = append(make([]byte, 0, p.pos-start+8), p.data[start:p.pos]...)
			}
			var err error
			if out, err = p.escape(out); err != nil {
				return nil, err
			}
		case c < 0x20:
			return nil, p.fail("control character in string")
		case c < utf8.RuneSelf:
			if out != nil {
				out = append(out, c)
			}
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return nil, p.fail("invalid UTF-8 in string")
			}
			if out != nil {
				out = append(out, p.data[p.pos:p.pos+size]...)
			}
			p.pos += size
		}
	}
	return nil, p.fail("unterminated string")
}

// escape decodes the escape sequence at p.pos (jsonvalue reads it) and
// appends its text to out. A surrogate escape that is not half of a pair
// is kept as its own three bytes.
func (p *jparser) escape(out []byte) ([]byte, error) {
	r, n, fail, _ := jsonvalue.ReadEscape(p.data, p.pos)
	switch fail {
	case jsonvalue.EscapeTruncated:
		if p.pos+1 >= len(p.data) {
			return nil, p.fail("unterminated escape")
		}
		p.pos += 2
		return nil, p.fail("invalid \\u escape")
	case jsonvalue.EscapeBadHex:
		p.pos += 2
		return nil, p.fail("invalid \\u escape")
	case jsonvalue.EscapeBadChar:
		p.pos += 2
		return nil, p.fail("invalid escape")
	}
	p.pos += n
	if jsonvalue.IsHighSurrogate(r) {
		if pair, n2, ok := jsonvalue.ReadSurrogatePair(p.data, r, p.pos); ok {
			p.pos += n2
			return utf8.AppendRune(out, pair), nil
		}
	}
	if r >= 0xD800 && r < 0xE000 {
		return append(out, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F), nil
	}
	return utf8.AppendRune(out, r), nil
}

func (p *jparser) number() (jval, error) {
	start := p.pos
	d := p.data
	if d[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(d) && d[p.pos] == '0':
		p.pos++
	case p.pos < len(d) && d[p.pos] >= '1' && d[p.pos] <= '9':
		p.digits()
	default:
		return jval{}, p.fail("invalid number")
	}
	if p.pos < len(d) && d[p.pos] == '.' {
		p.pos++
		if p.digits() == 0 {
			return jval{}, p.fail("invalid number")
		}
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return jval{}, p.fail("invalid number")
		}
	}
	return jval{kind: kindNumber, text: d[start:p.pos]}, nil
}

func (p *jparser) digits() int {
	n := 0
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
		n++
	}
	return n
}

// compareNumbers compares two valid JSON number texts by exact value.
func compareNumbers(a, b []byte) int {
	da, _ := jsonvalue.ParseDecimal(string(a))
	db, _ := jsonvalue.ParseDecimal(string(b))
	return jsonvalue.CompareDecimals(da, db)
}
