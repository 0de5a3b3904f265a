package core_test

import (
	"context"
	"testing"

	"github.com/agentcap/agentcap/core"
)

func TestHints(t *testing.T) {
	h := func(context.Context, struct{}, core.NoInput) (struct{}, error) { return struct{}{}, nil }
	plain := core.MustDefine("plain", "Plain.", h).Definition()
	hinted := core.MustDefine("hinted", "Hinted.", h, core.WithTitle("A hinted capability"), core.WithReadOnly()).Definition()
	if plain.Title() != "" || plain.ReadOnly() {
		t.Errorf("plain: title %q, read-only %v", plain.Title(), plain.ReadOnly())
	}
	if hinted.Title() != "A hinted capability" || !hinted.ReadOnly() {
		t.Errorf("hinted: title %q, read-only %v", hinted.Title(), hinted.ReadOnly())
	}
}
