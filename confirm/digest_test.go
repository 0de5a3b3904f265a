package confirm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
)

// A token issued after a person's confirmation and one issued without
// never stand in for each other, for the same call.
func TestHumanTokens(t *testing.T) {
	ctx := context.Background()
	m, err := confirm.New(confirm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	plain := core.ConfirmationBinding{Subject: "agt_1", Capability: "pay", Arguments: []byte(`{"amount":5000}`), Audience: "https://a.example/"}
	human := plain
	human.Human = true
	if d := confirm.Digest(human); !strings.HasPrefix(d, "human:") || d == confirm.Digest(plain) {
		t.Fatalf("digests %q and %q", d, confirm.Digest(plain))
	}
	for _, c := range []struct {
		name        string
		issue, call core.ConfirmationBinding
		want        error
	}{
		{"the agent's token for a call a person must confirm", plain, human, core.ErrConfirmationMismatch},
		{"a person's token for a call the agent confirms", human, plain, core.ErrConfirmationMismatch},
		{"a person's token", human, human, nil},
		{"the agent's token", plain, plain, nil},
	} {
		tok, err := m.Issue(ctx, c.issue)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Consume(ctx, tok.Token, c.call); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
