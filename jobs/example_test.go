package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/jobs"
)

// A transport starts a call, detaches it once its handler runs, and lets
// its owner poll the record.
func ExampleManager_Call() {
	m, err := jobs.New(jobs.Config{}) // records in memory
	if err != nil {
		panic(err)
	}
	defer m.Close()
	release := make(chan struct{})
	call := m.Call(context.Background(), "agt_1", "export", func(ctx context.Context) (json.RawMessage, error) {
		core.ReportProgress(ctx, core.Progress{Progress: 1, Total: 2, Message: "halfway"})
		<-release
		return json.RawMessage(`{"rows":42}`), nil
	})
	rec, err := call.Detach(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println(rec.State)
	close(release)
	for rec.State == jobs.StatePending {
		time.Sleep(time.Millisecond)
		rec, _ = m.Get(context.Background(), "agt_1", call.ID())
	}
	fmt.Println(rec.State, string(rec.Result))
	_, err = m.Get(context.Background(), "agt_2", call.ID())
	fmt.Println(err)
	// Output:
	// pending
	// completed {"rows":42}
	// jobs: no such job
}
