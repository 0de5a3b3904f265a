package httpx

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentcap/agentcap/core"
)

// The envelope parsers below read only the top level of a request body.
// The arguments stay raw: the executor parses them, once, strictly. A
// body is first checked to be valid JSON in UTF-8, so the scanner can trust the
// grammar and only has to find where each member starts and ends.

// objectScanner walks the members of one JSON object in valid JSON text.
type objectScanner struct {
	data    []byte
	i       int
	seen    [][]byte
	seenBuf [4][]byte // keeps the usual two or three keys off the heap
}

// newObjectScanner positions a scanner inside the object data holds. It
// reports false when data is not an object.
func newObjectScanner(data []byte) (objectScanner, bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return objectScanner{}, false
	}
	return objectScanner{data: data, i: i + 1}, true
}

// next returns the next member's unescaped key and raw value. The key
// aliases data unless it holds escapes, so comparing it allocates
// nothing. dup reports a key that appeared before in this object.
func (s *objectScanner) next() (key, val []byte, dup, ok bool) {
	if s.seen == nil {
		s.seen = s.seenBuf[:0]
	}
	i := skipSpace(s.data, s.i)
	if s.data[i] == ',' {
		i = skipSpace(s.data, i+1)
	}
	if s.data[i] == '}' {
		s.i = i + 1
		return nil, nil, false, false
	}
	end := stringEnd(s.data, i)
	key = unquoteBytes(s.data[i:end])
	i = skipSpace(s.data, end)
	i = skipSpace(s.data, i+1) // the colon
	vend := valueEnd(s.data, i)
	val = s.data[i:vend]
	s.i = vend
	for _, k := range s.seen {
		if bytes.Equal(k, key) {
			dup = true
		}
	}
	s.seen = append(s.seen, key)
	return key, val, dup, true
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the string starting at data[i].
func stringEnd(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data)
}

// valueEnd returns the index just past the value starting at data[i].
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				i = stringEnd(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(data)
	default:
		for ; i < len(data); i++ {
			switch data[i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return i
			}
		}
		return len(data)
	}
}

// unquoteBytes decodes a JSON string token, without copying when it holds
// no escapes.
func unquoteBytes(tok []byte) []byte {
	if bytes.IndexByte(tok, '\\') < 0 {
		return tok[1 : len(tok)-1]
	}
	return []byte(unquote(tok))
}

// unquote decodes a JSON string token. Only tokens with escapes go through
// encoding/json.
func unquote(tok []byte) string {
	if bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1 : len(tok)-1])
	}
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return ""
	}
	return s
}

// pointer appends a JSON Pointer (RFC 6901) segment to base.
func pointer(base, segment string) string {
	if strings.ContainsAny(segment, "~/") {
		segment = strings.ReplaceAll(segment, "~", "~0")
		segment = strings.ReplaceAll(segment, "/", "~1")
	}
	return base + "/" + segment
}

// Messages of malformed-request violations.
const (
	msgBadRequest     = "the request body is invalid"
	msgNotJSON        = "the body is not valid JSON"
	msgNotObject      = "must be a JSON object"
	msgUnknownMember  = "unknown member"
	msgDuplicateKey   = "duplicate key"
	msgNeedName       = "must be a non-empty string"
	msgArgsNotObject  = "must be a JSON object or null"
	msgIDNotString    = "must be a string"
	msgNeedRequests   = "is required"
	msgRequestsNotArr = "must be a JSON array"
)

func badRequest(v ...core.Violation) *core.Error {
	return core.NewError(core.CodeInvalidInput, core.StageInput, msgBadRequest, v)
}

// validJSON accepts one JSON text in UTF-8. encoding/json lets invalid
// UTF-8 through inside strings and replaces it when decoding; refusing it
// here means every reader of the body sees the same names.
func validJSON(body []byte) bool { return utf8.Valid(body) && json.Valid(body) }

// isNull reports whether a raw value is the JSON null literal.
func isNull(val []byte) bool { return string(val) == "null" }

// checkName validates a raw capability member and returns its value.
func checkName(val []byte, path string, vs []core.Violation) (string, []core.Violation) {
	if len(val) == 0 || val[0] != '"' {
		return "", append(vs, core.Violation{Path: path, Message: msgNeedName})
	}
	name := unquote(val)
	if name == "" {
		return "", append(vs, core.Violation{Path: path, Message: msgNeedName})
	}
	return name, vs
}

// checkArguments validates a raw arguments member. Absent and null
// arguments both mean an empty object to the executor.
func checkArguments(val []byte, path string, vs []core.Violation) ([]byte, []core.Violation) {
	if isNull(val) {
		return nil, vs
	}
	if val[0] != '{' {
		return nil, append(vs, core.Violation{Path: path, Message: msgArgsNotObject})
	}
	return val, vs
}

// parseExecute reads {"capability": name, "arguments": {...}}. The
// returned arguments alias body.
func parseExecute(body []byte) (name string, args []byte, err *core.Error) {
	if !validJSON(body) {
		return "", nil, badRequest(core.Violation{Message: msgNotJSON})
	}
	sc, ok := newObjectScanner(body)
	if !ok {
		return "", nil, badRequest(core.Violation{Message: msgNotObject})
	}
	var (
		vs      []core.Violation
		hasName bool
	)
	for {
		key, val, dup, more := sc.next()
		if !more {
			break
		}
		switch {
		case dup:
			vs = append(vs, core.Violation{Path: pointer("", string(key)), Message: msgDuplicateKey})
		case string(key) == "capability":
			hasName = true
			name, vs = checkName(val, "/capability", vs)
		case string(key) == "arguments":
			args, vs = checkArguments(val, "/arguments", vs)
		default:
			vs = append(vs, core.Violation{Path: pointer("", string(key)), Message: msgUnknownMember})
		}
	}
	if !hasName {
		vs = append(vs, core.Violation{Path: "/capability", Message: msgNeedName})
	}
	if len(vs) > 0 {
		return "", nil, badRequest(vs...)
	}
	return name, args, nil
}

// parseBatch reads {"requests": [{"id"?, "capability", "arguments"?}, ...]}.
// A missing id becomes the item's index. The item count is checked before
// the items are, so an oversized batch costs one scan and a short answer.
func parseBatch(body []byte, maxBatch int) ([]core.BatchCall, *core.Error) {
	if !validJSON(body) {
		return nil, badRequest(core.Violation{Message: msgNotJSON})
	}
	sc, ok := newObjectScanner(body)
	if !ok {
		return nil, badRequest(core.Violation{Message: msgNotObject})
	}
	var (
		vs          []core.Violation
		items       []byte
		hasRequests bool
	)
	for {
		key, val, dup, more := sc.next()
		if !more {
			break
		}
		switch {
		case dup:
			vs = append(vs, core.Violation{Path: pointer("", string(key)), Message: msgDuplicateKey})
		case string(key) == "requests":
			hasRequests = true
			if val[0] != '[' {
				vs = append(vs, core.Violation{Path: "/requests", Message: msgRequestsNotArr})
			} else {
				items = val
			}
		default:
			vs = append(vs, core.Violation{Path: pointer("", string(key)), Message: msgUnknownMember})
		}
	}
	if !hasRequests {
		vs = append(vs, core.Violation{Path: "/requests", Message: msgNeedRequests})
	}
	if len(vs) > 0 {
		return nil, badRequest(vs...)
	}
	if n := countItems(items); n == 0 || n > maxBatch {
		return nil, core.NewError(core.CodeInvalidInput, core.StageInput,
			"a batch holds 1 to "+strconv.Itoa(maxBatch)+" requests",
			[]core.Violation{{Path: "/requests", Message: "must hold 1 to " + strconv.Itoa(maxBatch) + " items"}})
	}
	calls, vs := parseBatchItems(items, vs)
	if len(vs) > 0 {
		return nil, badRequest(vs...)
	}
	return calls, nil
}

// countItems counts the elements of a raw JSON array.
func countItems(arr []byte) int {
	n := 0
	for i := skipSpace(arr, 1); i < len(arr) && arr[i] != ']'; n++ {
		i = skipSpace(arr, valueEnd(arr, i))
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
	return n
}

func parseBatchItems(arr []byte, vs []core.Violation) ([]core.BatchCall, []core.Violation) {
	calls := make([]core.BatchCall, 0, countItems(arr))
	i := skipSpace(arr, 1)
	for index := 0; i < len(arr) && arr[i] != ']'; index++ {
		end := valueEnd(arr, i)
		item := arr[i:end]
		base := "/requests/" + strconv.Itoa(index)
		call := core.BatchCall{ID: strconv.Itoa(index)}
		if sc, ok := newObjectScanner(item); !ok {
			vs = append(vs, core.Violation{Path: base, Message: msgNotObject})
		} else {
			hasName := false
			for {
				key, val, dup, more := sc.next()
				if !more {
					break
				}
				switch {
				case dup:
					vs = append(vs, core.Violation{Path: pointer(base, string(key)), Message: msgDuplicateKey})
				case string(key) == "id":
					if val[0] != '"' {
						vs = append(vs, core.Violation{Path: base + "/id", Message: msgIDNotString})
					} else {
						call.ID = unquote(val)
					}
				case string(key) == "capability":
					hasName = true
					call.Capability, vs = checkName(val, base+"/capability", vs)
				case string(key) == "arguments":
					call.Arguments, vs = checkArguments(val, base+"/arguments", vs)
				default:
					vs = append(vs, core.Violation{Path: pointer(base, string(key)), Message: msgUnknownMember})
				}
			}
			if !hasName {
				vs = append(vs, core.Violation{Path: base + "/capability", Message: msgNeedName})
			}
		}
		calls = append(calls, call)
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
	return calls, vs
}
