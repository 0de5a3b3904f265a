// Package mcpschema holds the one rule by which capability schemas and
// results become MCP tool schemas and structured content, shared by the
// MCP server (package mcpx) and the client's tool conversion, so that a
// capability looks the same through both.
//
// MCP wants an object in a tool's inputSchema, outputSchema and
// structuredContent. An output schema whose top-level type is "object" is
// published as it is and a result is its own structured content. Any
// other output (a list, a number) is wrapped: the schema becomes
// {"type":"object","properties":{"result":<schema>},"required":["result"]}
// and the structured content {"result":<value>}. The text content of a
// result is always the value itself.
package mcpschema

import (
	"bytes"
	"encoding/json"
)

// ResultKey is the member that holds a wrapped result.
const ResultKey = "result"

// emptyObject stands in for an absent input schema.
var emptyObject = json.RawMessage(`{"type":"object","properties":{}}`)

// topType returns the top-level "type" of a schema, or nil.
func topType(schema json.RawMessage) (any, bool) {
	var v struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(schema, &v) != nil {
		return nil, false
	}
	return v.Type, true
}

// IsObject reports whether schema declares "type": "object".
func IsObject(schema json.RawMessage) bool {
	t, ok := topType(schema)
	return ok && t == "object"
}

// absent reports a schema that says nothing: empty or null.
func absent(schema json.RawMessage) bool {
	s := bytes.TrimSpace(schema)
	return len(s) == 0 || string(s) == "null"
}

// Input returns the inputSchema of a tool: the capability's input schema
// when it declares an object, an empty object schema when it has none, and
// otherwise the schema under an object type ({"type":"object","allOf":[s]}),
// which admits exactly the same values when the schema describes objects.
func Input(schema json.RawMessage) json.RawMessage {
	switch {
	case absent(schema):
		return emptyObject
	case IsObject(schema):
		return schema
	}
	dialect, inner := splitDialect(schema)
	return join(`{`+dialect+`"type":"object","allOf":[`, inner, `]}`)
}

// Output returns the outputSchema of a tool and whether its results are
// wrapped. A capability without an output schema has none (nil, false).
func Output(schema json.RawMessage) (json.RawMessage, bool) {
	switch {
	case absent(schema):
		return nil, false
	case IsObject(schema):
		return schema, false
	}
	dialect, inner := splitDialect(schema)
	return join(`{`+dialect+`"type":"object","properties":{"`+ResultKey+`":`, inner, `},"required":["`+ResultKey+`"]}`), true
}

// splitDialect moves a "$schema" member out of a schema that is about to
// become a subschema, where JSON Schema 2020-12 does not allow it. It
// returns the member ready to open the wrapper (`"$schema":"...",`), or
// "" with the schema unchanged.
func splitDialect(schema json.RawMessage) (string, json.RawMessage) {
	var members map[string]json.RawMessage
	if json.Unmarshal(schema, &members) != nil {
		return "", schema
	}
	d, ok := members["$schema"]
	if !ok {
		return "", schema
	}
	delete(members, "$schema")
	inner, err := json.Marshal(members)
	if err != nil {
		return "", schema
	}
	return `"$schema":` + string(d) + `,`, inner
}

// Structured returns the structuredContent of a result: data itself, or
// {"result": data} when the tool's results are wrapped.
func Structured(data json.RawMessage, wrapped bool) json.RawMessage {
	if !wrapped {
		return data
	}
	return join(`{"`+ResultKey+`":`, data, `}`)
}

func join(head string, middle []byte, tail string) json.RawMessage {
	b := make([]byte, 0, len(head)+len(middle)+len(tail))
	b = append(b, head...)
	b = append(b, middle...)
	return append(b, tail...)
}
