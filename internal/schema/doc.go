// Package schema derives JSON Schemas (draft 2020-12) for the Go types of
// capability inputs and outputs, and checks generic JSON trees against them.
//
// Three pieces work together on an input. For, at definition time, turns a
// struct type into a closed object schema. Compile turns a schema into a
// Validator whose Validate lists every violation with its JSON Pointer.
// KeyChecker closes the gap between the two and encoding/json: the decoder
// matches object keys to fields case-insensitively, so a key that the schema
// treats as unknown could still set a field; KeyChecker insists on exact
// names. Reflection happens when these are built.
//
// Compile runs schemas in the vocabulary For derives on a native validator,
// for which a value that passes allocates nothing; any other schema runs on
// the general validation library (santhosh-tekuri/jsonschema), which also
// checks every document at compile time. Both report the same violations.
package schema
