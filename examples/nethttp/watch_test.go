package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func agentCall(t *testing.T, base, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/agent/capability/execute", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer alice-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// watch_issues streams an issue created while it runs, as it is created,
// then ends with a summary.
func TestWatchIssues(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, "127.0.0.1:0", func(a string) { addrc <- a }) }()
	base := "http://" + <-addrc

	created := agentCall(t, base, `{"capability":"create_issue","arguments":{"workspace_id":"acme","title":"Old one"}}`)
	io.Copy(io.Discard, created.Body)
	created.Body.Close()

	resp := agentCall(t, base, `{"capability":"watch_issues","arguments":{"workspace_id":"acme","seconds":2}}`)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	r := bufio.NewReader(resp.Body)
	next := func() string {
		t.Helper()
		var ev []string
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			line = strings.TrimSuffix(line, "\n")
			if line == "" && len(ev) > 0 {
				return strings.Join(ev, "|")
			}
			if line != "" && !strings.HasPrefix(line, ":") {
				ev = append(ev, line)
			}
		}
	}
	if ev := next(); ev != `event: data|data: {"type":"existing","issue":{"id":"ISS-1","workspace_id":"acme","title":"Old one","author":"alice"}}` {
		t.Errorf("first event %s", ev)
	}
	start := time.Now()
	created = agentCall(t, base, `{"capability":"create_issue","arguments":{"workspace_id":"acme","title":"New one"}}`)
	io.Copy(io.Discard, created.Body)
	created.Body.Close()
	if ev := next(); ev != `event: data|data: {"type":"created","issue":{"id":"ISS-2","workspace_id":"acme","title":"New one","author":"alice"}}` {
		t.Errorf("second event %s", ev)
	}
	if time.Since(start) > 1500*time.Millisecond {
		t.Errorf("the new issue took %v to arrive", time.Since(start))
	}
	if ev := next(); ev != `event: done|data: {"events":2}` {
		t.Errorf("last event %s", ev)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
