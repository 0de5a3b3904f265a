package main

import (
	"context"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/testing/agentauthtest"
	"github.com/agentcap/agentcap/testing/captest"
)

// wordsCap stands in for echo at the location (the test provider
// describes only echo), answering a top-level JSON array: the message's
// words, and nil for an empty message.
var wordsCap = core.MustDefine("echo", "Echo a message's words.",
	func(_ context.Context, _ struct{}, in echoIn) ([]string, error) {
		if in.Message == "" {
			return nil, nil
		}
		return strings.Fields(in.Message), nil
	})

func TestExecutePrintsArrays(t *testing.T) {
	p := newProvider(t)
	exec := captest.NewExecutor(t, captest.Static(struct{}{}), core.Config{}, wordsCap)
	p.loc = agentauthtest.NewServer(t, exec, agentauth.Config{})
	state := t.TempDir()
	lo := "--insecure-loopback"
	if code, out, errOut := agentcap(t, state, "connect", p.URL, lo, "--capability", "echo"); code != 0 {
		t.Fatalf("connect: exit %d\n%s%s", code, out, errOut)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"json", []string{"--json", "--args", `{"message":"red blue"}`}, `["red","blue"]`},
		{"pretty", []string{"--args", `{"message":"red blue"}`}, "[\n  \"red\",\n  \"blue\"\n]"},
		{"nothing to list, json", []string{"--json", "--args", `{"message":""}`}, `[]`},
		{"nothing to list, pretty", []string{"--args", `{"message":""}`}, `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := agentcap(t, state, append([]string{"execute", "echo", lo}, tt.args...)...)
			if code != 0 || strings.TrimSpace(out) != tt.want {
				t.Errorf("exit %d\n%s%s\nwant %s", code, out, errOut, tt.want)
			}
		})
	}
}
