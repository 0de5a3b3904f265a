package core_test

import (
	"context"
	"testing"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/core"
)

// A pointer at the top of the output type stands for what it points to:
// behind a non-nil pointer a nil slice or map is still sent as [] or {};
// a nil pointer is null, which the derived schema refuses.
func TestPointerToNilCollectionOutput(t *testing.T) {
	type mode struct {
		Mode string `json:"mode"`
	}
	list := core.MustDefine("ptr_list", "A list behind a pointer.", func(_ context.Context, _ app, in mode) (*[]string, error) {
		var s []string
		switch in.Mode {
		case "nil":
			return nil, nil
		case "full":
			s = []string{"a"}
		}
		return &s, nil
	})
	table := core.MustDefine("ptr_ptr_map", "A map behind two pointers.", func(context.Context, app, core.NoInput) (**map[string]int, error) {
		var m map[string]int
		p := &m
		return &p, nil
	})
	e := mustExec(t, core.Config{}, list, table)
	ctx := context.Background()
	for _, c := range []struct{ name, args, want string }{
		{"ptr_list", `{"mode":"empty"}`, `[]`},
		{"ptr_list", `{"mode":"full"}`, `["a"]`},
		{"ptr_ptr_map", ``, `{}`},
	} {
		out, err := e.Execute(ctx, c.name, caller("alice"), []byte(c.args))
		if err != nil || string(out) != c.want {
			t.Errorf("%s %s: %s, %v; want %s", c.name, c.args, out, err, c.want)
		}
	}
	_, err := e.Execute(ctx, "ptr_list", caller("alice"), []byte(`{"mode":"nil"}`))
	if ce := coreErr(t, err); ce.Code != agentcap.CodeInternalError || ce.Stage != agentcap.StageOutput {
		t.Errorf("a nil pointer result: %v, want internal_error", err)
	}
}
