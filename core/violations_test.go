package core_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

type manyIn struct {
	A string `json:"a"`
}

type manyOut struct {
	A string `json:"a"`
}

func TestInvalidInputListsAtMostMaxViolations(t *testing.T) {
	c := core.MustDefine("many", "Echo a.", func(_ context.Context, _ struct{}, in manyIn) (manyOut, error) {
		return manyOut(in), nil
	})
	e := core.MustExecutor(core.MustRegistry(c), func(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) { return struct{}{}, nil },
		core.Config{})
	for _, n := range []int{1, 50, 50 + 1, 500} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var b strings.Builder
			b.WriteString(`{"a":"x"`)
			for i := range n {
				fmt.Fprintf(&b, `,"unknown_%d":1`, i)
			}
			b.WriteString("}")
			_, err := e.Execute(context.Background(), "many", nil, []byte(b.String()))
			ce, _ := err.(*agentcap.Error)
			if ce == nil || ce.Code != agentcap.CodeInvalidRequest || ce.Stage != agentcap.StageInput {
				t.Fatalf("err = %v, want invalid_request", err)
			}
			want := min(n, 50)
			if len(ce.Details) != want {
				t.Errorf("%d violations listed, want %d", len(ce.Details), want)
			}
			total := fmt.Sprintf("of %d violations", n)
			if truncated := n > 50; strings.Contains(ce.Message, total) != truncated {
				t.Errorf("message %q: mentions the total = %v, want %v", ce.Message, !truncated, truncated)
			}
		})
	}
}
