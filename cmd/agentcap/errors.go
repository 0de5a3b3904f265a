package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentcap/agentcap/client"
)

// printError prints a failed command's error on stderr: the error, and
// every member of the provider's error envelope, so that nothing the
// server said is lost (the field errors of invalid_request, the
// missing_constraints of capability_not_granted, ...). With --json it is
// one JSON object: the envelope's members, with the HTTP status and,
// when the command said more than the server, its words as "detail".
func (c *cli) printError(err error) {
	var e *client.Error
	var cr *client.ConfirmationRequired
	var he hintedError
	isConfirmation := errors.As(err, &cr)
	if c.json {
		out := map[string]any{"error": err.Error()}
		if errors.As(err, &e) {
			out = map[string]any{"error": e.Code, "status": e.Status, "message": e.Message}
			if len(e.Violations) > 0 {
				out["violations"] = e.Violations
			}
			if err.Error() != e.Error() {
				// The command said more than the server.
				out["detail"] = err.Error()
			}
		}
		if isConfirmation {
			// The preview and the confirmation are members of the
			// envelope.
			out["capability"] = cr.Capability
		}
		if errors.As(err, &he) {
			out["hint"] = he.hint
		}
		if e != nil {
			addMembers(out, extraMembers(e))
		}
		_ = json.NewEncoder(c.stderr).Encode(out)
		return
	}
	defer func() {
		if errors.As(err, &he) {
			fmt.Fprintf(c.stderr, "%s\n", he.hint)
		}
	}()
	fmt.Fprintf(c.stderr, "agentcap: %v\n", err)
	if !errors.As(err, &e) {
		return
	}
	for _, v := range e.Violations {
		fmt.Fprintf(c.stderr, "  violation: %s must satisfy %s, got %s\n", v.Field, v.Constraint, v.Actual)
	}
	extra := extraMembers(e)
	if isConfirmation {
		// The command showed the preview; the token is the one --yes
		// would have sent.
		delete(extra, "preview")
		delete(extra, "confirmation")
	}
	for _, name := range slices.Sorted(maps.Keys(extra)) {
		fmt.Fprint(c.stderr, describeMember(name, extra[name]))
	}
}

// extraMembers returns the members of e's error object beyond those
// client.Error holds in its fields: the code ("error" or "code"), the
// message and the constraint violations.
//
// It reads them from e.Body rather than e.Fields: Fields leaves out every
// member the client interprets ("error", "code", "message", "errors",
// "violations", "retry_after"), and the raw form of those is printed
// whenever it says more than the interpreted one (field errors with
// members beyond path and message, a retry_after, an "error" that is not
// the code, violations of another shape). Details and RetryAfter keep
// only what the client understood of them.
func extraMembers(e *client.Error) map[string]json.RawMessage {
	var members map[string]json.RawMessage
	if json.Unmarshal(e.Body, &members) != nil {
		return nil
	}
	for name, v := range members {
		var s string
		switch name {
		case "error", "code":
			if json.Unmarshal(v, &s) == nil && s == string(e.Code) {
				delete(members, name)
			}
		case "message":
			if json.Unmarshal(v, &s) == nil && s == e.Message {
				delete(members, name)
			}
		case "violations":
			if len(e.Violations) > 0 {
				delete(members, name)
			}
		}
	}
	return members
}

// addMembers adds envelope members to a JSON error object. A member whose
// name the object uses already (a "status" of the envelope's own, say)
// is added as "envelope_NAME", so that it is not lost.
func addMembers(out map[string]any, members map[string]json.RawMessage) {
	for name, v := range members {
		key := name
		for {
			if _, taken := out[key]; !taken {
				break
			}
			key = "envelope_" + key
		}
		out[key] = v
	}
}

// describeMember renders one envelope member as indented lines: the
// entries of "errors" (invalid_request's list of what is wrong with the
// arguments, and where, as a JSON Pointer into them) one a line, as
// "path: message"; any other member as "name: value", with a string as
// it is and anything else as JSON.
func describeMember(name string, v json.RawMessage) string {
	var b strings.Builder
	if entries, ok := fieldErrors(v); ok && name == "errors" {
		for _, fe := range entries {
			path := fe[0]
			if path == "" {
				path = "(the arguments)"
			}
			fmt.Fprintf(&b, "  %s: %s\n", oneLine(path), oneLine(fe[1]))
		}
		return b.String()
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		fmt.Fprintf(&b, "  %s: %s\n", oneLine(name), oneLine(s))
		return b.String()
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, v); err != nil {
		// Unmarshal read the member, so it is JSON; keep it whole anyway.
		compact.Reset()
		compact.Write(v)
	}
	fmt.Fprintf(&b, "  %s: %s\n", oneLine(name), escapeControls(compact.String()))
	return b.String()
}

// isControl reports the characters a terminal may act on: C0 (but for
// the newline, which the caller handles), DEL and C1.
func isControl(r rune) bool { return r < 0x20 || r >= 0x7f && r <= 0x9f }

// escapeControls writes the control characters JSON strings may hold
// as they are (DEL, C1) as \u escapes, which JSON reads alike.
func escapeControls(s string) string {
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fieldErrors reads a list of {path, message} objects with nothing else
// in them, so that the short rendering leaves nothing out.
func fieldErrors(v json.RawMessage) ([][2]string, bool) {
	var entries []map[string]json.RawMessage
	if json.Unmarshal(v, &entries) != nil || len(entries) == 0 {
		return nil, false
	}
	out := make([][2]string, len(entries))
	for i, m := range entries {
		if len(m) != 2 || json.Unmarshal(m["path"], &out[i][0]) != nil || json.Unmarshal(m["message"], &out[i][1]) != nil {
			return nil, false
		}
	}
	return out, true
}

// oneLine keeps a server's text on its line: control characters, which
// could break the layout or move the terminal's cursor, become spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return ' '
		}
		return r
	}, s)
}
