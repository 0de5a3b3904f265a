package core_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

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
	e := core.MustExecutor(core.MustRegistry(c), core.ExecutorConfig[struct{}, string]{
		CreateContext: func(context.Context, string, *core.Definition, any) (struct{}, error) { return struct{}{}, nil },
	})
	for _, n := range []int{1, core.MaxViolations, core.MaxViolations + 1, 500} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var b strings.Builder
			b.WriteString(`{"a":"x"`)
			for i := range n {
				fmt.Fprintf(&b, `,"unknown_%d":1`, i)
			}
			b.WriteString("}")
			_, err := e.ExecuteDynamic(context.Background(), "many", "p", []byte(b.String()), nil)
			var ce *core.Error
			if !errors.As(err, &ce) || ce.Code != core.CodeInvalidInput {
				t.Fatalf("err = %v, want invalid_input", err)
			}
			want := min(n, core.MaxViolations)
			if len(ce.Details) != want {
				t.Errorf("%d violations listed, want %d", len(ce.Details), want)
			}
			total := fmt.Sprintf("of %d violations", n)
			if truncated := n > core.MaxViolations; strings.Contains(ce.Message, total) != truncated {
				t.Errorf("message %q: mentions the total = %v, want %v", ce.Message, !truncated, truncated)
			}
		})
	}
}
