package mcpx_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/mcpx"
)

type payPreview struct {
	Amount       int `json:"amount"`
	BalanceAfter int `json:"balance_after"`
}

// confirmServer serves "pay", whose every call is confirmed and which has
// a preview, and "echo", which needs nothing; paid counts the payments
// made.
func confirmServer(t testing.TB, paid *atomic.Int32) *mcpx.Server {
	t.Helper()
	reg := core.MustRegistry(
		core.MustDefine("pay", "Pay an amount.",
			func(_ context.Context, _ app, in transferIn) (transferOut, error) {
				paid.Add(1)
				return transferOut{Status: "paid"}, nil
			},
			core.WithConfirmation(),
			core.WithPreview(func(_ context.Context, _ app, in transferIn) (payPreview, error) {
				return payPreview{Amount: in.Amount, BalanceAfter: 100 - in.Amount}, nil
			})),
		core.MustDefine("echo", "Say the message back.",
			func(_ context.Context, a app, in echoIn) (echoOut, error) {
				return echoOut{Message: in.Message, By: a.user}, nil
			}),
	)
	mgr, err := confirm.New(confirm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	exec, err := core.NewExecutor(reg, newApp, core.Config{Confirmation: core.ConfirmationConfig{Confirmer: mgr}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcpx.New(exec, mcpx.Config{
		// The bearer token names the user.
		Verifier: auth.VerifierFunc(func(_ context.Context, r *auth.Request) (*auth.Identity, error) {
			name, ok := auth.BearerToken(r.Authorization)
			if !ok || name == "" {
				return nil, auth.ErrNoCredentials
			}
			return person(name), nil
		}),
		Resource: "http://127.0.0.1/mcp",
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// elicitor answers confirmation requests with action and records them.
type elicitor struct {
	action string
	mu     sync.Mutex
	asked  []*mcp.ElicitParams
}

func (e *elicitor) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	e.mu.Lock()
	e.asked = append(e.asked, req.Params)
	e.mu.Unlock()
	return &mcp.ElicitResult{Action: e.action}, nil
}

func (e *elicitor) requests() []*mcp.ElicitParams {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*mcp.ElicitParams(nil), e.asked...)
}

// connectRun connects a client with opts to s over in-memory transports,
// for the caller id, asking for the protocol version (empty: the latest).
func connectRun(t *testing.T, s *mcpx.Server, id *auth.Identity, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, st, id) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ProtocolVersion; version != "" && got != version {
		t.Fatalf("protocol %s, want %s", got, version)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-done
	})
	return cs
}

// envelopeOf decodes an error result's envelope, checking that the text
// and _meta agree.
func envelopeOf(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	if !res.IsError {
		t.Fatalf("not an error result: %s", text(t, res))
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(text(t, res)), &env); err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(res.Meta[mcpx.MetaError])
	var fromMeta map[string]any
	if err := json.Unmarshal(meta, &fromMeta); err != nil || fromMeta["error"] != env["error"] {
		t.Errorf("_meta %s does not match the text %s", meta, text(t, res))
	}
	return env
}

func callPay(t *testing.T, cs *mcp.ClientSession, amount int, meta mcp.Meta) (*mcp.CallToolResult, error) {
	t.Helper()
	return cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "pay", Arguments: map[string]any{"amount": amount}, Meta: meta})
}

// TestConfirmationWithoutElicitation: a client that cannot elicit gets
// an error result carrying the preview and a token, and confirms the
// call by sending the token back in _meta.
func TestConfirmationWithoutElicitation(t *testing.T) {
	var paid atomic.Int32
	s := confirmServer(t, &paid)
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run("protocol "+version, func(t *testing.T) {
			paid.Store(0)
			cs := connectRun(t, s, person("alice"), version, nil)
			res, err := callPay(t, cs, 30, nil)
			if err != nil {
				t.Fatal(err)
			}
			env := envelopeOf(t, res)
			preview, _ := env["preview"].(map[string]any)
			conf, _ := env["confirmation"].(map[string]any)
			token, _ := conf["token"].(string)
			if env["error"] != "confirmation_required" || preview["balance_after"] != 70.0 || token == "" || conf["expires_at"] == nil {
				t.Fatalf("envelope %v", env)
			}
			if paid.Load() != 0 {
				t.Fatal("paid without a confirmation")
			}
			for _, x := range []struct {
				name   string
				amount int
				token  any
				code   string
			}{
				{"another amount", 31, token, "confirmation_mismatch"},
				{"forged", 30, "cfm_" + strings.Repeat("x", 43), "invalid_confirmation"},
				{"confirmed", 30, token, ""},
				{"again", 30, token, "confirmation_used"},
			} {
				res, err := callPay(t, cs, x.amount, mcp.Meta{mcpx.MetaConfirmationToken: x.token})
				if err != nil {
					t.Fatalf("%s: %v", x.name, err)
				}
				if x.code == "" {
					if res.IsError || !strings.Contains(text(t, res), `"paid"`) {
						t.Errorf("%s: %s", x.name, text(t, res))
					}
					continue
				}
				if env := envelopeOf(t, res); env["error"] != x.code {
					t.Errorf("%s: %v, want %s", x.name, env, x.code)
				}
			}
			if paid.Load() != 1 {
				t.Errorf("%d payments, want 1", paid.Load())
			}
			// A token that is not a string is a malformed call.
			_, err = callPay(t, cs, 30, mcp.Meta{mcpx.MetaConfirmationToken: 7})
			if !isProtocolError(err, jsonrpc.CodeInvalidParams) {
				t.Errorf("a token that is a number: %v", err)
			}
			// A capability that needs no confirmation ignores a token.
			res, err = cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"},
				Meta: mcp.Meta{mcpx.MetaConfirmationToken: "cfm_whatever"}})
			if err != nil || res.IsError {
				t.Errorf("echo with a token: %v %v", err, res)
			}
		})
	}
}

// TestConfirmationByElicitation: a client that can elicit is asked for
// its user's confirmation, with the call and its preview, on protocol
// 2026-07-28 (the result asks for input and the client retries) and on
// older ones (the server sends the request during the call); accepting
// runs the call, declining or dismissing refuses it.
func TestConfirmationByElicitation(t *testing.T) {
	var paid atomic.Int32
	s := confirmServer(t, &paid)
	for _, version := range []string{"2026-07-28", "2025-11-25", "2025-06-18"} {
		for _, action := range []string{"accept", "decline", "cancel"} {
			t.Run(action+" on protocol "+version, func(t *testing.T) {
				paid.Store(0)
				e := &elicitor{action: action}
				cs := connectRun(t, s, person("alice"), version, &mcp.ClientOptions{ElicitationHandler: e.handle})
				res, err := callPay(t, cs, 30, nil)
				if err != nil {
					t.Fatal(err)
				}
				asked := e.requests()
				if len(asked) != 1 {
					t.Fatalf("%d confirmation requests, want 1", len(asked))
				}
				p := asked[0]
				for _, want := range []string{"Pay", "Pay an amount.", `{"amount":30}`, `"balance_after":70`} {
					if !strings.Contains(p.Message, want) {
						t.Errorf("the message %q lacks %q", p.Message, want)
					}
				}
				preview, _ := json.Marshal(p.Meta["agentcap/preview"])
				if p.Meta["agentcap/capability"] != "pay" || string(preview) != `{"amount":30,"balance_after":70}` {
					t.Errorf("confirmation request _meta %v", p.Meta)
				}
				if action == "accept" {
					if res.IsError || !strings.Contains(text(t, res), `"paid"`) || paid.Load() != 1 {
						t.Errorf("accepted: %s (%d payments)", text(t, res), paid.Load())
					}
					return
				}
				env := envelopeOf(t, res)
				if env["error"] != string(agentcap.CodeConfirmationDeclined) || env["action"] != action || paid.Load() != 0 {
					t.Errorf("%s: %v (%d payments)", action, env, paid.Load())
				}
			})
		}
	}
	// Each call is confirmed on its own: a second call asks again.
	e := &elicitor{action: "accept"}
	cs := connectRun(t, s, person("bob"), "", &mcp.ClientOptions{ElicitationHandler: e.handle})
	for range 2 {
		if res, err := callPay(t, cs, 5, nil); err != nil || res.IsError {
			t.Fatalf("%v %v", err, res)
		}
	}
	if n := len(e.requests()); n != 2 {
		t.Errorf("%d confirmation requests for two calls", n)
	}
}

// TestConfirmationMarksTools: tools/list marks the tools whose calls must
// be confirmed, and only those.
func TestConfirmationMarksTools(t *testing.T) {
	var paid atomic.Int32
	cs := connectRun(t, confirmServer(t, &paid), person("alice"), "", nil)
	res, err := cs.ListTools(timeout(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	marked := map[string]any{}
	for _, tl := range res.Tools {
		marked[tl.Name] = tl.Meta[agentcap.MCPMetaRequiresConfirmation]
	}
	if marked["pay"] != true || marked["echo"] != nil {
		t.Errorf("marks %v", marked)
	}
}

// TestConfirmationOverHTTP confirms a call by elicitation and another by
// token over Streamable HTTP.
func TestConfirmationOverHTTP(t *testing.T) {
	var paid atomic.Int32
	s := confirmServer(t, &paid)
	ln, base := listen(t)
	routers[0].serve(t, ln, s)
	token := func() string { return "alice" }
	e := &elicitor{action: "accept"}
	eliciting := connect(t, base+"/mcp", token, &mcp.ClientOptions{ElicitationHandler: e.handle})
	if res, err := callPay(t, eliciting, 10, nil); err != nil || res.IsError || len(e.requests()) != 1 {
		t.Fatalf("by elicitation: %v %v (%d requests)", err, res, len(e.requests()))
	}
	plain := connect(t, base+"/mcp", token, nil)
	res, err := callPay(t, plain, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	conf, _ := envelopeOf(t, res)["confirmation"].(map[string]any)
	res, err = callPay(t, plain, 10, mcp.Meta{mcpx.MetaConfirmationToken: conf["token"]})
	if err != nil || res.IsError {
		t.Fatalf("by token: %v %v", err, res)
	}
	if paid.Load() != 2 {
		t.Errorf("%d payments, want 2", paid.Load())
	}
}

// TestConfirmationBelongsToCaller: a token confirms the calls of the
// caller it was given to (its Subject) alone, and an anonymous caller
// cannot confirm at all.
func TestConfirmationBelongsToCaller(t *testing.T) {
	var paid atomic.Int32
	s := confirmServer(t, &paid)
	res, err := callPay(t, connectRun(t, s, person("alice"), "", nil), 30, nil)
	if err != nil {
		t.Fatal(err)
	}
	conf, _ := envelopeOf(t, res)["confirmation"].(map[string]any)
	res, err = callPay(t, connectRun(t, s, person("bob"), "", nil), 30, mcp.Meta{mcpx.MetaConfirmationToken: conf["token"]})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != `{"error":"invalid_confirmation","message":"the confirmation token is not valid for this caller"}` {
		t.Errorf("bob with alice's token: %s", got)
	}
	res, err = callPay(t, connectRun(t, s, nil, "", nil), 30, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != `{"error":"unauthorized","message":"this caller cannot confirm calls"}` {
		t.Errorf("an anonymous caller: %s", got)
	}
	if paid.Load() != 0 {
		t.Errorf("%d payments, want none", paid.Load())
	}
}
