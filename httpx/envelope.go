package httpx

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// The envelope parsers below read only the top level of a request body,
// and read it once: the scanner checks the grammar of every byte (UTF-8 in
// strings included) while it finds where each member starts and ends, so a
// malformed body, arguments included, is refused before anything else is
// said about it. The arguments stay raw: the executor parses them, once,
// strictly.

// maxDepth is encoding/json's nesting limit. The scanner keeps it so that
// it accepts exactly the bodies that encoding/json.Valid accepts.
const maxDepth = jsonvalue.ScanMaxDepth

// objectScanner walks the members of one JSON object and checks the
// syntax of everything it passes, up to and including the whitespace
// after the object's closing brace.
type objectScanner struct {
	data []byte
	i    int
	// first is true until the first member has been read.
	first bool
	// bad reports a syntax error; the walk stops there.
	bad bool
	// The keys read so far: the usual two or three in seen, which keeps
	// them off the heap, any further ones in more. A slice of seen kept in
	// the struct would point into the struct itself and move it to the
	// heap.
	seen  [4][]byte
	nseen int
	more  [][]byte
}

// newObjectScanner positions a scanner inside the object data holds. It
// reports false when the first byte after any whitespace does not open an
// object.
func newObjectScanner(data []byte) (objectScanner, bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return objectScanner{}, false
	}
	return objectScanner{data: data, i: i + 1, first: true}, true
}

// next returns the next member's unescaped key and raw value. The key
// aliases data unless it holds escapes, so comparing it allocates
// nothing. dup reports a key that appeared before in this object. At the
// end of the object, or at a syntax error, ok is false; bad tells which.
func (s *objectScanner) next() (key, val []byte, dup, ok bool) {
	if s.bad || s.i < 0 {
		return nil, nil, false, false
	}
	d := s.data
	i := skipSpace(d, s.i)
	if i < len(d) && d[i] == '}' && s.first {
		return s.close(i)
	}
	if !s.first {
		switch {
		case i < len(d) && d[i] == '}':
			return s.close(i)
		case i < len(d) && d[i] == ',':
			i = skipSpace(d, i+1)
		default:
			return s.fail()
		}
	}
	s.first = false
	if i >= len(d) || d[i] != '"' {
		return s.fail()
	}
	end, escaped := scanString(d, i)
	if end < 0 {
		return s.fail()
	}
	if escaped {
		key = []byte(unquote(d[i:end]))
	} else {
		key = d[i+1 : end-1]
	}
	i = skipSpace(d, end)
	if i >= len(d) || d[i] != ':' {
		return s.fail()
	}
	i = skipSpace(d, i+1)
	vend := scanValue(d, i, 1)
	if vend < 0 {
		return s.fail()
	}
	val = d[i:vend]
	s.i = vend
	for _, k := range s.seen[:s.nseen] {
		dup = dup || bytes.Equal(k, key)
	}
	for _, k := range s.more {
		dup = dup || bytes.Equal(k, key)
	}
	if s.nseen < len(s.seen) {
		s.seen[s.nseen] = key
		s.nseen++
	} else {
		s.more = append(s.more, key)
	}
	return key, val, dup, true
}

// close ends the walk at the closing brace at data[i]: only whitespace may
// follow it.
func (s *objectScanner) close(i int) (key, val []byte, dup, ok bool) {
	if skipSpace(s.data, i+1) != len(s.data) {
		return s.fail()
	}
	s.i = -1
	return nil, nil, false, false
}

func (s *objectScanner) fail() (key, val []byte, dup, ok bool) {
	s.bad = true
	return nil, nil, false, false
}

// isJSON reports whether data is exactly one JSON text, in UTF-8, with
// nothing but whitespace around it.
func isJSON(data []byte) bool {
	i := skipSpace(data, 0)
	end := scanValue(data, i, 0)
	return end >= 0 && skipSpace(data, end) == len(data)
}

// unquote decodes a JSON string token the scanner has checked.
func unquote(tok []byte) string {
	s, _ := jsonvalue.Unquote(tok)
	return s
}

// skipSpace, scanValue and scanString are the grammar of encoding/json,
// which jsonvalue keeps.
func skipSpace(data []byte, i int) int { return jsonvalue.SkipSpace(data, i) }

func scanValue(data []byte, i, depth int) int { return jsonvalue.ScanValue(data, i, depth) }

func scanString(data []byte, i int) (end int, escaped bool) { return jsonvalue.ScanString(data, i) }

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
	msgTooManyMembers = "the request object has too many members"
	msgNeedName       = "must be a non-empty string"
	msgArgsNotObject  = "must be a JSON object or null"
	msgIDNotString    = "must be a string"
	msgNeedRequests   = "is required"
	msgRequestsNotArr = "must be a JSON array"
)

func badRequest(v ...agentcap.Violation) *agentcap.Error {
	return &agentcap.Error{Code: agentcap.CodeInvalidRequest, Stage: agentcap.StageInput, Message: msgBadRequest, Details: v}
}

// notObject tells a body that is valid JSON but no object from one that
// is not JSON at all.
func notObject(body []byte) agentcap.Violation {
	if isJSON(body) {
		return agentcap.Violation{Message: msgNotObject}
	}
	return agentcap.Violation{Message: msgNotJSON}
}

// isNull reports whether a raw value is the JSON null literal.
func isNull(val []byte) bool { return string(val) == "null" }

// checkName validates a raw capability member and returns its value.
func checkName(val []byte, path string, vs []agentcap.Violation) (string, []agentcap.Violation) {
	if len(val) == 0 || val[0] != '"' {
		return "", append(vs, agentcap.Violation{Path: path, Message: msgNeedName})
	}
	name := unquote(val)
	if name == "" {
		return "", append(vs, agentcap.Violation{Path: path, Message: msgNeedName})
	}
	return name, vs
}

// checkArguments validates a raw arguments member. Absent and null
// arguments both mean an empty object to the executor.
func checkArguments(val []byte, path string, vs []agentcap.Violation) ([]byte, []agentcap.Violation) {
	if isNull(val) {
		return nil, vs
	}
	if val[0] != '{' {
		return nil, append(vs, agentcap.Violation{Path: path, Message: msgArgsNotObject})
	}
	return val, vs
}

// maxEnvelopeMembers bounds the members of a request object. A valid
// envelope has at most three; the bound keeps the duplicate-key check,
// which compares every key with those before it, from growing
// quadratically with a hostile body, and the answer short.
const maxEnvelopeMembers = 16

// parseExecute reads {"capability": name, "arguments": {...},
// "confirmation_token"?: token}. The returned arguments alias body.
func parseExecute(body []byte) (name string, args []byte, token string, err *agentcap.Error) {
	sc, ok := newObjectScanner(body)
	if !ok {
		return "", nil, "", badRequest(notObject(body))
	}
	var (
		vs      []agentcap.Violation
		hasName bool
	)
	for members := 0; ; members++ {
		key, val, dup, more := sc.next()
		if !more {
			break
		}
		if members == maxEnvelopeMembers {
			return "", nil, "", badRequest(agentcap.Violation{Message: msgTooManyMembers})
		}
		switch {
		case dup:
			vs = append(vs, agentcap.Violation{Path: pointer("", string(key)), Message: msgDuplicateKey})
		case string(key) == "capability":
			hasName = true
			name, vs = checkName(val, "/capability", vs)
		case string(key) == "arguments":
			args, vs = checkArguments(val, "/arguments", vs)
		case string(key) == "confirmation_token":
			token, vs = checkName(val, "/confirmation_token", vs)
		default:
			vs = append(vs, agentcap.Violation{Path: pointer("", string(key)), Message: msgUnknownMember})
		}
	}
	if sc.bad {
		return "", nil, "", badRequest(agentcap.Violation{Message: msgNotJSON})
	}
	if !hasName {
		vs = append(vs, agentcap.Violation{Path: "/capability", Message: msgNeedName})
	}
	if len(vs) > 0 {
		return "", nil, "", badRequest(vs...)
	}
	return name, args, token, nil
}

// parseBatch reads {"requests": [{"id"?, "capability", "arguments"?}, ...]}.
// A missing id becomes the item's index. The item count is checked before
// the items are, so an oversized batch costs one scan and a short answer.
func parseBatch(body []byte, maxBatch int) ([]core.BatchCall, *agentcap.Error) {
	sc, ok := newObjectScanner(body)
	if !ok {
		return nil, badRequest(notObject(body))
	}
	var (
		vs          []agentcap.Violation
		items       []byte
		hasRequests bool
	)
	for members := 0; ; members++ {
		key, val, dup, more := sc.next()
		if !more {
			break
		}
		if members == maxEnvelopeMembers {
			return nil, badRequest(agentcap.Violation{Message: msgTooManyMembers})
		}
		switch {
		case dup:
			vs = append(vs, agentcap.Violation{Path: pointer("", string(key)), Message: msgDuplicateKey})
		case string(key) == "requests":
			hasRequests = true
			if val[0] != '[' {
				vs = append(vs, agentcap.Violation{Path: "/requests", Message: msgRequestsNotArr})
			} else {
				items = val
			}
		default:
			vs = append(vs, agentcap.Violation{Path: pointer("", string(key)), Message: msgUnknownMember})
		}
	}
	if sc.bad {
		return nil, badRequest(agentcap.Violation{Message: msgNotJSON})
	}
	if !hasRequests {
		vs = append(vs, agentcap.Violation{Path: "/requests", Message: msgNeedRequests})
	}
	if len(vs) > 0 {
		return nil, badRequest(vs...)
	}
	if n := countItems(items); n == 0 || n > maxBatch {
		return nil, &agentcap.Error{Code: agentcap.CodeInvalidRequest, Stage: agentcap.StageInput,
			Message: "a batch holds 1 to " + strconv.Itoa(maxBatch) + " requests",
			Details: []agentcap.Violation{{Path: "/requests", Message: "must hold 1 to " + strconv.Itoa(maxBatch) + " items"}}}
	}
	calls, vs := parseBatchItems(items, vs)
	if len(vs) > 0 {
		return nil, badRequest(vs...)
	}
	return calls, nil
}

// countItems counts the elements of a raw JSON array that the envelope
// scanner has already checked.
func countItems(arr []byte) int {
	n := 0
	for i := skipSpace(arr, 1); i < len(arr) && arr[i] != ']'; n++ {
		i = skipSpace(arr, scanValue(arr, i, 0))
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
	return n
}

func parseBatchItems(arr []byte, vs []agentcap.Violation) ([]core.BatchCall, []agentcap.Violation) {
	calls := make([]core.BatchCall, 0, countItems(arr))
	i := skipSpace(arr, 1)
	for index := 0; i < len(arr) && arr[i] != ']'; index++ {
		end := scanValue(arr, i, 0)
		item := arr[i:end]
		base := "/requests/" + strconv.Itoa(index)
		call := core.BatchCall{ID: strconv.Itoa(index)}
		if sc, ok := newObjectScanner(item); !ok {
			vs = append(vs, agentcap.Violation{Path: base, Message: msgNotObject})
		} else {
			hasName := false
			for members := 0; ; members++ {
				key, val, dup, more := sc.next()
				if !more {
					break
				}
				if members == maxEnvelopeMembers {
					vs = append(vs, agentcap.Violation{Path: base, Message: msgTooManyMembers})
					break
				}
				switch {
				case dup:
					vs = append(vs, agentcap.Violation{Path: pointer(base, string(key)), Message: msgDuplicateKey})
				case string(key) == "id":
					if val[0] != '"' {
						vs = append(vs, agentcap.Violation{Path: base + "/id", Message: msgIDNotString})
					} else {
						call.ID = unquote(val)
					}
				case string(key) == "capability":
					hasName = true
					call.Capability, vs = checkName(val, base+"/capability", vs)
				case string(key) == "arguments":
					call.Arguments, vs = checkArguments(val, base+"/arguments", vs)
				case string(key) == "confirmation_token":
					call.ConfirmationToken, vs = checkName(val, base+"/confirmation_token", vs)
				default:
					vs = append(vs, agentcap.Violation{Path: pointer(base, string(key)), Message: msgUnknownMember})
				}
			}
			if !hasName {
				vs = append(vs, agentcap.Violation{Path: base + "/capability", Message: msgNeedName})
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
