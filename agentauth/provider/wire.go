package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/agentcap/agentcap"
)

// maxBodyBytes bounds the body of every provider request. Registration
// bodies are small JSON documents; a megabyte leaves room for long
// constraint lists without letting a caller make the server buffer more.
const maxBodyBytes = 1 << 20

func badRequest(msg string) *agentcap.Error {
	return agentcap.NewError(agentcap.CodeInvalidRequest, msg)
}

func internalError(cause error) *agentcap.Error {
	return agentcap.NewError(agentcap.CodeInternalError, "internal error").WithCause(cause)
}

// writeJSON answers status with v encoded as JSON. Provider answers are
// about one agent at one moment, so no cache may keep them.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	body, err := json.Marshal(v)
	if err != nil {
		_ = agentcap.WriteError(w, internalError(err))
		return
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// A write error means the client is gone; there is nobody to tell.
	_, _ = w.Write(append(body, '\n'))
}

// writeError answers err in the protocol's envelope, with the kit's one
// writer (agentcap.WriteError): only an *agentcap.Error speaks to the
// caller; anything else is a redacted 500. A 401 carries the AgentAuth
// challenge.
func (p *Provider) writeError(w http.ResponseWriter, r *http.Request, err error) {
	p.writeErrorWith(w, r, err, p.challenge)
}

// writeErrorWith is writeError with the WWW-Authenticate value of a 401;
// "" sends none (the user API authenticates users, not agents).
func (p *Provider) writeErrorWith(w http.ResponseWriter, r *http.Request, err error, challenge string) {
	e := agentcap.Public(err)
	if e.HTTPStatus() >= 500 {
		p.logger.ErrorContext(r.Context(), "agentauth/provider: request failed",
			"path", r.URL.Path, "code", string(e.Code), "error", err.Error())
	}
	var challenges []string
	if challenge != "" {
		challenges = []string{challenge}
	}
	if derr := agentcap.WriteError(w, e, challenges...); derr != nil {
		p.logger.ErrorContext(r.Context(), "agentauth/provider: dropping error members that cannot be encoded",
			"path", r.URL.Path, "error", derr.Error())
	}
}

// readObject reads a JSON object body into its members. Member names are
// kept exactly as sent: decoding into a struct would match "Agent_ID" to
// agent_id, and two spellings of one member could then mean two things
// to two readers.
func readObject(r *http.Request) (map[string]json.RawMessage, error) {
	if r.Body == nil {
		return nil, badRequest("the request needs a JSON object body")
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, badRequest("the request body could not be read")
	}
	if len(data) > maxBodyBytes {
		return nil, agentcap.NewError(agentcap.CodeRequestTooLarge, "the request body is too large")
	}
	return parseObject(data)
}

// parseObject parses one JSON object, refusing duplicate member names and
// invalid UTF-8, which different JSON readers resolve differently.
func parseObject(data []byte) (map[string]json.RawMessage, error) {
	if !utf8.Valid(data) {
		return nil, badRequest("the request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, badRequest("the request body must be a JSON object")
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, badRequest("the request body is not valid JSON")
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, badRequest("the request body is not valid JSON")
		}
		if _, dup := out[name]; dup {
			return nil, badRequest(fmt.Sprintf("member %q appears twice", name))
		}
		out[name] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, badRequest("the request body is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badRequest("the request body has data after the JSON object")
	}
	return out, nil
}

// optString reads an optional string member; null counts as absent.
func optString(m map[string]json.RawMessage, name string) (string, error) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", badRequest(fmt.Sprintf("%s must be a string", name))
	}
	return s, nil
}

// reqString reads a required, non-empty string member.
func reqString(m map[string]json.RawMessage, name string) (string, error) {
	s, err := optString(m, name)
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", badRequest(fmt.Sprintf("%s is required", name))
	}
	return s, nil
}

// displayText bounds attacker-supplied display text (names, reasons,
// binding messages) before it is stored: approval screens show it, and a
// page of text there is an attack on the reader (protocol §8.10).
func displayText(s string, limit int) string {
	out := make([]rune, 0, min(len(s), limit))
	for _, r := range s {
		if len(out) == limit {
			break
		}
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			r = ' '
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			// Control and bidirectional-override characters can
			// make displayed text read differently from what it is.
			continue
		}
		out = append(out, r)
	}
	return string(out)
}
