package schema

import (
	"cmp"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// Violation is one way a value fails a schema.
type Violation struct {
	// Path is the JSON Pointer (RFC 6901) of the offending value; "" is
	// the whole value.
	Path string
	// Message says what is wrong, in English.
	Message string
}

// Validator validates generic JSON trees, as produced by jsonvalue.Parse,
// against a compiled schema. It is safe for concurrent use.
//
// Schemas in the vocabulary For derives run on a native validator, which
// checks a valid value without allocating; any other schema runs on the
// general validation library. Both report the same violations, worded the
// same way.
type Validator struct {
	native *nativeNode        // set when the whole schema is native
	schema *jsonschema.Schema // otherwise
}

// schemaURL names the one document a compiler holds. Its scheme is served
// by no loader, and it is hierarchical so that relative references resolve
// to other (refused) documents rather than back to this one, as they would
// against an opaque URN.
const schemaURL = "agentcap:///schema.json"

// refuseLoader fails every load: references may point only inside the
// document or at the draft meta-schemas the library embeds, so compiling a
// schema never touches the network or the file system.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, errors.New("external references are not loaded")
}

// Compile compiles a draft 2020-12 schema document. A "$schema" keyword, if
// present, must name draft 2020-12. References outside the document are
// refused, and format keywords ("date-time", "email", ...) are asserted,
// not just annotations.
//
// The document is always compiled, and so checked against the meta-schema,
// by the validation library. When it uses only the keywords For derives
// (type, properties, required, additionalProperties, items, enum, the
// numeric, length, pattern, count and uniqueItems keywords, the common
// formats and annotations), the returned Validator runs natively instead.
func Compile(schemaJSON []byte) (*Validator, error) {
	doc, sch, err := compileReference(schemaJSON)
	if err != nil {
		return nil, err
	}
	if n, ok := compileNative(doc); ok {
		return &Validator{native: n}, nil
	}
	return &Validator{schema: sch}, nil
}

// compileReference compiles a document with the validation library and
// returns the parsed document with it.
func compileReference(schemaJSON []byte) (any, *jsonschema.Schema, error) {
	doc, err := jsonvalue.Parse(schemaJSON)
	if err != nil {
		return nil, nil, fmt.Errorf("schema: %w", err)
	}
	if obj, ok := doc.(map[string]any); ok {
		if s, present := obj["$schema"]; present {
			if str, _ := s.(string); strings.TrimSuffix(str, "#") != draft2020 {
				return nil, nil, fmt.Errorf("schema: $schema must be %q", draft2020)
			}
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, nil, fmt.Errorf("schema: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, nil, fmt.Errorf("schema: %w", err)
	}
	return doc, sch, nil
}

var english = message.NewPrinter(language.English)

// Validate returns every violation of the schema by value, sorted by path
// and then message, or nil when value is valid. A value that passes costs
// nothing beyond the validation itself.
//
// Numbers may be json.Number (as jsonvalue.Parse produces), float64 or any
// Go integer type. An "integer" accepts any number with no fractional part,
// such as 5.0, as draft 2020-12 requires.
func (v *Validator) Validate(value any) []Violation {
	var out []Violation
	if v.native != nil {
		var r run
		v.native.check(&r, value)
		out = r.out
	} else {
		err := v.schema.Validate(value)
		if err == nil {
			return nil
		}
		var verr *jsonschema.ValidationError
		if !errors.As(err, &verr) {
			return []Violation{{Message: err.Error()}}
		}
		out = flatten(verr, out)
	}
	if len(out) == 0 {
		return nil
	}
	sortViolations(out)
	return slices.Compact(out)
}

// flatten collects the leaves of the library's error tree. Inner nodes
// only say that some subschema failed; the leaves say why. Messages are the
// library's English ones, except that required and additionalProperties
// failures are split per property, and quoted input is clipped.
func flatten(e *jsonschema.ValidationError, out []Violation) []Violation {
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			out = flatten(c, out)
		}
		return out
	}
	path := pointer(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, name := range k.Missing {
			out = append(out, Violation{Path: jsonvalue.Pointer(path, name), Message: msgMissing})
		}
	case *kind.AdditionalProperties:
		for _, name := range k.Properties {
			out = append(out, Violation{Path: jsonvalue.Pointer(path, name), Message: msgUnknown})
		}
	case *kind.FalseSchema:
		// The library's "false schema" means nothing to a caller; it comes
		// from "false" subschemas such as unevaluatedProperties: false.
		out = append(out, Violation{Path: path, Message: msgNotAllowed})
	case *kind.Pattern:
		short := *k
		short.Got = clip(k.Got)
		out = append(out, Violation{Path: path, Message: short.LocalizedString(english)})
	case *kind.Format:
		out = append(out, Violation{Path: path, Message: formatMessage(k.Got, k.Want, k.Err)})
	default:
		out = append(out, Violation{Path: path, Message: e.ErrorKind.LocalizedString(english)})
	}
	return out
}

// clip shortens a value the library quotes in a message, so that a huge
// string in a request is not copied into every report of it.
func clip(s string) string { return clipTo(s, 40) }

func clipTo(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// formatMessage words a value that is not in its format. The reason may
// quote the value too (time.Parse and net/netip errors do), so it is
// clipped as well.
func formatMessage(got any, format string, reason error) string {
	if s, ok := got.(string); ok {
		got = clip(s)
	}
	text := reason.Error()
	if l, ok := reason.(interface{ LocalizedError(*message.Printer) string }); ok {
		text = l.LocalizedError(english)
	}
	k := kind.Format{Got: got, Want: format, Err: errors.New(clipTo(text, 100))}
	return k.LocalizedString(english)
}

// ratOf is a number of a generic tree as the library's messages take it.
func ratOf(v any) *big.Rat {
	if r, ok := new(big.Rat).SetString(numberText(v)); ok {
		return r
	}
	return new(big.Rat)
}

func pointer(tokens []string) string {
	p := ""
	for _, t := range tokens {
		p = jsonvalue.Pointer(p, t)
	}
	return p
}

func sortViolations(vs []Violation) {
	slices.SortFunc(vs, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Message, b.Message))
	})
}
