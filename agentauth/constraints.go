package agentauth

import (
	"encoding/json"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/internal/constraint"
)

// Operators lists the supported operator names, sorted.
//
// A constraint value is either an exact JSON value or an operator object.
// Every JSON object is read as an operator object, so each of its keys must
// be one of these names. The protocol gives no way to tell an exact object
// value apart from an object of operators this server does not know, and
// reading an unknown operator as data would quietly turn a restriction into
// an equality test; the protocol requires unknown operators to be refused
// instead. To require an exact object value, wrap it: {"eq": {...}}. Any
// other JSON value (string, number, boolean, null, array) is an exact value.
var Operators = []string{"eq", "in", "max", "min", "not_in"}

// maxConstraintDepth bounds the nesting of constraint values and of the
// arguments compared with them. Grants may come from remote servers, so
// parsing them must not recurse without limit. An argument nested deeper
// than this never satisfies a constraint on its field.
const maxConstraintDepth = constraint.MaxDepth

// UnknownOperatorError reports operator names the server does not know in
// the constraint on one field. Such a grant can never be satisfied.
type UnknownOperatorError = constraint.UnknownOperatorError

// ConstraintError reports a constraint that is not well formed: invalid
// JSON, nesting deeper than 64 levels, an empty operator object, or an
// operand of the wrong type. Such a grant can never be satisfied.
type ConstraintError = constraint.ConstraintError

// CheckConstraints evaluates every constraint against the raw top-level
// argument values and returns every violation (all fields, all failed
// operators), sorted by field and, within a field, by operator name.
//
// Comparison is strict: no type coercion ("5" is not 5); numbers compare by
// exact decimal value (5 equals 5.0, and no rounding ever happens); objects
// compare by members regardless of order; arrays compare in order. A
// missing field fails an exact value, eq, min, max and in, and passes
// not_in. min and max fail for an argument that is not a number.
//
// If any constraint is not well formed, CheckConstraints evaluates nothing
// and returns a nil slice and an error: an *UnknownOperatorError or a
// *ConstraintError, or several of them joined (one per field, sorted by
// field), to be inspected with errors.As.
func CheckConstraints(constraints map[string]json.RawMessage, args map[string]json.RawMessage) ([]agentcap.ConstraintViolation, error) {
	return constraint.Check(constraints, args)
}

// ValidateConstraints checks that constraints are well formed: valid JSON
// nested at most 64 levels deep, only known operators, a non-empty operator
// object, numeric min and max, array in and not_in. It returns the same
// errors as CheckConstraints, and is meant for grant time too, so that a
// grant that could never be satisfied is refused when it is made.
func ValidateConstraints(constraints map[string]json.RawMessage) error {
	return constraint.Validate(constraints)
}

// equalRawJSON reports whether a and b are the same JSON value under the
// strict equality of constraints.
func equalRawJSON(a, b json.RawMessage) bool { return constraint.EqualJSON(a, b) }
