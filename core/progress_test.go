package core_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

func TestReportProgressReachesTheListenerThroughTheExecutor(t *testing.T) {
	type in struct {
		Steps int `json:"steps" minimum:"1"`
	}
	type out struct {
		Done int `json:"done"`
	}
	c := core.MustDefine("count_up", "Counts up, reporting each step.",
		func(ctx context.Context, _ struct{}, v in) (out, error) {
			for i := 1; i <= v.Steps; i++ {
				core.ReportProgress(ctx, core.Progress{Progress: float64(i), Total: float64(v.Steps), Message: "step"})
			}
			return out{Done: v.Steps}, nil
		})
	exec := core.MustExecutor(core.MustRegistry(c), func(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) { return struct{}{}, nil },
		core.Config{})
	var got []core.Progress
	ctx := core.WithProgress(context.Background(), func(p core.Progress) { got = append(got, p) })
	if _, err := exec.Execute(ctx, "count_up", nil, []byte(`{"steps":3}`)); err != nil {
		t.Fatal(err)
	}
	want := []core.Progress{{1, 3, "step"}, {2, 3, "step"}, {3, 3, "step"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("reports (-want +got):\n%s", diff)
	}
}

func TestReportProgressWithoutListenerOrWithAPanickingOne(t *testing.T) {
	core.ReportProgress(context.Background(), core.Progress{Progress: 1})
	if ctx := core.WithProgress(context.Background(), nil); ctx != context.Background() {
		t.Fatal("WithProgress(nil) changed the context")
	}
	ctx := core.WithProgress(context.Background(), func(core.Progress) { panic("listener") })
	core.ReportProgress(ctx, core.Progress{Progress: 1}) // must not panic
}
