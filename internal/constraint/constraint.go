// Package constraint is the grammar of Agent Auth grant constraints
// (protocol §2.13) and their strict evaluation, on the standard library
// alone, so that the verifier (package agentauth, which publishes it as
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
	"math/big"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentcap/agentcap"
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

func (p *jparser) escape(out []byte) ([]byte, error) {
	if p.pos+1 >= len(p.data) {
		return nil, p.fail("unterminated escape")
	}
	c := p.data[p.pos+1]
	p.pos += 2
	switch c {
	case '"', '\\', '/':
		return append(out, c), nil
	case 'b':
		return append(out, '\b'), nil
	case 'f':
		return append(out, '\f'), nil
	case 'n':
		return append(out, '\n'), nil
	case 'r':
		return append(out, '\r'), nil
	case 't':
		return append(out, '\t'), nil
	case 'u':
		r, ok := p.hex4()
		if !ok {
			return nil, p.fail("invalid \\u escape")
		}
		if r >= 0xD800 && r < 0xDC00 && p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
			save := p.pos
			p.pos += 2
			if lo, ok := p.hex4(); ok && lo >= 0xDC00 && lo < 0xE000 {
				return utf8.AppendRune(out, 0x10000+(r-0xD800)<<10+(lo-0xDC00)), nil
			}
			p.pos = save
		}
		if r >= 0xD800 && r < 0xE000 {
			return append(out, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F), nil
		}
		return utf8.AppendRune(out, r), nil
	}
	return nil, p.fail("invalid escape")
}

func (p *jparser) hex4() (rune, bool) {
	if p.pos+4 > len(p.data) {
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.pos += 4
	return r, true
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

// ---- exact decimal comparison ----

// decimal views a JSON number's text as sign × 0.D × 10^adj, where D are
// the significant digits (no leading or trailing zeros). It never converts
// through float64, so 0.1 stays 0.1 and 5 equals 5.0 and 50e-1.
type decimal struct {
	neg    bool
	zero   bool
	whole  []byte // digits before the point
	frac   []byte // digits after the point
	lead   int    // leading zeros of whole+frac
	n      int    // significant digits
	adj    int64
	adjBig *big.Int // set instead of adj when the exponent is huge
}

// exponentDigitsLimit keeps the adjusted exponent well inside int64; longer
// exponents take the math/big path.
const exponentDigitsLimit = 15

// parseDecimal reads text, which must be a valid JSON number.
func parseDecimal(text []byte) decimal {
	var d decimal
	i := 0
	if i < len(text) && text[i] == '-' {
		d.neg = true
		i++
	}
	s := i
	for i < len(text) && text[i] >= '0' && text[i] <= '9' {
		i++
	}
	d.whole = text[s:i]
	if i < len(text) && text[i] == '.' {
		i++
		s = i
		for i < len(text) && text[i] >= '0' && text[i] <= '9' {
			i++
		}
		d.frac = text[s:i]
	}
	expNeg := false
	var exp []byte
	if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
		i++
		if i < len(text) && (text[i] == '+' || text[i] == '-') {
			expNeg = text[i] == '-'
			i++
		}
		exp = text[i:]
		for len(exp) > 1 && exp[0] == '0' {
			exp = exp[1:]
		}
	}

	total := len(d.whole) + len(d.frac)
	for d.lead < total && d.digitAt(d.lead) == '0' {
		d.lead++
	}
	if d.lead == total {
		d.zero = true
		return d
	}
	trail := 0
	for d.digitAt(total-1-trail) == '0' {
		trail++
	}
	d.n = total - d.lead - trail
	pointPos := int64(len(d.whole) - d.lead)

	if len(exp) > exponentDigitsLimit {
		e := new(big.Int)
		e.SetString(string(exp), 10)
		if expNeg {
			e.Neg(e)
		}
		d.adjBig = e.Add(e, big.NewInt(pointPos))
		return d
	}
	var e int64
	for _, c := range exp {
		e = e*10 + int64(c-'0')
	}
	if expNeg {
		e = -e
	}
	d.adj = pointPos + e
	return d
}

// digitAt returns the i-th digit of whole+frac.
func (d *decimal) digitAt(i int) byte {
	if i < len(d.whole) {
		return d.whole[i]
	}
	return d.frac[i-len(d.whole)]
}

func (d *decimal) sign() int {
	switch {
	case d.zero:
		return 0
	case d.neg:
		return -1
	}
	return 1
}

func (d *decimal) bigAdj() *big.Int {
	if d.adjBig != nil {
		return d.adjBig
	}
	return big.NewInt(d.adj)
}

// compareNumbers compares two valid JSON number texts by exact value.
func compareNumbers(a, b []byte) int {
	da, db := parseDecimal(a), parseDecimal(b)
	sa, sb := da.sign(), db.sign()
	if sa != sb {
		if sa < sb {
			return -1
		}
		return 1
	}
	if sa == 0 {
		return 0
	}
	m := compareMagnitude(&da, &db)
	if sa < 0 {
		return -m
	}
	return m
}

func compareMagnitude(a, b *decimal) int {
	if a.adjBig != nil || b.adjBig != nil {
		if c := a.bigAdj().Cmp(b.bigAdj()); c != 0 {
			return c
		}
	} else if a.adj != b.adj {
		if a.adj < b.adj {
			return -1
		}
		return 1
	}
	for i := 0; i < a.n && i < b.n; i++ {
		x, y := a.digitAt(a.lead+i), b.digitAt(b.lead+i)
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case a.n < b.n:
		return -1
	case a.n > b.n:
		return 1
	}
	return 0
}
