package conformance_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClientDisconnectCancels proves that on net/http, Gin and Echo a
// client that goes away cancels the running capability. Fiber has no such
// signal and is left out on purpose (see package fiberx).
func TestClientDisconnectCancels(t *testing.T) {
	h, err := newHandler()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range startServers(t, h) {
		if s.name == "fiber" {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", s.url+"/capability/execute", strings.NewReader(`{"capability":"wait"}`))
			req.Header.Set("Authorization", "Bearer alice")
			req.Header.Set("Content-Type", ctJSON)
			done := make(chan struct{})
			go func() {
				defer close(done)
				if resp, err := client.Do(req); err == nil {
					resp.Body.Close()
				}
			}()
			select {
			case <-waitStarted:
			case <-time.After(5 * time.Second):
				t.Fatal("the capability never started")
			}
			cancel()
			select {
			case err := <-waitEnded:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("the capability's context ended with %v, want context.Canceled", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the capability was not canceled when its client went away")
			}
			<-done
		})
	}
}

// TestContextOutlivesRequest keeps a capability's context after its
// request and reads it while the framework serves other requests with
// its recycled per-request objects. Under -race this fails if a mount
// leaked a pooled framework object into the context. The value set by
// middleware must never turn into another request's value.
func TestContextOutlivesRequest(t *testing.T) {
	h, err := newHandler()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range startServers(t, h) {
		t.Run(s.name, func(t *testing.T) {
			execute := func(tenant string) {
				req, _ := http.NewRequest("POST", s.url+"/capability/execute", strings.NewReader(`{"capability":"linger"}`))
				req.Header.Set("Authorization", "Bearer alice")
				req.Header.Set("Content-Type", ctJSON)
				req.Header.Set("X-Tenant", tenant)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("status %d", resp.StatusCode)
				}
			}
			execute("first")
			kept := <-lingering

			var wg sync.WaitGroup
			for i := range 20 {
				wg.Go(func() {
					execute("other-" + string(rune('a'+i)))
					<-lingering
				})
			}
			stop := make(chan struct{})
			var readErr error
			var reader sync.WaitGroup
			reader.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					v := tenantOf(kept)
					if v != "first" && !(s.name == "echo" && v == "") {
						readErr = errors.New("the kept context reports tenant " + v)
						return
					}
					_ = kept.Err()
					_, _ = kept.Deadline()
				}
			})
			wg.Wait()
			close(stop)
			reader.Wait()
			if readErr != nil {
				t.Error(readErr)
			}
		})
	}
}
