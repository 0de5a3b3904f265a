package main

import (
	"context"
	"testing"

	"github.com/agentcap/agentcap/examples/internal/issuestest"
)

func TestExample(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, "127.0.0.1:0", func(a string) { addrc <- a }) }()
	select {
	case addr := <-addrc:
		issuestest.Run(t, "http://"+addr)
	case err := <-done:
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
