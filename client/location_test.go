package client_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
)

// fakeLocation is the default location of a fakeProvider: a capability
// location on net/http alone, so that the client's tests need no server
// package. It verifies agent JWTs with the keys the provider registered
// (type, signature, audience, capabilities claim), refuses agents that
// are not active and calls without an active grant, checks grants'
// constraints (exact values and {"max": n}), refuses unknown argument
// fields, asks for and spends confirmation tokens, and runs the
// capability's handler. It serves execute, batch-execute and preview.
type fakeLocation struct {
	p   *fakeProvider
	srv *httptest.Server
	// URL is the server's base URL.
	URL string

	mu   sync.Mutex
	caps map[string]fakeCapability
	// now is the clock of confirmation tokens.
	now    func() time.Time
	tokens map[string]*fakeToken
	issued int
}

// fakeCapability is a capability of a fakeLocation.
type fakeCapability struct {
	// fields are the argument fields it takes; any other is refused.
	fields []string
	// run answers a call with its data or an *agentcap.Error.
	run func(agentID string, args json.RawMessage) (any, error)
	// preview, when set, answers a preview of a call.
	preview func(args json.RawMessage) any
	// confirm makes every call need a confirmation token.
	confirm bool
}

// fakeToken is a confirmation token the location issued.
type fakeToken struct {
	agentID, capability, args string
	expires                   time.Time
	used                      bool
}

// confirmationTTL is the lifetime of the location's confirmation tokens.
const confirmationTTL = time.Minute

func newFakeLocation(t testing.TB, p *fakeProvider) *fakeLocation {
	t.Helper()
	l := &fakeLocation{p: p, now: time.Now, tokens: map[string]*fakeToken{}, caps: map[string]fakeCapability{
		"echo": {fields: []string{"message"}, run: func(_ string, args json.RawMessage) (any, error) {
			var in struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal(args, &in)
			return in, nil
		}},
		"transfer": {fields: []string{"amount", "currency"}, run: func(string, json.RawMessage) (any, error) {
			return map[string]bool{"ok": true}, nil
		}},
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /capability/execute", l.execute)
	mux.HandleFunc("POST /capability/preview", l.preview)
	mux.HandleFunc("POST /capability/batch-execute", l.batch)
	l.srv = httptest.NewServer(mux)
	l.URL = l.srv.URL
	t.Cleanup(l.srv.Close)
	return l
}

// Audience is the location's execute URL: the provider's default
// location, and the aud of the tokens it takes.
func (l *fakeLocation) Audience() string { return l.URL + "/capability/execute" }

// handle adds a capability, or replaces one.
func (l *fakeLocation) handle(name string, c fakeCapability) {
	l.mu.Lock()
	l.caps[name] = c
	l.mu.Unlock()
}

// setClock makes the location's confirmation tokens age by now.
func (l *fakeLocation) setClock(now func() time.Time) {
	l.mu.Lock()
	l.now = now
	l.mu.Unlock()
}

// caller is what a verified token says.
type caller struct {
	agentID      string
	capabilities []string
	// claimed is whether the token had a capabilities claim.
	claimed bool
	grants  []client.Grant
}

// authenticate verifies the request's agent JWT and the agent's state.
func (l *fakeLocation) authenticate(r *http.Request) (*caller, error) {
	c, jws, err := l.p.claims(r, agentcap.TypeAgentJWT, l.Audience())
	if err != nil {
		return nil, agentcap.NewError(agentcap.CodeInvalidJWT, err.Error())
	}
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	a := l.p.agents[fmt.Sprint(c["sub"])]
	if a == nil {
		return nil, agentcap.NewError(agentcap.CodeInvalidJWT, "unknown agent")
	}
	if _, err := jws.Verify(a.key); err != nil {
		return nil, agentcap.NewError(agentcap.CodeInvalidJWT, err.Error())
	}
	switch a.status {
	case agentcap.StatusActive:
	case agentcap.StatusRevoked:
		return nil, agentcap.NewError(agentcap.CodeAgentRevoked, "the agent was revoked")
	case agentcap.StatusPending:
		return nil, agentcap.NewError(agentcap.CodeAgentPending, "the agent is not approved yet")
	default:
		return nil, agentcap.NewError(agentcap.CodeAgentRejected, "the agent is "+a.status)
	}
	cl := &caller{agentID: a.id, grants: slices.Clone(a.grants)}
	if raw, ok := c["capabilities"].([]any); ok {
		cl.claimed = true
		for _, v := range raw {
			cl.capabilities = append(cl.capabilities, fmt.Sprint(v))
		}
	}
	return cl, nil
}

// request is one call: an execute body or a batch item.
type request struct {
	ID                string          `json:"id"`
	Capability        string          `json:"capability"`
	Arguments         json.RawMessage `json:"arguments"`
	ConfirmationToken string          `json:"confirmation_token"`
}

// check runs the checks of a call before its handler: the capability, the
// token's claim, the grant and its constraints, the argument fields. It
// returns the capability and the arguments as a compact object.
func (l *fakeLocation) check(cl *caller, rq request) (fakeCapability, string, error) {
	l.mu.Lock()
	c, ok := l.caps[rq.Capability]
	l.mu.Unlock()
	if !ok {
		return c, "", agentcap.Errorf(agentcap.CodeCapabilityNotFound, "no capability %q", rq.Capability)
	}
	if cl.claimed && !slices.Contains(cl.capabilities, rq.Capability) {
		return c, "", agentcap.NewError(agentcap.CodeCapabilityNotGranted, "the token does not name "+rq.Capability)
	}
	i := slices.IndexFunc(cl.grants, func(g client.Grant) bool {
		return g.Capability == rq.Capability && g.Status == agentcap.StatusActive
	})
	if i < 0 {
		return c, "", agentcap.NewError(agentcap.CodeCapabilityNotGranted, rq.Capability+" is not granted")
	}
	raw := rq.Arguments
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil {
		return c, "", agentcap.NewError(agentcap.CodeInvalidRequest, "the arguments are not an object")
	}
	var violations []agentcap.ConstraintViolation
	for field, constraint := range cl.grants[i].Constraints {
		if !satisfies(constraint, args[field]) {
			actual := args[field]
			if actual == nil {
				actual = json.RawMessage("null")
			}
			violations = append(violations, agentcap.ConstraintViolation{Field: field, Constraint: constraint, Actual: compact(actual)})
		}
	}
	if len(violations) > 0 {
		return c, "", agentcap.NewError(agentcap.CodeConstraintViolated, "the arguments are outside the grant").With("violations", violations)
	}
	var details []agentcap.Violation
	for field := range args {
		if !slices.Contains(c.fields, field) {
			details = append(details, agentcap.Violation{Path: "/" + field, Message: "unknown field"})
		}
	}
	if len(details) > 0 {
		e := agentcap.NewError(agentcap.CodeInvalidRequest, "the arguments do not fit the input schema")
		e.Details = details
		return c, "", e
	}
	return c, string(compact(raw)), nil
}

// satisfies reports whether an argument meets a granted constraint: an
// exact value, or {"max": n}.
func satisfies(constraint, actual json.RawMessage) bool {
	var op struct {
		Max *float64 `json:"max"`
	}
	if json.Unmarshal(constraint, &op) == nil && op.Max != nil {
		var n float64
		return json.Unmarshal(actual, &n) == nil && n <= *op.Max
	}
	return actual != nil && bytes.Equal(compact(constraint), compact(actual))
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// confirmation issues a token for a call, as {"token", "expires_at"}.
func (l *fakeLocation) confirmation(agentID, capability, args string) map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.issued++
	tok := "cfm_" + strconv.Itoa(l.issued)
	exp := l.now().Add(confirmationTTL)
	l.tokens[tok] = &fakeToken{agentID: agentID, capability: capability, args: args, expires: exp}
	return map[string]string{"token": tok, "expires_at": exp.UTC().Format(time.RFC3339)}
}

// spend consumes the token of a call that needs one. Without a token,
// the call fails with confirmation_required, carrying the preview and a
// fresh token.
func (l *fakeLocation) spend(cl *caller, c fakeCapability, rq request, args string) error {
	if rq.ConfirmationToken == "" {
		e := agentcap.NewError(agentcap.CodeConfirmationRequired, "this call needs a confirmation").
			With("confirmation", l.confirmation(cl.agentID, rq.Capability, args))
		if c.preview != nil {
			e = e.With("preview", c.preview(json.RawMessage(args)))
		}
		return e
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	tok := l.tokens[rq.ConfirmationToken]
	switch {
	case tok == nil || tok.agentID != cl.agentID:
		return agentcap.NewError(agentcap.CodeInvalidConfirmation, "unknown confirmation token")
	case tok.used:
		return agentcap.NewError(agentcap.CodeConfirmationUsed, "the token was used")
	case !l.now().Before(tok.expires):
		return agentcap.NewError(agentcap.CodeConfirmationExpired, "the token expired")
	case tok.capability != rq.Capability || tok.args != args:
		return agentcap.NewError(agentcap.CodeConfirmationMismatch, "the token confirms another call")
	}
	tok.used = true
	return nil
}

// call runs one call after the caller was authenticated.
func (l *fakeLocation) call(cl *caller, rq request) (any, error) {
	c, args, err := l.check(cl, rq)
	if err != nil {
		return nil, err
	}
	if c.confirm {
		if err := l.spend(cl, c, rq, args); err != nil {
			return nil, err
		}
	}
	return c.run(cl.agentID, json.RawMessage(args))
}

func (l *fakeLocation) execute(w http.ResponseWriter, r *http.Request) {
	cl, err := l.authenticate(r)
	if err != nil {
		_ = agentcap.WriteError(w, err)
		return
	}
	var rq request
	if err := json.NewDecoder(r.Body).Decode(&rq); err != nil {
		_ = agentcap.WriteError(w, agentcap.NewError(agentcap.CodeInvalidRequest, err.Error()))
		return
	}
	data, err := l.call(cl, rq)
	if err != nil {
		_ = agentcap.WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data})
}

func (l *fakeLocation) preview(w http.ResponseWriter, r *http.Request) {
	cl, err := l.authenticate(r)
	if err != nil {
		_ = agentcap.WriteError(w, err)
		return
	}
	var rq request
	if err := json.NewDecoder(r.Body).Decode(&rq); err != nil {
		_ = agentcap.WriteError(w, agentcap.NewError(agentcap.CodeInvalidRequest, err.Error()))
		return
	}
	c, args, err := l.check(cl, rq)
	if err == nil && c.preview == nil {
		err = agentcap.NewError(agentcap.CodePreviewNotSupported, rq.Capability+" has no preview")
	}
	if err != nil {
		_ = agentcap.WriteError(w, err)
		return
	}
	ans := map[string]any{"preview": c.preview(json.RawMessage(args))}
	if c.confirm {
		ans["confirmation"] = l.confirmation(cl.agentID, rq.Capability, args)
	}
	writeJSON(w, http.StatusOK, ans)
}

func (l *fakeLocation) batch(w http.ResponseWriter, r *http.Request) {
	cl, err := l.authenticate(r)
	if err != nil {
		_ = agentcap.WriteError(w, err)
		return
	}
	var body struct {
		Requests []request `json:"requests"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		_ = agentcap.WriteError(w, agentcap.NewError(agentcap.CodeInvalidRequest, err.Error()))
		return
	}
	responses := make([]map[string]any, len(body.Requests))
	for i, rq := range body.Requests {
		data, err := l.call(cl, rq)
		if err != nil {
			e := agentcap.Public(err)
			env, dropped := agentcap.AppendError(nil, e, agentcap.KeyCode)
			if dropped != nil {
				l.p.t.Errorf("batch item %s: %v", rq.ID, dropped)
			}
			responses[i] = map[string]any{"id": rq.ID, "status": "failed", "error": json.RawMessage(env)}
			continue
		}
		responses[i] = map[string]any{"id": rq.ID, "status": "completed", "data": data}
	}
	writeJSON(w, http.StatusOK, map[string]any{"responses": responses})
}
