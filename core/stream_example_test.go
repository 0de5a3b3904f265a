package core_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

type countdownIn struct {
	From int `json:"from" minimum:"1" maximum:"5"`
}

type countdownTick struct {
	Left int `json:"left"`
}

type countdownDone struct {
	Message string `json:"message"`
}

// A streaming capability emits typed chunks while it works; a transport
// installs a sink with WithStream (httpx turns each chunk into an event).
func ExampleDefineStream() {
	countdown := core.MustDefineStream("countdown", "Count down, then say so.",
		func(_ context.Context, _ struct{}, in countdownIn, emit *core.Emitter[countdownTick]) (countdownDone, error) {
			for left := in.From; left > 0; left-- {
				if err := emit.Emit(countdownTick{Left: left}); err != nil {
					return countdownDone{}, err
				}
			}
			return countdownDone{Message: "liftoff"}, nil
		})
	exec := core.MustExecutor(core.MustRegistry(countdown), func(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) { return struct{}{}, nil },
		core.Config{})
	ctx := core.WithStream(context.Background(), func(chunk json.RawMessage) error {
		fmt.Printf("chunk %s\n", chunk)
		return nil
	})
	out, err := exec.Execute(ctx, "countdown", &auth.Identity{Subject: "agt_1", UserID: "user"}, []byte(`{"from":3}`))
	fmt.Println(string(out), err)
	fmt.Println(string(countdown.Definition().ChunkSchema()))
	// Output:
	// chunk {"left":3}
	// chunk {"left":2}
	// chunk {"left":1}
	// {"message":"liftoff"} <nil>
	// {"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"left":{"type":"integer"}},"required":["left"],"additionalProperties":false}
}
