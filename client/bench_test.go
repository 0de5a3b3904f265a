package client_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/client"
)

func BenchmarkSignJWT(b *testing.B) {
	p := newFakeProvider(b)
	c, _, _ := newClient(b)
	a := connect(b, c, p, client.Capabilities("echo")...)
	caps := []string{"echo"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.SignJWT(p.Loc.Audience(), caps); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecute runs a whole execute against the test location on
// loopback: signing, the HTTP round trip, the location's verification
// and the capability. agentcap's own location is measured by the
// benchmarks of its packages.
func BenchmarkExecute(b *testing.B) {
	p := newFakeProvider(b)
	c, _, _ := newClient(b)
	a := connect(b, c, p, client.Capabilities("echo")...)
	ctx := context.Background()
	args := map[string]string{"message": "hi"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Execute(ctx, "echo", args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStream(b *testing.B) {
	var sb strings.Builder
	for range 100 {
		sb.WriteString("event: data\ndata: {\"chunk\":\"0123456789\"}\n\n")
	}
	sb.WriteString("event: done\ndata: {}\n\n")
	body := sb.String()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, err := range client.NewStream(strings.NewReader(body)).Events() {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 101 {
			b.Fatalf("%d events", n)
		}
	}
}
