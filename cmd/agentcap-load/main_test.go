package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap/cmd/agentcap-load/internal/loadgen"
)

// startBank builds the example bank and runs it with args (plus -addr
// and -issuer) on a free loopback port until the test ends. It returns
// the bank's URL.
func startBank(t *testing.T, args ...string) string {
	t.Helper()
	url, _ := startBankProcess(t, args...)
	return url
}

// startBankProcess is startBank, returning the process too.
func startBankProcess(t *testing.T, args ...string) (string, *os.Process) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bank")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/bank").CombinedOutput(); err != nil {
		t.Fatalf("building the bank: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	url := "http://" + addr
	var logs bytes.Buffer
	cmd := exec.Command(bin, append([]string{"-addr", addr, "-issuer", url}, args...)...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("bank logs:\n%s", logs.String())
		}
	})
	for range 300 {
		if resp, err := http.Get(url + "/.well-known/agent-configuration"); err == nil {
			resp.Body.Close()
			return url, cmd.Process
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the bank did not start")
	return "", nil
}

// load runs the command with args and returns its summary.
func load(t *testing.T, args ...string) *loadgen.Summary {
	t.Helper()
	out := filepath.Join(t.TempDir(), "summary.json")
	var stderr bytes.Buffer
	if code := run(append(args, "-out", out, "-seed", "7"), &bytes.Buffer{}, &stderr); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var s loadgen.Summary
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", stderr.String())
	return &s
}

// checkSummary holds a run to what every kind should get.
func checkSummary(t *testing.T, s *loadgen.Summary, kinds ...string) {
	t.Helper()
	for _, k := range kinds {
		ks := s.Kinds[k]
		if ks == nil || ks.Requests == 0 {
			t.Errorf("no %s requests", k)
			continue
		}
		if ks.Unexpected != 0 {
			t.Errorf("%s: %d unexpected answers: %v %v", k, ks.Unexpected, ks.Status, ks.Samples)
		}
		if ks.Latency.P50 <= 0 || ks.Latency.Max < ks.Latency.P99 || ks.Latency.P99 < ks.Latency.P50 {
			t.Errorf("%s: latencies %+v", k, ks.Latency)
		}
	}
	for _, k := range []string{loadgen.KindInvalid, loadgen.KindReplay} {
		if ks := s.Kinds[k]; ks != nil && ks.Codes["invalid_jwt"] != ks.Requests {
			t.Errorf("%s: codes %v", k, ks.Codes)
		}
	}
	tr := s.Transfers
	if tr.Acknowledged == 0 || tr.Acknowledged != len(tr.Acks) || tr.Uncertain != 0 ||
		tr.Started != tr.Acknowledged+tr.Abandoned+sum(tr.Refused) {
		t.Errorf("transfers: %+v", tr)
	}
	ids := map[string]bool{}
	for _, a := range tr.Acks {
		if !strings.HasPrefix(a.TransferID, "tr_") || ids[a.TransferID] || a.Key == "" {
			t.Errorf("acknowledged transfer %+v (twice: %v)", a, ids[a.TransferID])
		}
		ids[a.TransferID] = true
	}
	if s.Requests != s.All.Requests || s.Throughput <= 0 {
		t.Errorf("summary %d requests, %.1f/s", s.Requests, s.Throughput)
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestProviderMode registers agents through the bank as its own provider
// (approving them on its page) and sends every kind of request at a
// fixed rate.
func TestProviderMode(t *testing.T) {
	url := startBank(t, "-db", "bank.db", "-limits", "off", "-dev-presence-code")
	s := load(t, "-target", url, "-agents", "4", "-rate", "40", "-duration", "3s", "-resolve", "5s", "-strict")
	if s.Mode != "rate" || s.Rate != 40 || s.Agents != 4 {
		t.Errorf("summary of %s at %d/s with %d agents", s.Mode, s.Rate, s.Agents)
	}
	if s.Requests < 100 {
		t.Errorf("%d requests in 3 s at 40/s", s.Requests)
	}
	checkSummary(t, s, loadgen.KindRead, loadgen.KindBatch, loadgen.KindPreview, loadgen.KindTransfer, loadgen.KindInvalid, loadgen.KindReplay)
}

// TestDirectoryMode acts as the demo agent of the bank's directory file,
// in closed loop.
func TestDirectoryMode(t *testing.T) {
	dir, err := filepath.Abs("../../examples/bank/testdata")
	if err != nil {
		t.Fatal(err)
	}
	directory := filepath.Join(dir, "directory.example.json")
	url := startBank(t, "-directory", directory, "-limits", "off")
	s := load(t, "-target", url, "-directory", directory, "-key", "agt_alice="+filepath.Join(dir, "alice-agent.key.json"),
		"-concurrency", "4", "-duration", "2s", "-mix", "read=4,transfer=2,invalid=1,replay=1")
	if s.Mode != "concurrency" || s.Concurrency != 4 {
		t.Errorf("summary of %s at %d", s.Mode, s.Concurrency)
	}
	checkSummary(t, s, loadgen.KindRead, loadgen.KindPreview, loadgen.KindTransfer, loadgen.KindInvalid, loadgen.KindReplay)
	for _, a := range s.Transfers.Acks {
		if a.Agent != "agt_alice" || a.Source != "acc_123" || a.Destination != "acc_456" {
			t.Errorf("acknowledged %+v", a)
		}
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-target", "http://127.0.0.1:1", "-mix", "read=x"},
		{"-target", "http://127.0.0.1:1", "-mix", "write=1"},
		{"-target", "http://127.0.0.1:1", "-directory", "d.json"},
		{"-target", "http://127.0.0.1:1", "-key", "a=b"},
		{"-target", "http://127.0.0.1:1", "extra"},
	} {
		var stderr bytes.Buffer
		if code := run(args, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "usage") {
			t.Errorf("%q: exit %d\n%s", args, code, stderr.String())
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := loadgen.Run(ctx, loadgen.Options{Target: "http://127.0.0.1:1", Duration: time.Second}); err == nil {
		t.Error("Run without agents")
	}
}
