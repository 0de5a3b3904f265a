package core_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
)

// AuditActor makes user an AuditPrincipal, so that executors without
// AuditConfig.Actor name the test users.
func (u user) AuditActor() core.AuditActor {
	return core.AuditActor{AgentID: "agt_" + u.ID, HostID: "hst_1", UserID: u.ID}
}

// auditLog is an AuditWriter keeping records in memory; fail, when set,
// decides which writes fail.
type auditLog struct {
	mu   sync.Mutex
	recs []core.AuditRecord
	fail func(r core.AuditRecord) error
}

func (l *auditLog) WriteAudit(ctx context.Context, r core.AuditRecord) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("write under a finished context: %w", err)
	}
	if l.fail != nil {
		if err := l.fail(r); err != nil {
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r)
	return nil
}

func (l *auditLog) take() []core.AuditRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	recs := l.recs
	l.recs = nil
	return recs
}

// events lists the event and outcome of each record.
func events(recs []core.AuditRecord) string {
	parts := make([]string, len(recs))
	for i, r := range recs {
		parts[i] = r.Event + ":" + r.Outcome
	}
	return strings.Join(parts, " ")
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

var echoCap = core.MustDefine("echo", "Echo.", func(_ context.Context, a app, in echoIn) (echoOut, error) {
	return echoOut{Text: in.Text, User: a.User}, nil
})

type secretCard struct {
	Number string `json:"number" audit:"secret"`
	Holder string `json:"holder"`
}

type cardPayIn struct {
	Amount int          `json:"amount"`
	PIN    string       `json:"pin" audit:"secret"`
	Cards  []secretCard `json:"cards"`
}

func TestAuditRecordsExecutions(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	log := &auditLog{}
	audited := core.MustDefine("transfer_money", "Move money", transfer, core.WithAuditEvent("money.transfer"))
	e := mustExec(t, core.ExecutorConfig[app, user]{TracerProvider: tp, Audit: core.AuditConfig[user]{Writer: log}},
		audited, echoCap)
	if d, _ := e.Registry().Lookup("transfer_money"); d.AuditEvent() != "money.transfer" || d.AuditRequired() || d.AuditArguments() {
		t.Fatalf("definition: event %q, required %v, arguments %v", d.AuditEvent(), d.AuditRequired(), d.AuditArguments())
	}
	if d, _ := e.Registry().Lookup("echo"); d.AuditEvent() != "echo" {
		t.Fatalf("default event = %q, want the capability's name", d.AuditEvent())
	}
	if !e.Audits() {
		t.Fatal("Audits() = false with a writer")
	}
	ctx := core.WithRequestInfo(context.Background(), core.RequestInfo{ID: "req-7", ClientIP: "192.0.2.9"})
	const secret = "acct-SECRET-1"
	args := `{"source_account":"` + secret + `", "destination_account":"b","amount":5.0,"currency":"USD"}`
	canonical := `{"amount":5,"currency":"USD","destination_account":"b","source_account":"` + secret + `"}`
	if _, err := e.ExecuteDynamic(ctx, "transfer_money", user{ID: "ann"}, []byte(args), nil); err != nil {
		t.Fatal(err)
	}
	refuse := func(context.Context, *core.Invocation) error { return errors.New("no") }
	if _, err := e.ExecuteDynamic(ctx, "transfer_money", user{ID: "ann"}, []byte(args), refuse); err == nil {
		t.Fatal("refused call ran")
	}
	if _, err := e.ExecuteDynamic(ctx, "transfer_money", user{ID: "ann"}, []byte(`{"amount":"`+secret+`"}`), nil); err == nil {
		t.Fatal("invalid input accepted")
	}
	if _, err := e.ExecuteDynamic(ctx, "no_such_"+secret, user{ID: "ann"}, []byte(args), nil); err == nil {
		t.Fatal("unknown capability ran")
	}
	// A typed call digests its encoded input: the same digest as the
	// same arguments sent as JSON.
	in := transferIn{Source: secret, Destination: "b", Amount: 5, Currency: "USD"}
	if _, err := core.Execute(context.Background(), e, audited, user{ID: "bob"}, in); err != nil {
		t.Fatal(err)
	}

	recs := log.take()
	if got, want := events(recs), "money.transfer:ok money.transfer:forbidden money.transfer:invalid_input money.transfer:ok"; got != want {
		t.Fatalf("records %s, want %s", got, want)
	}
	// Span 3 is the unknown capability's, which has no record.
	ended := spans.Ended()
	spanOf := []int{0, 1, 2, 4}
	for i, r := range recs {
		if r.Capability != "transfer_money" || r.Time.IsZero() || r.Duration <= 0 || r.Arguments != nil || r.ConfirmationID != "" {
			t.Errorf("record %d: %+v", i, r)
		}
		if dump := fmt.Sprintf("%+v", r); strings.Contains(dump, "SECRET") {
			t.Errorf("record %d holds raw arguments: %s", i, dump)
		}
		if sc := ended[spanOf[i]].SpanContext(); r.TraceID != sc.TraceID().String() {
			t.Errorf("record %d trace %q, span's %s", i, r.TraceID, sc.TraceID())
		}
	}
	for i, r := range recs[:3] {
		if r.Actor != (core.AuditActor{AgentID: "agt_ann", HostID: "hst_1", UserID: "ann"}) || r.RequestID != "req-7" || r.ClientIP != "192.0.2.9" {
			t.Errorf("record %d: actor %+v, request %q, client %q", i, r.Actor, r.RequestID, r.ClientIP)
		}
	}
	if recs[0].ArgumentsDigest != sha256Hex(canonical) || recs[1].ArgumentsDigest != recs[0].ArgumentsDigest {
		t.Errorf("digest %s, want the SHA-256 of %s", recs[0].ArgumentsDigest, canonical)
	}
	if recs[2].ArgumentsDigest != sha256Hex(`{"amount":"`+secret+`"}`) {
		t.Errorf("digest of invalid input = %s", recs[2].ArgumentsDigest)
	}
	typed := recs[3]
	if typed.ArgumentsDigest != recs[0].ArgumentsDigest || typed.Actor.UserID != "bob" || typed.RequestID != "" {
		t.Errorf("typed call record: %+v", typed)
	}
}

func TestAuditActorOverridesPrincipal(t *testing.T) {
	log := &auditLog{}
	e := mustExec(t, core.ExecutorConfig[app, user]{Audit: core.AuditConfig[user]{Writer: log,
		Actor: func(u user) core.AuditActor { return core.AuditActor{UserID: "u:" + u.ID} }}}, echoCap)
	if _, err := e.ExecuteDynamic(context.Background(), "echo", user{ID: "ann"}, []byte(`{"text":"hi"}`), nil); err != nil {
		t.Fatal(err)
	}
	if recs := log.take(); len(recs) != 1 || recs[0].Actor != (core.AuditActor{UserID: "u:ann"}) {
		t.Fatalf("records %+v", recs)
	}
}

func TestAuditConfirmations(t *testing.T) {
	ctx := context.Background()
	runs := 0
	pay := core.MustDefine("pay", "Pay someone",
		func(_ context.Context, _ app, in payIn) (payOut, error) { runs++; return payOut{Paid: in.Amount}, nil },
		core.WithRisk(core.RiskHigh),
		core.WithPreview(func(_ context.Context, _ app, in payIn) (payPreview, error) {
			return payPreview{To: in.To, Amount: in.Amount}, nil
		}))
	m, err := confirm.New(confirm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	log := &auditLog{}
	e := mustExec(t, core.ExecutorConfig[app, user]{
		Confirmation: core.ConfirmationConfig[user]{Confirmer: m, Subject: func(u user) string { return u.ID }},
		Audit:        core.AuditConfig[user]{Writer: log},
	}, pay)
	ann := user{ID: "ann"}
	args := []byte(`{"to":"bob","amount":30}`)

	res, err := e.PreviewDynamic(ctx, "pay", ann, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := log.take()
	if got := events(recs); got != "confirmation.issued:ok preview:ok" {
		t.Fatalf("preview records: %s", got)
	}
	for _, r := range recs {
		if r.ConfirmationID != res.Confirmation.ID || r.Capability != "pay" || r.ArgumentsDigest != sha256Hex(`{"amount":30,"to":"bob"}`) {
			t.Errorf("preview record %+v", r)
		}
	}
	if recs[0].Duration != 0 || recs[1].Duration <= 0 {
		t.Errorf("durations %v %v", recs[0].Duration, recs[1].Duration)
	}

	// Without a token: a fresh one is issued and the call refused.
	_, err = e.ExecuteDynamic(ctx, "pay", ann, args, nil)
	if codeOf(err) != core.CodeConfirmationRequired {
		t.Fatalf("err = %v", err)
	}
	recs = log.take()
	if got := events(recs); got != "confirmation.issued:ok pay:confirmation_required" || recs[0].ConfirmationID == "" ||
		recs[1].ConfirmationID != recs[0].ConfirmationID {
		t.Fatalf("records %s: %+v", got, recs)
	}

	token := res.Confirmation.Token
	if _, err := e.ExecuteDynamic(core.WithConfirmationToken(ctx, token), "pay", ann, args, nil); err != nil {
		t.Fatal(err)
	}
	recs = log.take()
	if got := events(recs); got != "confirmation.consumed:ok pay:ok" {
		t.Fatalf("records %s", got)
	}
	for _, r := range recs {
		if r.ConfirmationID != confirm.TokenID(token) {
			t.Errorf("record %s names confirmation %q, want %q", r.Event, r.ConfirmationID, confirm.TokenID(token))
		}
	}

	// The spent token again: refused, and recorded as such.
	if _, err := e.ExecuteDynamic(core.WithConfirmationToken(ctx, token), "pay", ann, args, nil); codeOf(err) != core.CodeConfirmationUsed {
		t.Fatalf("err = %v", err)
	}
	if got := events(log.take()); got != "confirmation.denied:confirmation_used pay:confirmation_used" {
		t.Fatalf("records %s", got)
	}
	if runs != 1 {
		t.Fatalf("runs = %d", runs)
	}
}

func TestAuditRequired(t *testing.T) {
	ctx := context.Background()
	runs := 0
	guarded := core.MustDefine("guarded", "Needs a trail",
		func(_ context.Context, _ app, in echoIn) (echoOut, error) { runs++; return echoOut{Text: in.Text}, nil },
		core.WithAuditRequired())
	if _, err := core.NewExecutor(core.MustRegistry(guarded), core.ExecutorConfig[app, user]{CreateContext: createContext}); err == nil ||
		!strings.Contains(err.Error(), "Audit.Writer") {
		t.Fatalf("NewExecutor without a writer: %v", err)
	}

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	var logged bytes.Buffer
	down := errors.New("store down")
	log := &auditLog{}
	e := mustExec(t, core.ExecutorConfig[app, user]{
		MeterProvider: mp,
		Logger:        slog.New(slog.NewTextHandler(&logged, nil)),
		Audit:         core.AuditConfig[user]{Writer: log},
	}, guarded, echoCap)
	if d, _ := e.Registry().Lookup("guarded"); !d.AuditRequired() {
		t.Fatal("AuditRequired() = false")
	}
	if _, err := e.ExecuteDynamic(ctx, "guarded", user{ID: "ann"}, []byte(`{"text":"a"}`), nil); err != nil {
		t.Fatal(err)
	}
	if got := events(log.take()); got != "guarded:started guarded:ok" {
		t.Fatalf("records %s", got)
	}
	// A refused call writes no start record.
	if _, err := e.ExecuteDynamic(ctx, "guarded", user{}, []byte(`{"text":"a"}`), nil); err == nil {
		t.Fatal("a call without a user ran")
	}
	if got := events(log.take()); got != "guarded:no_user" {
		t.Fatalf("records %s", got)
	}

	// The store goes down: the guarded call is refused before its
	// handler; a call of another capability runs, and its lost record is
	// counted and logged.
	log.fail = func(core.AuditRecord) error { return down }
	_, err := e.ExecuteDynamic(ctx, "guarded", user{ID: "ann"}, []byte(`{"text":"b"}`), nil)
	ce := coreErr(t, err)
	if ce.Code != core.CodeAuditUnavailable || ce.Stage != core.StageAudit || ce.HTTPStatus() != http.StatusServiceUnavailable ||
		ce.WireCode() != "audit_unavailable" || !errors.Is(err, down) {
		t.Fatalf("err = %v (status %d, wire %s)", err, ce.HTTPStatus(), ce.WireCode())
	}
	if runs != 1 {
		t.Fatalf("the handler ran without a start record: runs = %d", runs)
	}
	if _, err := e.ExecuteDynamic(ctx, "echo", user{ID: "ann"}, []byte(`{"text":"c"}`), nil); err != nil {
		t.Fatalf("an audit failure failed a call: %v", err)
	}
	// A writer that panics is a failure like any other.
	log.fail = func(core.AuditRecord) error { panic("writer bug") }
	if _, err := e.ExecuteDynamic(ctx, "echo", user{ID: "ann"}, []byte(`{"text":"d"}`), nil); err != nil {
		t.Fatalf("a panicking writer failed a call: %v", err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	failures := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != core.MetricAuditFailures {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				c, _ := dp.Attributes.Value(core.AttrCapability)
				ev, _ := dp.Attributes.Value(core.AttrAuditEvent)
				failures[c.AsString()+"/"+ev.AsString()] += dp.Value
			}
		}
	}
	// guarded: the start record and the end record; echo: two ends.
	if fmt.Sprint(failures) != "map[echo/echo:2 guarded/guarded:2]" {
		t.Errorf("failures counted: %v", failures)
	}
	if n := strings.Count(logged.String(), "audit record not written"); n != 4 || !strings.Contains(logged.String(), "store down") {
		t.Errorf("logged %d failures:\n%s", n, logged.String())
	}
}

func TestAuditWritesOutliveTheCall(t *testing.T) {
	log := &auditLog{}
	e := mustExec(t, core.ExecutorConfig[app, user]{Audit: core.AuditConfig[user]{Writer: log}}, echoCap)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.ExecuteDynamic(ctx, "echo", user{ID: "ann"}, []byte(`{"text":"a"}`), nil); codeOf(err) != core.CodeCanceled {
		t.Fatalf("err = %v", err)
	}
	if got := events(log.take()); got != "echo:canceled" {
		t.Fatalf("records %q: the canceled call's record was not written", got)
	}
}

func TestAuditArgumentsRedacted(t *testing.T) {
	ctx := context.Background()
	handler := func(_ context.Context, _ app, in cardPayIn) (payOut, error) { return payOut{Paid: in.Amount}, nil }
	log := &auditLog{}
	e := mustExec(t, core.ExecutorConfig[app, user]{Audit: core.AuditConfig[user]{Writer: log}},
		core.MustDefine("card_pay", "Pay by card", handler, core.WithAuditArguments()),
		core.MustDefine("card_pay_quiet", "Pay by card", handler),
		core.MustDefine("echo_kept", "Echo", func(_ context.Context, _ app, in echoIn) (echoOut, error) {
			return echoOut{Text: in.Text}, nil
		}, core.WithAuditArguments()))
	if d, _ := e.Registry().Lookup("card_pay"); !d.AuditArguments() {
		t.Fatal("AuditArguments() = false")
	}
	args := []byte(`{"amount":12,"pin":"PIN-SECRET","cards":[{"number":"NUM-SECRET","holder":"Ann"}]}`)
	tests := []struct {
		capability string
		args       string
		want       string
	}{
		{"card_pay", string(args), `{"amount":12,"cards":[{"holder":"Ann","number":"[redacted]"}],"pin":"[redacted]"}`},
		{"card_pay_quiet", string(args), ""},
		{"echo_kept", `{"text":"kept as sent"}`, `{"text":"kept as sent"}`},
		// Input that fails validation is not kept.
		{"card_pay", `{"amount":"PIN-SECRET"}`, ""},
	}
	for _, tt := range tests {
		_, _ = e.ExecuteDynamic(ctx, tt.capability, user{ID: "ann"}, []byte(tt.args), nil)
		recs := log.take()
		if len(recs) != 1 {
			t.Fatalf("%s: %d records", tt.capability, len(recs))
		}
		if got := string(recs[0].Arguments); got != tt.want {
			t.Errorf("%s %s: arguments %s, want %s", tt.capability, tt.args, got, tt.want)
		}
		if strings.Contains(fmt.Sprintf("%+v", recs[0]), "SECRET") {
			t.Errorf("%s: a secret reached the record", tt.capability)
		}
	}
}

func TestAuditEventName(t *testing.T) {
	for _, name := range []string{"", "Bad Name", "a..b"} {
		_, err := core.Define("x", "x", func(context.Context, app, echoIn) (echoOut, error) { return echoOut{}, nil },
			core.WithAuditEvent(name))
		if name == "" {
			if err != nil {
				t.Errorf("empty event (the default): %v", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "audit event") {
			t.Errorf("event %q: err = %v", name, err)
		}
	}
}
