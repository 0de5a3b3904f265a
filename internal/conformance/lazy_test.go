package conformance_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

// lazyBuild is a controllable executor build: it counts its runs, fails
// while fail is set, and waits for gate when one is set.
type lazyBuild struct {
	runs atomic.Int32
	fail atomic.Bool
	gate chan struct{}
}

func (b *lazyBuild) handler(t *testing.T) *httpx.Handler {
	t.Helper()
	reg := core.MustRegistry(append(capabilities(), waitCapability())...)
	lazy := core.Lazy(reg, func(context.Context) (*core.Executor, error) {
		b.runs.Add(1)
		if b.gate != nil {
			<-b.gate
		}
		if b.fail.Load() {
			return nil, errors.New("database not reachable yet")
		}
		return core.NewExecutor(reg, newContext, core.Config{Timeout: 10 * time.Second})
	})
	h, err := httpx.New(lazy, config())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestLazyConformance runs the whole table against a handler whose
// executor is built on first use, on all four routers: every answer is
// the golden one, and the executor was built once.
func TestLazyConformance(t *testing.T) {
	golden := readGolden(t)
	var b lazyBuild
	servers := startServers(t, b.handler(t))
	for _, x := range cases() {
		t.Run(x.name, func(t *testing.T) {
			for _, s := range servers {
				if diff := cmp.Diff(golden[x.name], do(t, s.url, x)); diff != "" {
					t.Errorf("%s (-golden +lazy):\n%s", s.name, diff)
				}
			}
		})
	}
	if n := b.runs.Load(); n != 1 {
		t.Errorf("the executor was built %d times, want once", n)
	}
}

// TestLazyRegistryServesDiscovery checks, on all four routers, that list
// and describe never build the executor; that executions while the build
// fails are answered 503 temporarily_unavailable with Retry-After, the
// failure not being kept; and that concurrent first executions share one
// build.
func TestLazyRegistryServesDiscovery(t *testing.T) {
	golden := readGolden(t)
	var b lazyBuild
	b.fail.Store(true)
	servers := startServers(t, b.handler(t))
	discovery := []string{"list/anonymous", "list/first page", "describe/capability", "describe/hidden"}
	byName := map[string]exchange{}
	for _, x := range cases() {
		byName[x.name] = x
	}
	for _, s := range servers {
		for _, name := range discovery {
			if diff := cmp.Diff(golden[name], do(t, s.url, byName[name])); diff != "" {
				t.Errorf("%s %s before the build (-golden +lazy):\n%s", s.name, name, diff)
			}
		}
	}
	if n := b.runs.Load(); n != 0 {
		t.Fatalf("list and describe built the executor %d times", n)
	}

	unavailable := answer{Status: http.StatusServiceUnavailable,
		Headers: map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"},
		Body:    `{"error":"temporarily_unavailable","message":"the service is starting or cannot run capabilities right now; retry later"}` + "\n"}
	tries := 0
	for _, s := range servers {
		for _, name := range []string{"execute/authorized", "batch/mixed results"} {
			x := byName[name]
			x.status = http.StatusServiceUnavailable
			got := do(t, s.url, x)
			tries++
			if diff := cmp.Diff(unavailable, got); diff != "" {
				t.Errorf("%s %s while the build fails (-want +got):\n%s", s.name, name, diff)
			}
			if ra := retryAfter(t, s.url, x); ra != "1" {
				t.Errorf("%s %s: Retry-After %q", s.name, name, ra)
			}
			tries++
		}
	}
	if n := int(b.runs.Load()); n != tries {
		t.Errorf("%d builds for %d failed executions: a failure was kept", n, tries)
	}

	// The build now succeeds, slowly: the first executions, concurrent on
	// every router, wait for one build together.
	b.runs.Store(0)
	b.fail.Store(false)
	b.gate = make(chan struct{})
	var wg sync.WaitGroup
	for _, s := range servers {
		for range 4 {
			wg.Go(func() {
				x := byName["execute/authorized"]
				if got := do(t, s.url, x); diff(golden[x.name], got) != "" {
					t.Errorf("%s first execution: %s", s.name, diff(golden[x.name], got))
				}
			})
		}
	}
	time.Sleep(50 * time.Millisecond) // let every first call reach the build
	close(b.gate)
	wg.Wait()
	if n := b.runs.Load(); n != 1 {
		t.Errorf("concurrent first executions ran %d builds, want 1", n)
	}
}

func diff(want, got answer) string { return cmp.Diff(want, got) }

// retryAfter sends x again and returns its Retry-After header.
func retryAfter(t *testing.T, base string, x exchange) string {
	t.Helper()
	req, err := http.NewRequest(x.method, base+x.path, strings.NewReader(x.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+x.auth)
	req.Header.Set("Content-Type", x.ctype)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Header.Get("Retry-After")
}

// readGolden reads the golden answers TestConformance keeps.
func readGolden(t *testing.T) map[string]answer {
	t.Helper()
	data, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	golden := map[string]answer{}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	return golden
}
