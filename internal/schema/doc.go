// Package schema derives JSON Schemas (draft 2020-12) for the Go types of
// capability inputs and outputs, checks JSON against them, and fills Go
// values from the checked trees.
//
// Four pieces work together on an input. For, at definition time, turns a
// struct type into a closed object schema. Compile turns a schema into a
// Validator whose Validate lists every violation of a parsed tree with its
// JSON Pointer. A Decoder then fills the Go value from that same tree, as
// encoding/json would from the text, so the input is parsed once; it
// matches keys to field names exactly, where encoding/json folds case,
// since a key that the schema treats as unknown must not set a field.
// KeyChecker makes that same key check on its own, for trees that fail
// validation and for types a Decoder does not fill. Reflection happens
// when these are built.
//
// On an output, ForOutput derives the schema of any describable result
// type (an array of objects as well as an object), NilEncoding says what a
// nil slice or map result is sent as, and ValidateJSON checks the encoded
// text directly, reading it once without building a tree, and reports
// exactly what Validate reports for the parsed text.
//
// Compile runs schemas in the vocabulary For derives on a native validator,
// for which a value that passes allocates nothing; any other schema runs on
// the general validation library (santhosh-tekuri/jsonschema), which also
// checks every document at compile time. Both report the same violations.
package schema
