package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap/audit"
)

func TestSlogSink(t *testing.T) {
	var buf bytes.Buffer
	sink := audit.NewSlogSink(slog.New(slog.NewJSONHandler(&buf, nil)), slog.LevelInfo)
	err := sink.Write(context.Background(), audit.Record{Event: "transfer", Outcome: "ok", UserID: "alice",
		Duration: 2 * time.Millisecond, Arguments: json.RawMessage(`{"pin":"[redacted]"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var line struct {
		Msg   string         `json:"msg"`
		Audit map[string]any `json:"audit"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%q: %v", buf.String(), err)
	}
	a := line.Audit
	if line.Msg != "audit" || a["event"] != "transfer" || a["user_id"] != "alice" || a["id"] == "" ||
		a["arguments"] != `{"pin":"[redacted]"}` || a["duration"] == nil {
		t.Errorf("logged %s", buf.String())
	}
	if _, ok := a["agent_id"]; ok {
		t.Errorf("empty field logged: %s", buf.String())
	}
	if err := sink.Write(context.Background(), audit.Record{Event: "e"}); err == nil {
		t.Error("record without an outcome accepted")
	}
}

type failing struct{}

func (failing) Write(context.Context, audit.Record) error { return errors.New("down") }

func TestTee(t *testing.T) {
	a, b := audit.NewMemory(nil), audit.NewMemory(nil)
	if err := audit.Tee(a, b).Write(context.Background(), audit.Record{Event: "e", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	pa, _ := a.Query(context.Background(), audit.Query{})
	pb, _ := b.Query(context.Background(), audit.Query{})
	if len(pa.Records) != 1 || len(pb.Records) != 1 || pa.Records[0].ID != pb.Records[0].ID || !pa.Records[0].Time.Equal(pb.Records[0].Time) {
		t.Fatalf("sinks disagree: %+v %+v", pa.Records, pb.Records)
	}
	c := audit.NewMemory(nil)
	err := audit.Tee(failing{}, c).Write(context.Background(), audit.Record{Event: "e", Outcome: "ok"})
	if err == nil || !strings.Contains(err.Error(), "down") {
		t.Errorf("a failing sink: %v", err)
	}
	if pc, _ := c.Query(context.Background(), audit.Query{}); len(pc.Records) != 1 {
		t.Error("the other sinks were not tried")
	}
}

func TestCursor(t *testing.T) {
	p := audit.Position{Time: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), ID: "a:b"}
	got, err := audit.DecodeCursor(audit.EncodeCursor(p))
	if err != nil || !got.Time.Equal(p.Time) || got.ID != p.ID {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "!!", "eA", "MTI6"} {
		if _, err := audit.DecodeCursor(bad); !errors.Is(err, audit.ErrInvalidCursor) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestRetention(t *testing.T) {
	m := audit.NewMemory(nil)
	ctx, cancel := context.WithCancel(context.Background())
	old := time.Now().Add(-48 * time.Hour)
	_ = m.Write(ctx, audit.Record{Time: old, Event: "e", Outcome: "ok"})
	_ = m.Write(ctx, audit.Record{Event: "e", Outcome: "ok"})
	done := make(chan struct{})
	reports := make(chan int64, 1)
	go func() {
		defer close(done)
		audit.Retention(ctx, m, 24*time.Hour, time.Hour, func(n int64, err error) {
			if err != nil {
				t.Error(err)
			}
			select {
			case reports <- n:
			default:
			}
		})
	}()
	if n := <-reports; n != 1 {
		t.Errorf("first sweep deleted %d, want 1", n)
	}
	cancel()
	<-done
	if p, _ := m.Query(context.Background(), audit.Query{}); len(p.Records) != 1 {
		t.Errorf("%d records left, want 1", len(p.Records))
	}
}
