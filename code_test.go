package agentcap_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentcap/agentcap"
)

// kitCodes is every code the kit declares: its spelling on the wire and
// the status its documentation gives it.
var kitCodes = []struct {
	code     agentcap.Code
	spelling string
	status   int
}{
	{agentcap.CodeInvalidRequest, "invalid_request", 400},
	{agentcap.CodeCapabilityNotFound, "capability_not_found", 404},
	{agentcap.CodeUnauthorized, "unauthorized", 403},
	{agentcap.CodeInternalError, "internal_error", 500},
	{agentcap.CodeCancelled, "cancelled", 499},
	{agentcap.CodeTimeout, "timeout", 504},
	{agentcap.CodeTemporarilyUnavailable, "temporarily_unavailable", 503},
	{agentcap.CodeAuditUnavailable, "audit_unavailable", 503},
	{agentcap.CodeNotFound, "not_found", 404},
	{agentcap.CodeMethodNotAllowed, "method_not_allowed", 405},
	{agentcap.CodeUnsupportedMediaType, "unsupported_media_type", 415},
	{agentcap.CodeRequestTooLarge, "request_too_large", 413},
	{agentcap.CodeForbiddenOrigin, "forbidden_origin", 403},
	{agentcap.CodeConflict, "conflict", 409},

	{agentcap.CodeBatchUnsupported, "batch_unsupported_result_type", 400},
	{agentcap.CodeStreamExpired, "stream_expired", 504},
	{agentcap.CodeJobNotFound, "job_not_found", 404},
	{agentcap.CodeInstanceLost, "instance_lost", 503},
	{agentcap.CodeInvalidIdempotencyKey, "invalid_idempotency_key", 400},
	{agentcap.CodeIdempotencyInProgress, "idempotency_in_progress", 409},
	{agentcap.CodeIdempotencyKeyReused, "idempotency_key_reused", 422},

	{agentcap.CodePreviewNotSupported, "preview_not_supported", 400},
	{agentcap.CodeConfirmationRequired, "confirmation_required", 428},
	{agentcap.CodeConfirmationMismatch, "confirmation_mismatch", 409},
	{agentcap.CodeConfirmationExpired, "confirmation_expired", 409},
	{agentcap.CodeConfirmationUsed, "confirmation_used", 409},
	{agentcap.CodeInvalidConfirmation, "invalid_confirmation", 403},
	{agentcap.CodeConfirmationPending, "confirmation_pending", 202},
	{agentcap.CodeConfirmationDenied, "confirmation_denied", 403},
	{agentcap.CodeConfirmationNotFound, "confirmation_not_found", 404},
	{agentcap.CodeConfirmationDeclined, "confirmation_declined", 403},

	{agentcap.CodeAuthenticationRequired, "authentication_required", 401},
	{agentcap.CodeInvalidJWT, "invalid_jwt", 401},
	{agentcap.CodeCapabilityNotGranted, "capability_not_granted", 403},
	{agentcap.CodeConstraintViolated, "constraint_violated", 403},
	{agentcap.CodeUnknownConstraintOperator, "unknown_constraint_operator", 400},
	{agentcap.CodeAgentRevoked, "agent_revoked", 403},
	{agentcap.CodeAgentExpired, "agent_expired", 403},
	{agentcap.CodeAgentPending, "agent_pending", 403},
	{agentcap.CodeAgentRejected, "agent_rejected", 403},
	{agentcap.CodeAgentClaimed, "agent_claimed", 403},
	{agentcap.CodeHostRevoked, "host_revoked", 403},
	{agentcap.CodeHostPending, "host_pending", 403},
	{agentcap.CodeRateLimited, "rate_limited", 429},

	{agentcap.CodeUnsupportedMode, "unsupported_mode", 400},
	{agentcap.CodeUnsupportedAlgorithm, "unsupported_algorithm", 400},
	{agentcap.CodeInvalidCapabilities, "invalid_capabilities", 400},
	{agentcap.CodeAgentExists, "agent_exists", 409},
	{agentcap.CodeAlreadyGranted, "already_granted", 409},
	{agentcap.CodeAgentNotFound, "agent_not_found", 404},
	{agentcap.CodeHostNotFound, "host_not_found", 404},
	{agentcap.CodeGrantNotFound, "grant_not_found", 404},
	{agentcap.CodeApprovalNotFound, "approval_not_found", 404},
	{agentcap.CodeApprovalClosed, "approval_closed", 410},
	{agentcap.CodeAbsoluteLifetimeExceeded, "absolute_lifetime_exceeded", 403},
	{agentcap.CodeAuthorizationPending, "authorization_pending", 400},
	{agentcap.CodeSlowDown, "slow_down", 400},
	{agentcap.CodeAccessDenied, "access_denied", 403},
	{agentcap.CodeExpiredToken, "expired_token", 400},
	{agentcap.CodePresenceRequired, "presence_required", 403},
	{agentcap.CodeReauthenticationRequired, "reauthentication_required", 403},
	{agentcap.CodeCSRFFailed, "csrf_failed", 403},
	{agentcap.CodeKeyInUse, "key_in_use", 409},

	{agentcap.CodeClientError, "client_error", 500},
}

func TestKitCodes(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	seen := map[agentcap.Code]bool{}
	for _, c := range kitCodes {
		if string(c.code) != c.spelling {
			t.Errorf("%s is spelled %q, want %q", c.spelling, c.code, c.spelling)
		}
		if got := c.code.HTTPStatus(); got != c.status {
			t.Errorf("%s: HTTPStatus %d, want %d", c.code, got, c.status)
		}
		if got := agentcap.NewError(c.code, "m").HTTPStatus(); got != c.status {
			t.Errorf("%s: Error.HTTPStatus %d, want %d", c.code, got, c.status)
		}
		if !c.code.Known() {
			t.Errorf("%s is not Known", c.code)
		}
		if !snake.MatchString(string(c.code)) {
			t.Errorf("%q is not snake_case", c.code)
		}
		if seen[c.code] {
			t.Errorf("%s is listed twice", c.code)
		}
		seen[c.code] = true
	}
	if agentcap.CodeCancelled.HTTPStatus() != agentcap.StatusClientClosedRequest {
		t.Errorf("cancelled is not answered with StatusClientClosedRequest")
	}
}

// TestEveryDeclaredCodeIsListed reads the package's source for every
// constant of type Code, so that a code added without a status (or
// without a row above) fails here.
func TestEveryDeclaredCodeIsListed(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	declared := map[string]string{} // spelling -> constant name
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
					continue
				}
				for i, n := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: not a string literal", n.Name)
					}
					spelling, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					if prev, dup := declared[spelling]; dup {
						t.Errorf("%s and %s are both spelled %q", prev, n.Name, spelling)
					}
					declared[spelling] = n.Name
				}
			}
		}
	}
	if len(declared) < 60 {
		t.Fatalf("found %d declared codes: the source was not read", len(declared))
	}
	listed := map[string]bool{}
	for _, c := range kitCodes {
		listed[c.spelling] = true
	}
	for spelling, name := range declared {
		if !listed[spelling] {
			t.Errorf("%s (%q) is declared but has no row in kitCodes", name, spelling)
		}
		if !agentcap.Code(spelling).Known() {
			t.Errorf("%s (%q) has no status in the table", name, spelling)
		}
	}
	for spelling := range listed {
		if _, ok := declared[spelling]; !ok {
			t.Errorf("%q is listed but not declared", spelling)
		}
	}
}

func TestUnknownCodes(t *testing.T) {
	for _, c := range []agentcap.Code{"", "never_declared_here", "Conflict", "invalid_input"} {
		if c.Known() || c.HTTPStatus() != http.StatusInternalServerError {
			t.Errorf("%q: Known %v, status %d; want false, 500", c, c.Known(), c.HTTPStatus())
		}
	}
}

func TestNewCode(t *testing.T) {
	frozen := agentcap.NewCode("test_account_frozen", agentcap.CodeConflict)
	if frozen != "test_account_frozen" || !frozen.Known() || frozen.HTTPStatus() != http.StatusConflict {
		t.Fatalf("%q: Known %v, status %d", frozen, frozen.Known(), frozen.HTTPStatus())
	}
	if err := agentcap.NewError(frozen, "frozen"); err.HTTPStatus() != http.StatusConflict {
		t.Errorf("an error with the code is answered %d", err.HTTPStatus())
	}
	// Declared again alike: the same code, no panic.
	if again := agentcap.NewCode("test_account_frozen", agentcap.CodeConflict); again != frozen {
		t.Errorf("again: %q", again)
	}
	for _, c := range []struct {
		name string
		like agentcap.Code
	}{
		{"test_closed_like_gone", agentcap.CodeApprovalClosed},
		{"test_pending_like_accepted", agentcap.CodeConfirmationPending},
		{"test_cancelled_like", agentcap.CodeCancelled},
		{"t" + strings.Repeat("x", 63), agentcap.CodeNotFound},
	} {
		if got := agentcap.NewCode(c.name, c.like); got.HTTPStatus() != c.like.HTTPStatus() {
			t.Errorf("%q like %s: status %d, want %d", c.name, c.like, got.HTTPStatus(), c.like.HTTPStatus())
		}
	}

	panics := func(name string, like agentcap.Code) (msg string) {
		t.Helper()
		defer func() {
			r := recover()
			if r == nil {
				t.Errorf("NewCode(%q, %q) did not panic", name, like)
				return
			}
			msg, _ = r.(string)
		}()
		agentcap.NewCode(name, like)
		return ""
	}
	for _, name := range []string{"", "Test_bad", "1test", "_test", "test-bad", "test bad", "tést", "t" + strings.Repeat("x", 64)} {
		if msg := panics(name, agentcap.CodeConflict); msg != "" && !strings.Contains(msg, "snake_case") {
			t.Errorf("%q: %s", name, msg)
		}
	}
	if msg := panics("conflict", agentcap.CodeConflict); !strings.Contains(msg, "declares that code") {
		t.Errorf("a kit code: %s", msg)
	}
	if msg := panics("test_like_nothing", "no_such_code"); !strings.Contains(msg, "not a kit code") {
		t.Errorf("like an unknown code: %s", msg)
	}
	if msg := panics("test_like_app", frozen); !strings.Contains(msg, "not a kit code") {
		t.Errorf("like an application's code: %s", msg)
	}
	if msg := panics("test_account_frozen", agentcap.CodeNotFound); !strings.Contains(msg, "declared before") {
		t.Errorf("declared again unlike: %s", msg)
	}
	// A refused declaration declares nothing, and changes nothing.
	for _, c := range []agentcap.Code{"test_like_nothing", "test_like_app", "test-bad"} {
		if c.Known() {
			t.Errorf("%q was declared by a panicking NewCode", c)
		}
	}
	if frozen.HTTPStatus() != http.StatusConflict {
		t.Errorf("a refused redeclaration changed the status to %d", frozen.HTTPStatus())
	}
}
