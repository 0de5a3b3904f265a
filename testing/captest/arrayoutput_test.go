package captest_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/captest"
)

type member struct {
	Name string `json:"name"`
	Role string `json:"role" enum:"owner,editor"`
}

type membersIn struct {
	Role string `json:"role,omitempty" enum:"owner,editor,nobody"`
}

// members answers a top-level JSON array, nil when nobody has the role.
var members = core.MustDefine("workspace.members", "List the workspace's members.",
	func(_ context.Context, _ workspace, in membersIn) ([]member, error) {
		all := []member{{Name: "ada", Role: "owner"}, {Name: "lin", Role: "editor"}}
		if in.Role == "" {
			return all, nil
		}
		var out []member
		for _, m := range all {
			if m.Role == in.Role {
				out = append(out, m)
			}
		}
		return out, nil
	})

func TestArrayOutput(t *testing.T) {
	e := captest.NewExecutor(t, captest.Static(workspace{Member: true}), core.Config{}, members)
	tests := []struct {
		name string
		args any
		want []member
		json string
	}{
		{"everyone", nil, []member{{"ada", "owner"}, {"lin", "editor"}}, `[{"name":"ada","role":"owner"},{"name":"lin","role":"editor"}]`},
		{"one role", membersIn{Role: "editor"}, []member{{"lin", "editor"}}, `[{"name":"lin","role":"editor"}]`},
		{"nobody", `{"role":"nobody"}`, []member{}, `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := captest.Run(t, e, "workspace.members", nil, tt.args)
			if !r.OK() || r.Status != 200 || string(r.Output) != tt.json {
				t.Fatalf("got %d %s %s, want 200 %s", r.Status, r.Code, r.Output, tt.json)
			}
			var got []member
			r.Decode(t, &got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}

	got, code := captest.Call(e, members, nil, membersIn{Role: "owner"})
	if code != "" || !cmp.Equal(got, []member{{"ada", "owner"}}) {
		t.Errorf("Call = %v, %q", got, code)
	}
	// The typed call returns the handler's nil as it is.
	if got, code := captest.Call(e, members, nil, membersIn{Role: "nobody"}); code != "" || got != nil {
		t.Errorf("Call for nobody = %#v, %q; want a nil slice", got, code)
	}
}
