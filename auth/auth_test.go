package auth_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
)

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct {
		header string
		token  string
		ok     bool
	}{
		{"Bearer abc.def.ghi", "abc.def.ghi", true},
		// The scheme is compared without regard to case.
		{"bearer abc", "abc", true},
		{"BEARER abc", "abc", true},
		{"bEaReR abc", "abc", true},
		// Spaces and tabs around the value are not part of it; the scheme
		// ends at a space (RFC 9110), after which spaces and tabs may
		// come before the token.
		{"  Bearer abc  ", "abc", true},
		{"\tBearer abc\t", "abc", true},
		{"Bearer  \t abc", "abc", true},
		{"Bearer \tabc", "abc", true},
		{"Bearer a-b_c~d+e/f==", "a-b_c~d+e/f==", true},
		// Bearer credentials that are not one token: bad, not missing.
		{"Bearer", "", true},
		{"Bearer ", "", true},
		{" Bearer \t ", "", true},
		{"Bearer abc def", "", true},
		{"Bearer abc\tdef", "", true},
		// Not the Bearer scheme at all.
		{"", "", false},
		{"   ", "", false},
		{"Basic dXNlcjpwYXNz", "", false},
		{"AgentAuth abc", "", false},
		{"Bearerabc", "", false},
		{"Bearer-abc", "", false},
		{"Bear abc", "", false},
		{"Bea", "", false},
		{"abc", "", false},
		{"Token Bearer abc", "", false},
		// Nothing else ends the scheme.
		{"Bearer\tabc", "", false},
		{"\tBearer\tabc\t", "", false},
		{"Bearer\nabc", "", false},
		{"\u00a0Bearer abc", "", false},
	} {
		token, ok := auth.BearerToken(tc.header)
		if token != tc.token || ok != tc.ok {
			t.Errorf("BearerToken(%q) = %q, %v; want %q, %v", tc.header, token, ok, tc.token, tc.ok)
		}
	}
}

// bearerReference is what BearerToken says, written another way: the
// value without the spaces and tabs around it, cut at its first space
// into a scheme that is "bearer" in any case and credentials that are
// exactly one field between spaces and tabs.
func bearerReference(h string) (string, bool) {
	scheme, credentials, _ := strings.Cut(strings.Trim(h, " \t"), " ")
	if !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	fields := strings.FieldsFunc(credentials, func(r rune) bool { return r == ' ' || r == '\t' })
	if len(fields) != 1 {
		return "", true
	}
	return fields[0], true
}

// FuzzBearerToken compares BearerToken with bearerReference, and checks
// that a token it returns is one field that reads back the same.
func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{
		"Bearer abc", "bearer abc", " \tBEARER \t abc \t", "Bearer\tabc", "Bearer", "Bearer ", "Bearer a b", "Bearerabc",
		"Basic abc", "", "Bearer\u00a0abc", "Bearer \xff", "\u212aBearer x", "Bearer eyJhbGciOiJFZERTQSJ9.e30.sig",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		token, ok := auth.BearerToken(h)
		wantToken, wantOK := bearerReference(h)
		if token != wantToken || ok != wantOK {
			t.Fatalf("BearerToken(%q) = %q, %v; the reference says %q, %v", h, token, ok, wantToken, wantOK)
		}
		if !ok && token != "" {
			t.Fatalf("BearerToken(%q) = %q without Bearer credentials", h, token)
		}
		if token != "" {
			if strings.ContainsAny(token, " \t") {
				t.Fatalf("token %q holds white space", token)
			}
			if again, ok := auth.BearerToken("Bearer " + token); !ok || again != token {
				t.Fatalf("the token %q does not read back: %q, %v", token, again, ok)
			}
		}
	})
}

// tokenVerifier accepts "Bearer good" as the identity alice and answers
// the tokens "revoked", "limited", "broken" and "down" with the refusals
// their names say; it records the requests it verifies.
type tokenVerifier struct {
	alice    *auth.Identity
	seen     []auth.Request
	headerOf string
	header   string
}

func (v *tokenVerifier) Verify(_ context.Context, req *auth.Request) (*auth.Identity, error) {
	v.seen = append(v.seen, *req)
	if req.Header != nil && v.headerOf != "" {
		v.header = req.Header(v.headerOf)
	}
	token, ok := auth.BearerToken(req.Authorization)
	switch {
	case !ok:
		return nil, auth.ErrNoCredentials
	case token == "good":
		return v.alice, nil
	case token == "anonymous":
		return nil, nil
	case token == "revoked":
		return nil, agentcap.NewError(agentcap.CodeAgentRevoked, "the agent was revoked")
	case token == "limited":
		return nil, agentcap.NewError(agentcap.CodeRateLimited, "slow down").WithRetryAfter(2500 * time.Millisecond)
	case token == "broken":
		return nil, errors.New("keys table: secret detail")
	case token == "down":
		return nil, agentcap.Unavailable("the store did not answer", errors.New("redis: refused"))
	}
	return nil, agentcap.NewError(agentcap.CodeInvalidJWT, "the token is invalid")
}

// challengingVerifier is a tokenVerifier that names its scheme.
type challengingVerifier struct{ *tokenVerifier }

func (challengingVerifier) Challenge() string { return `Bearer realm="bank"` }

func TestRequire(t *testing.T) {
	alice := &auth.Identity{Subject: "agt_1", AgentID: "agt_1", UserID: "alice"}
	tv := &tokenVerifier{alice: alice, headerOf: "X-Request-Id"}
	var got *auth.Identity
	var reached int
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		got = auth.FromContext(r.Context())
		w.WriteHeader(http.StatusNoContent)
	})
	h := auth.Require(challengingVerifier{tv})(next)
	serve := func(authorization string) *http.Response {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, "/transfer", nil)
		req.RemoteAddr = "192.0.2.7:4321"
		req.Header.Set("X-Request-Id", "req-9")
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result()
	}

	// Verified: the identity reaches the handler through the context.
	res := serve("Bearer good")
	if res.StatusCode != http.StatusNoContent || reached != 1 || got != alice {
		t.Fatalf("verified: %d, reached %d, identity %v", res.StatusCode, reached, got)
	}
	want := auth.Request{Authorization: "Bearer good", RemoteAddr: "192.0.2.7:4321"}
	last := tv.seen[len(tv.seen)-1]
	last.Header = nil
	if diff := cmp.Diff(want, last); diff != "" || tv.header != "req-9" {
		t.Errorf("the verifier was asked (-want +got):\n%s\nheader %q", diff, tv.header)
	}

	for _, tc := range []struct {
		name          string
		authorization string
		status        int
		code          agentcap.Code
		challenged    bool
		retryAfter    string
	}{
		{"no credentials", "", 401, agentcap.CodeAuthenticationRequired, true, ""},
		{"another scheme", "Basic dXNlcjpwYXNz", 401, agentcap.CodeAuthenticationRequired, true, ""},
		{"anonymous", "Bearer anonymous", 401, agentcap.CodeAuthenticationRequired, true, ""},
		{"bad token", "Bearer forged", 401, agentcap.CodeInvalidJWT, true, ""},
		{"revoked", "Bearer revoked", 403, agentcap.CodeAgentRevoked, false, ""},
		{"rate limited", "Bearer limited", 429, agentcap.CodeRateLimited, false, "3"},
		{"store down", "Bearer down", 503, agentcap.CodeTemporarilyUnavailable, false, "1"},
		{"verifier failure", "Bearer broken", 500, agentcap.CodeInternalError, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := reached
			res := serve(tc.authorization)
			raw, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			body := string(raw)
			if res.StatusCode != tc.status || reached != before {
				t.Fatalf("status %d (reached %v), want %d", res.StatusCode, reached != before, tc.status)
			}
			if !strings.HasPrefix(body, `{"error":"`+string(tc.code)+`","message":`) || strings.Contains(body, "secret") ||
				strings.Contains(body, "redis") {
				t.Errorf("body %s", body)
			}
			if got := res.Header.Values("WWW-Authenticate"); tc.challenged != cmp.Equal(got, []string{`Bearer realm="bank"`}) || !tc.challenged && got != nil {
				t.Errorf("WWW-Authenticate %q", got)
			}
			if got := res.Header.Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tc.retryAfter)
			}
			if res.Header.Get("Content-Type") != "application/json" || res.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("headers %v", res.Header)
			}
		})
	}

	// A verifier that names no scheme sends no challenge.
	h = auth.Require(tv)(next)
	res = serve("")
	if res.StatusCode != http.StatusUnauthorized || res.Header.Values("WWW-Authenticate") != nil {
		t.Errorf("without a challenge: %d %v", res.StatusCode, res.Header)
	}
	for _, r := range tv.seen {
		if r.Discovery {
			t.Errorf("Require asked the verifier about a discovery request: %+v", r)
		}
	}
}

func TestErrNoCredentials(t *testing.T) {
	e := agentcap.As(auth.ErrNoCredentials)
	if e == nil || e.Code != agentcap.CodeAuthenticationRequired || e.HTTPStatus() != http.StatusUnauthorized {
		t.Fatalf("ErrNoCredentials = %+v", e)
	}
}

func TestChallengeOf(t *testing.T) {
	plain := auth.VerifierFunc(func(context.Context, *auth.Request) (*auth.Identity, error) { return nil, auth.ErrNoCredentials })
	if got := auth.ChallengeOf(plain); got != "" {
		t.Errorf("ChallengeOf(VerifierFunc) = %q", got)
	}
	if got := auth.ChallengeOf(challengingVerifier{&tokenVerifier{}}); got != `Bearer realm="bank"` {
		t.Errorf("ChallengeOf = %q", got)
	}
	// VerifierFunc calls the function.
	id, err := plain.Verify(context.Background(), &auth.Request{})
	if id != nil || !errors.Is(err, auth.ErrNoCredentials) {
		t.Errorf("VerifierFunc.Verify = %v, %v", id, err)
	}
}

func TestContext(t *testing.T) {
	if auth.FromContext(context.Background()) != nil {
		t.Error("a bare context carries an identity")
	}
	id := &auth.Identity{Subject: "agt_1"}
	ctx := auth.NewContext(context.Background(), id)
	if auth.FromContext(ctx) != id {
		t.Error("FromContext does not return the identity NewContext put")
	}
	if auth.FromContext(auth.NewContext(ctx, nil)) != nil {
		t.Error("an anonymous caller replaces no identity")
	}
}
