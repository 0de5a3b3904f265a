package sqlstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentcap/agentcap/agentauth/store"
)

// The JSON columns are written by hand rather than by encoding/json, which
// would compact constraint values and escape <, > and &: a stored
// constraint must read back as the bytes the store was given.

// encodeConstraints returns the constraints as a JSON object whose member
// values are the raw bytes, or nil (NULL) for none.
func encodeConstraints(c map[string]json.RawMessage) any {
	if len(c) == 0 {
		return nil
	}
	return string(appendConstraints(nil, c))
}

func appendConstraints(b []byte, c map[string]json.RawMessage) []byte {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = append(b, c[k]...)
	}
	return append(b, '}')
}

func appendJSONString(b []byte, s string) []byte {
	q, err := json.Marshal(s)
	if err != nil {
		// A Go string always encodes: invalid UTF-8 becomes U+FFFD.
		panic(err)
	}
	return append(b, q...)
}

// decodeConstraints reads what encodeConstraints wrote. json.RawMessage
// keeps each member's bytes as they are in the column.
func decodeConstraints(s string) (map[string]json.RawMessage, error) {
	if s == "" {
		return nil, nil
	}
	var c map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return nil, fmt.Errorf("sqlstore: stored constraints: %w", err)
	}
	if len(c) == 0 {
		return nil, nil
	}
	return c, nil
}

func encodeStrings(s []string) string {
	if len(s) == 0 {
		return "[]"
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func decodeStrings(s string) ([]string, error) {
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("sqlstore: stored string list: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func encodeCapabilities(cs []store.RequestedCapability) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, c := range cs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":`)
		b.Write(appendJSONString(nil, c.Name))
		if len(c.Constraints) > 0 {
			b.WriteString(`,"constraints":`)
			b.Write(appendConstraints(nil, c.Constraints))
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.String()
}

func decodeCapabilities(s string) ([]store.RequestedCapability, error) {
	var out []store.RequestedCapability
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("sqlstore: stored capabilities: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	for i := range out {
		if len(out[i].Constraints) == 0 {
			out[i].Constraints = nil
		}
	}
	return out, nil
}

// storedCall is the stored form of a store.Call. The arguments and the
// preview are kept as text, so that they come back byte for byte.
type storedCall struct {
	Capability string `json:"capability"`
	Arguments  string `json:"arguments"`
	Audience   string `json:"audience"`
	Preview    string `json:"preview"`
}

func encodeCall(c *store.Call) string {
	// Strings only: encoding cannot fail.
	b, _ := json.Marshal(storedCall{Capability: c.Capability, Arguments: string(c.Arguments), Audience: c.Audience, Preview: string(c.Preview)})
	return string(b)
}

func decodeCall(s string) (*store.Call, error) {
	var sc storedCall
	if err := json.Unmarshal([]byte(s), &sc); err != nil {
		return nil, fmt.Errorf("sqlstore: stored call: %w", err)
	}
	return &store.Call{Capability: sc.Capability, Arguments: json.RawMessage(sc.Arguments), Audience: sc.Audience,
		Preview: json.RawMessage(sc.Preview)}, nil
}
