package core

import (
	"cmp"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/internal/jsonvalue"
	"github.com/agentcap/agentcap/internal/schema"
)

// convertViolations turns validator violations into public ones.
func convertViolations(vs []schema.Violation) []agentcap.Violation {
	if len(vs) == 0 {
		return nil
	}
	out := make([]agentcap.Violation, len(vs))
	for i, v := range vs {
		out[i] = agentcap.Violation{Path: v.Path, Message: v.Message}
	}
	return out
}

// mergeViolations combines schema violations with key violations, sorted
// by path. The key check repeats what a derived schema already reports
// (additionalProperties is false everywhere), so a key violation is kept
// only for a path the schema did not flag, as happens with an explicit
// schema that admits extra properties.
func mergeViolations(schemaV, keyV []schema.Violation) []agentcap.Violation {
	if len(schemaV) == 0 && len(keyV) == 0 {
		return nil
	}
	out := make([]agentcap.Violation, 0, len(schemaV)+len(keyV))
	flagged := make(map[string]bool, len(schemaV))
	for _, v := range schemaV {
		flagged[v.Path] = true
		out = append(out, agentcap.Violation{Path: v.Path, Message: v.Message})
	}
	for _, v := range keyV {
		if !flagged[v.Path] {
			out = append(out, agentcap.Violation{Path: v.Path, Message: v.Message})
		}
	}
	slices.SortStableFunc(out, func(x, y agentcap.Violation) int {
		return cmp.Or(strings.Compare(x.Path, y.Path), strings.Compare(x.Message, y.Message))
	})
	return out
}

// parseViolation describes a JSON syntax or duplicate-key error.
func parseViolation(err error) []agentcap.Violation {
	var dup *jsonvalue.DuplicateKeyError
	if errors.As(err, &dup) {
		return []agentcap.Violation{{Path: jsonvalue.Pointer(dup.Path, dup.Key), Message: "duplicate key"}}
	}
	return []agentcap.Violation{{Message: err.Error()}}
}

// decodeViolation describes a failure of the final decode into the Go
// type, which the schema admitted (for example a number out of range).
func decodeViolation(err error) []agentcap.Violation {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		p := ""
		if te.Field != "" {
			for _, seg := range strings.Split(te.Field, ".") {
				p = jsonvalue.Pointer(p, seg)
			}
		}
		return []agentcap.Violation{{Path: p, Message: "cannot be decoded as " + te.Type.String()}}
	}
	return []agentcap.Violation{{Message: "the arguments cannot be decoded"}}
}
