package client

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func FuzzDecodeErrorObject(f *testing.F) {
	f.Add([]byte(`{"error":"constraint_violated","message":"no","violations":[{"field":"amount","constraint":{"max":1},"actual":2}]}`))
	f.Add([]byte(`{"code":"VALIDATION_ERROR","message":3}`))
	f.Add([]byte(`{"error":{"nested":true},"retry_after":"5"}`))
	f.Add([]byte(`not json`))
	f.Add([]byte(`{"error":"invalid_request","errors":[{"path":"/a","message":"m"}],"preview":{"n":1}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		e := parseError(429, nil, body, time.Unix(0, 0))
		if e.Status != 429 || e.Error() == "" {
			t.Fatalf("status %d, message %q", e.Status, e.Error())
		}
		if e.RetryAfter < 0 || e.RetryAfter > maxRetryAfter {
			t.Fatalf("retry after %v", e.RetryAfter)
		}
		for k := range e.Fields {
			if namedMembers[k] {
				t.Fatalf("member %q both named and in Fields", k)
			}
		}
	})
}

func FuzzEventReader(f *testing.F) {
	f.Add("event: data\ndata: {\"n\":1}\n\nevent: done\n\n")
	f.Add("data: a\r\ndata: b\r\n\r\n: comment\rid: 1\r\r")
	f.Add("data")
	f.Fuzz(func(t *testing.T, stream string) {
		r := newEventReader(strings.NewReader(stream))
		for range len(stream) + 1 {
			ev, err := r.next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "longer than") {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if ev.Type == "" {
				t.Fatal("event without a type")
			}
			if strings.ContainsAny(ev.Type, "\r\n") || strings.ContainsAny(ev.ID, "\r\n") {
				t.Fatalf("line break inside a field: %+v", ev)
			}
		}
		t.Fatal("more events than bytes")
	})
}

func FuzzCacheLifetime(f *testing.F) {
	f.Add("public, max-age=300")
	f.Add("no-store")
	f.Add(`max-age="99999999999999999999"`)
	f.Fuzz(func(t *testing.T, cc string) {
		d := cacheLifetime(cc)
		if d < 0 || d > maxDiscoveryAge {
			t.Fatalf("lifetime %v for %q", d, cc)
		}
	})
}

func TestEventReaderLimits(t *testing.T) {
	small := func(stream string) *eventReader {
		r := newEventReader(strings.NewReader(stream))
		r.maxLine, r.maxData = 64, 100
		return r
	}
	if _, err := small("data: " + strings.Repeat("x", 65) + "\n\n").next(); err == nil || !strings.Contains(err.Error(), "line longer than 64") {
		t.Errorf("over-long line: err = %v", err)
	}
	if _, err := small(strings.Repeat("data: "+strings.Repeat("y", 40)+"\n", 3) + "\n").next(); err == nil || !strings.Contains(err.Error(), "data longer than 100") {
		t.Errorf("over-long event: err = %v", err)
	}
	ev, err := small(strings.Repeat("data: "+strings.Repeat("y", 40)+"\n", 2) + "\n").next()
	if err != nil || len(ev.Data) != 81 {
		t.Errorf("event within the limits: %d bytes, %v", len(ev.Data), err)
	}
	if newEventReader(strings.NewReader("")).maxData != maxEventData {
		t.Error("default data limit")
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"5", 5 * time.Second, true},
		{"0.5", 500 * time.Millisecond, true},
		{"-1", 0, false},
		{"", 0, false},
		{"Thu, 01 Jan 2026 00:00:10 GMT", 10 * time.Second, true},
		{"Wed, 31 Dec 2025 23:00:00 GMT", 0, true},
		{"999999999", 0, false},
		{"soon", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
