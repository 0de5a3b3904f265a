package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// Properties returns the top-level property names of an object schema, in
// the order the document lists them. It fails unless schemaJSON is an
// object whose "type" is or includes "object" and that has a "properties"
// object.
func Properties(schemaJSON []byte) ([]string, error) {
	obj, members, err := jsonvalue.ParseObject(schemaJSON)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if !describesObject(obj["type"]) {
		return nil, errors.New(`schema: not an object schema: "type" is not "object"`)
	}
	props, ok := obj["properties"].(map[string]any)
	if !ok {
		return nil, errors.New(`schema: object schema has no "properties" object`)
	}
	// The tree lost the order, so read the keys again from the raw member;
	// it already parsed strictly, so the tokens below cannot fail.
	dec := json.NewDecoder(bytes.NewReader(members["properties"]))
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("schema: properties: %w", err)
	}
	names := make([]string, 0, len(props))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("schema: properties: %w", err)
		}
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, fmt.Errorf("schema: properties: %w", err)
		}
	}
	return names, nil
}

func describesObject(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	return false
}
