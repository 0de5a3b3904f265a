package httpx_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/jobs"
)

type quickOut struct {
	Done bool `json:"done"`
}

var (
	quickJob = core.MustDefine("quick_job", "Finish at once, as a job.",
		func(context.Context, string, core.NoInput) (quickOut, error) { return quickOut{Done: true}, nil },
		core.WithAsync())
	quickSync = core.MustDefine("quick_sync", "Finish at once.",
		func(context.Context, string, core.NoInput) (quickOut, error) { return quickOut{Done: true}, nil })
)

// BenchmarkJobAcceptAndPoll is one job's life through the handler, in
// process with jobs in memory: the execute answered 202, then polls of
// the status route until the job has completed (polls/op says how many
// that took; the job ends by itself in its own goroutine).
func BenchmarkJobAcceptAndPoll(b *testing.B) {
	// One caller starts every job: b.N of them, beyond the default
	// bounds of a caller's jobs.
	m, err := jobs.New(jobs.Config{MaxPendingPerOwner: -1, MaxPerOwner: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	h, err := httpx.New(longExecutor(b, quickJob, quickSync), httpx.Config{Verifier: bearerName,
		LongRunning: httpx.LongRunning{Jobs: m, BaseURL: "http://agent.test/"}})
	if err != nil {
		b.Fatal(err)
	}
	hdr := http.Header{"Authorization": {"Bearer alice"}, "Content-Type": {jsonType}}
	body := []byte(`{"capability":"quick_job"}`)
	marker := []byte(`capability/status?id=`)
	polls := 0
	b.ReportAllocs()
	for b.Loop() {
		resp := h.Serve(&httpx.Request{Method: "POST", Path: "capability/execute", Header: hdr.Get, Body: body})
		if resp.Status != http.StatusAccepted {
			b.Fatalf("accept: %d %s", resp.Status, resp.Body)
		}
		i := bytes.Index(resp.Body, marker) + len(marker)
		j := i + bytes.IndexByte(resp.Body[i:], '"')
		query := "id=" + url.QueryEscape(string(resp.Body[i:j]))
		resp.Release()
		for {
			polls++
			poll := h.Serve(&httpx.Request{Method: "GET", Path: "capability/status", RawQuery: query, Header: hdr.Get})
			done := bytes.Contains(poll.Body, []byte(`"status":"completed"`))
			poll.Release()
			if done {
				break
			}
		}
	}
	b.ReportMetric(float64(polls)/float64(b.N), "polls/op")
}

// BenchmarkJobSyncBaseline is the same capability answered synchronously,
// the floor the job adds to.
func BenchmarkJobSyncBaseline(b *testing.B) {
	h, err := httpx.New(longExecutor(b, quickSync), httpx.Config{Verifier: bearerName})
	if err != nil {
		b.Fatal(err)
	}
	hdr := http.Header{"Authorization": {"Bearer alice"}, "Content-Type": {jsonType}}
	body := []byte(`{"capability":"quick_sync"}`)
	b.ReportAllocs()
	for b.Loop() {
		h.Serve(&httpx.Request{Method: "POST", Path: "capability/execute", Header: hdr.Get, Body: body}).Release()
	}
}
