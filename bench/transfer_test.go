package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

// The operation every contender serves: one money transfer, with the kind
// of constraints a real input carries (patterns, a bounded number, an
// enum), so that validation does real work.

type transferIn struct {
	From     string  `json:"from_account" pattern:"^acc_[a-z0-9]{3,32}$"`
	To       string  `json:"to_account" pattern:"^acc_[a-z0-9]{3,32}$"`
	Amount   float64 `json:"amount" exclusiveMinimum:"0" maximum:"1000000"`
	Currency string  `json:"currency" enum:"USD,EUR,GBP"`
}

type transferOut struct {
	ID       string  `json:"transfer_id" minLength:"1"`
	Status   string  `json:"status" enum:"accepted,rejected"`
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency" enum:"USD,EUR,GBP"`
}

// account is the application context: who the call acts for.
type account struct{ Owner string }

// transfer is the use case. Every contender calls this same function.
func transfer(_ context.Context, acct account, in transferIn) (transferOut, error) {
	status := "accepted"
	if in.From == in.To || acct.Owner == "" {
		status = "rejected"
	}
	return transferOut{ID: "tr_" + in.To[len("acc_"):], Status: status, Amount: in.Amount, Currency: in.Currency}, nil
}

const (
	token      = "bench-token"
	authHeader = "Bearer " + token
	routeExec  = "/capability/execute"
	maxBody    = 1 << 20
)

var (
	validBody = []byte(`{"capability":"transfer","arguments":{"from_account":"acc_alice","to_account":"acc_bob","amount":125.5,"currency":"EUR"}}`)
	validData = `{"data":{"transfer_id":"tr_bob","status":"accepted","amount":125.5,"currency":"EUR"}}`
)

var transferCap = core.MustDefine("transfer", "Move money between two accounts of the caller.", transfer)

// verifier is the trivial verifier of the mounts: one static bearer
// token. Every contender checks the same header the same way.
var verifier = auth.VerifierFunc(func(_ context.Context, req *auth.Request) (*auth.Identity, error) {
	tok, ok := strings.CutPrefix(req.Authorization, "Bearer ")
	if !ok {
		return nil, auth.ErrNoCredentials
	}
	if tok != token {
		return nil, errBadToken
	}
	return tokenIdentity, nil
})

// tokenIdentity is the caller the one token stands for. It is built once,
// as the token is known once: the other contenders spend nothing per
// request on who the caller is, and neither does the verifier.
var tokenIdentity = &auth.Identity{Subject: token}

// errBadToken answers a token that is not the bench token: 401
// invalid_jwt, the answer of a refused bearer token.
var errBadToken = agentcap.NewError(agentcap.CodeInvalidJWT, "the credentials are invalid")

// newMountHandler builds the agentcap handler the four mounts serve.
func newMountHandler(tb testing.TB) *httpx.Handler {
	tb.Helper()
	h, err := httpx.New(newMountHandlerExecutor(tb), httpx.Config{Verifier: verifier})
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// newMountHandlerExecutor is the executor behind every agentcap
// contender: the transfer, for the caller the verifier found.
func newMountHandlerExecutor(tb testing.TB) *core.Executor {
	tb.Helper()
	exec, err := core.NewExecutor(core.MustRegistry(transferCap),
		func(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (account, error) {
			return account{Owner: id.Subject}, nil
		}, core.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	return exec
}

// byHand is the operation as an application would write it without
// agentcap: encoding/json for the envelope, the same JSON Schemas the
// capability derives, compiled with santhosh-tekuri/jsonschema and used
// directly, encoding/json with unknown fields refused for the struct, and
// the output checked before it is sent. Each framework wraps execute in
// its own handler.
type byHand struct {
	in, out *jsonschema.Schema
}

func newByHand(tb testing.TB) *byHand {
	tb.Helper()
	def := transferCap.Definition()
	return &byHand{in: compileSchema(tb, def.InputSchema()), out: compileSchema(tb, def.OutputSchema())}
}

func compileSchema(tb testing.TB, doc []byte) *jsonschema.Schema {
	tb.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		tb.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem:///schema.json", v); err != nil {
		tb.Fatal(err)
	}
	s, err := c.Compile("mem:///schema.json")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// envelope is the execute request body.
type envelope struct {
	Capability string          `json:"capability"`
	Arguments  json.RawMessage `json:"arguments"`
}

// Canned error answers of the hand-written handlers.
var (
	handUnauthorized = []byte(`{"error":"authentication_required","message":"authentication is required"}` + "\n")
	handBadType      = []byte(`{"error":"unsupported_media_type","message":"the body must be JSON"}` + "\n")
	handBadRequest   = []byte(`{"error":"invalid_request","message":"the request is invalid"}` + "\n")
	handNotFound     = []byte(`{"error":"capability_not_found","message":"unknown capability"}` + "\n")
	handInternal     = []byte(`{"error":"internal_error","message":"internal error"}` + "\n")
)

// authorized is the hand-written twin of verifier.
func authorized(header string) (string, bool) {
	tok, ok := strings.CutPrefix(header, "Bearer ")
	return tok, ok && tok == token
}

// jsonContent accepts application/json with or without parameters.
func jsonContent(v string) bool {
	media, _, _ := strings.Cut(v, ";")
	return strings.EqualFold(strings.TrimSpace(media), "application/json")
}

// execute runs everything after authentication and the content type
// check, on a body already read, and returns the status and body to send.
func (h *byHand) execute(ctx context.Context, principal string, body []byte) (int, []byte) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return http.StatusBadRequest, handBadRequest
	}
	if env.Capability != "transfer" {
		return http.StatusNotFound, handNotFound
	}
	args := env.Arguments
	if len(args) == 0 {
		args = []byte("{}")
	}
	tree, err := decodeAny(args)
	if err != nil {
		return http.StatusBadRequest, handBadRequest
	}
	if err := h.in.Validate(tree); err != nil {
		return http.StatusBadRequest, handBadRequest
	}
	var in transferIn
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return http.StatusBadRequest, handBadRequest
	}
	out, err := transfer(ctx, account{Owner: principal}, in)
	if err != nil {
		return http.StatusInternalServerError, handInternal
	}
	data, err := json.Marshal(out)
	if err != nil {
		return http.StatusInternalServerError, handInternal
	}
	outTree, err := decodeAny(data)
	if err != nil {
		return http.StatusInternalServerError, handInternal
	}
	if err := h.out.Validate(outTree); err != nil {
		return http.StatusInternalServerError, handInternal
	}
	resp := make([]byte, 0, len(data)+len(`{"data":}`)+1)
	resp = append(resp, `{"data":`...)
	resp = append(resp, data...)
	return http.StatusOK, append(resp, '}', '\n')
}

// decodeAny decodes one JSON document for the schema library, keeping
// numbers exact.
func decodeAny(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON document")
	}
	return v, nil
}

// setJSONHeaders sets the headers every contender sends with an answer.
func setJSONHeaders(hd http.Header) {
	hd.Set("Content-Type", "application/json")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
}
