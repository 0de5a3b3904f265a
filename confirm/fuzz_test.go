package confirm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/idempotency"
)

// FuzzConsume presents fuzzed tokens (where "{token}" stands for a token
// just issued), subjects, arguments and delays to a Manager. Only the
// issued token, for its subject and audience, in time and for
// canonically equal arguments, confirms a call, and only once; every
// other token is invalid; a refused token is not spent.
func FuzzConsume(f *testing.F) {
	const (
		subject  = "agent-1"
		audience = "https://bank.example"
		base     = `{"amount":5,"to":"bob"}`
	)
	for _, s := range []struct {
		token, subject, args string
		wait                 uint32
	}{
		{"{token}", subject, base, 0},
		{"{token}", subject, ` { "to" : "bob", "amount" : 5.0 } `, 299},
		{"{token}", subject, `{"amount":50,"to":"bob"}`, 0},
		{"{token}", "agent-2", base, 0},
		{"{token}", subject, base, 300},
		{"{token}", subject, base, 300 + 3600},
		{"{token}x", subject, base, 0},
		{"cfm_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", subject, base, 0},
		{"", subject, "", 0},
		{"{token}", subject, `not json`, 0},
	} {
		f.Add(s.token, s.subject, []byte(s.args), s.wait)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, tokenText, who string, args []byte, wait uint32) {
		now := time.Unix(1_700_000_000, 0)
		m, err := confirm.New(confirm.Config{Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		issued := core.ConfirmationBinding{Subject: subject, Capability: "transfer", Arguments: []byte(base), Audience: audience}
		c, err := m.Issue(ctx, issued)
		if err != nil {
			t.Fatal(err)
		}
		if c.ID != confirm.TokenID(c.Token) || !strings.HasPrefix(c.Token, "cfm_") {
			t.Fatalf("issued %+v", c)
		}
		token := strings.ReplaceAll(tokenText, "{token}", c.Token)
		age := time.Duration(wait) * time.Second
		now = now.Add(age)
		call := core.ConfirmationBinding{Subject: who, Capability: "transfer", Arguments: args, Audience: audience}
		err = m.Consume(ctx, token, call)

		var want error
		switch {
		case token != c.Token || who != subject || age >= confirm.DefaultTTL+confirm.DefaultRetention:
			want = core.ErrConfirmationInvalid
		case age >= confirm.DefaultTTL:
			want = core.ErrConfirmationExpired
		case idempotency.Fingerprint("transfer", args) != idempotency.Fingerprint("transfer", []byte(base)):
			want = core.ErrConfirmationMismatch
		}
		if !errors.Is(err, want) || (want == nil && err != nil) {
			t.Fatalf("token %q, subject %q, args %q, after %v: got %v, want %v", tokenText, who, args, age, err, want)
		}
		again := m.Consume(ctx, c.Token, issued)
		switch {
		case want == nil && !errors.Is(again, core.ErrConfirmationUsed):
			t.Fatalf("a token confirmed a second call: %v", again)
		case want != nil && age < confirm.DefaultTTL && again != nil:
			t.Fatalf("a refused attempt (%v) spent the token: %v", want, again)
		}
	})
}
