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

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
)

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

// auditEvents lists the event and outcome of each record.
func auditEvents(recs []core.AuditRecord) string {
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
	e := mustExec(t, core.Config{TracerProvider: tp, Audit: core.AuditConfig{Writer: log}},
		audited, echoCap)
	if !e.Audits() {
		t.Fatal("Audits() = false with a writer")
	}
	ctx := core.WithRequestInfo(context.Background(), core.RequestInfo{ID: "req-7", ClientIP: "192.0.2.9"})
	const secret = "acct-SECRET-1"
	args := `{"source_account":"` + secret + `", "destination_account":"b","amount":5.0,"currency":"USD"}`
	canonical := `{"amount":5,"currency":"USD","destination_account":"b","source_account":"` + secret + `"}`
	if _, err := e.Execute(ctx, "transfer_money", caller("ann"), []byte(args)); err != nil {
		t.Fatal(err)
	}
	refused := authorizedBy(caller("ann"), func(context.Context, *auth.Call) error { return errors.New("no") })
	if _, err := e.Execute(ctx, "transfer_money", refused, []byte(args)); err == nil {
		t.Fatal("refused call ran")
	}
	if _, err := e.Execute(ctx, "transfer_money", caller("ann"), []byte(`{"amount":"`+secret+`"}`)); err == nil {
		t.Fatal("invalid input accepted")
	}
	if _, err := e.Execute(ctx, "no_such_"+secret, caller("ann"), []byte(args)); err == nil {
		t.Fatal("unknown capability ran")
	}
	// A typed call digests its encoded input: the same digest as the
	// same arguments sent as JSON.
	in := transferIn{Source: secret, Destination: "b", Amount: 5, Currency: "USD"}
	if _, err := core.Call(context.Background(), e, audited, caller("bob"), in); err != nil {
		t.Fatal(err)
	}

	recs := log.take()
	if got, want := auditEvents(recs), "money.transfer:ok money.transfer:unauthorized money.transfer:invalid_request money.transfer:ok"; got != want {
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
		if actorOf(r) != (actor{AgentID: "agt_ann", HostID: "hst_1", UserID: "ann"}) || r.RequestID != "req-7" || r.ClientIP != "192.0.2.9" {
			t.Errorf("record %d: actor %+v, request %q, client %q", i, actorOf(r), r.RequestID, r.ClientIP)
		}
	}
	if recs[0].ArgumentsDigest != sha256Hex(canonical) || recs[1].ArgumentsDigest != recs[0].ArgumentsDigest {
		t.Errorf("digest %s, want the SHA-256 of %s", recs[0].ArgumentsDigest, canonical)
	}
	if recs[2].ArgumentsDigest != sha256Hex(`{"amount":"`+secret+`"}`) {
		t.Errorf("digest of invalid input = %s", recs[2].ArgumentsDigest)
	}
	typed := recs[3]
	if typed.ArgumentsDigest != recs[0].ArgumentsDigest || actorOf(typed) != (actor{AgentID: "agt_bob", HostID: "hst_1", UserID: "bob"}) || typed.RequestID != "" {
		t.Errorf("typed call record: %+v", typed)
	}
}

// actor is who acted, as an audit record names them.
type actor struct{ AgentID, HostID, UserID string }

func actorOf(r core.AuditRecord) actor { return actor{r.AgentID, r.HostID, r.UserID} }

// TestAuditRecordsNameTheIdentity: a record takes the agent, host and
// user from the caller's identity, and no more; a call without an
// identity names nobody.
func TestAuditRecordsNameTheIdentity(t *testing.T) {
	log := &auditLog{}
	e := mustExecWith(t, anyContext, core.Config{Audit: core.AuditConfig{Writer: log}}, echoCap)
	ctx := context.Background()
	ids := []*auth.Identity{
		{Subject: "sub_1", AgentID: "agt_1", HostID: "hst_1", UserID: "usr_1", Claims: "claims"},
		// An autonomous agent acts for nobody.
		{Subject: "agt_2", AgentID: "agt_2", HostID: "hst_2"},
		// A caller that is no agent: a user's session, say.
		{Subject: "usr_3", UserID: "usr_3"},
		nil,
	}
	for _, id := range ids {
		if _, err := e.Execute(ctx, "echo", id, []byte(`{"text":"hi"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := core.Call(ctx, e, echoCap, nil, echoIn{Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	want := []actor{{"agt_1", "hst_1", "usr_1"}, {"agt_2", "hst_2", ""}, {"", "", "usr_3"}, {}, {}}
	recs := log.take()
	var got []actor
	for _, r := range recs {
		got = append(got, actorOf(r))
		if strings.Contains(fmt.Sprintf("%+v", r), "sub_1") || strings.Contains(fmt.Sprintf("%+v", r), "claims") {
			t.Errorf("a record holds more of the identity than its names: %+v", r)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("actors (-want +got):\n%s", diff)
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
	e := mustExec(t, core.Config{
		Confirmation: core.ConfirmationConfig{Confirmer: m},
		Audit:        core.AuditConfig{Writer: log},
	}, pay)
	ann := caller("ann")
	args := []byte(`{"to":"bob","amount":30}`)

	res, err := e.Preview(ctx, "pay", ann, args)
	if err != nil {
		t.Fatal(err)
	}
	recs := log.take()
	if got := auditEvents(recs); got != "confirmation.issued:ok preview:ok" {
		t.Fatalf("preview records: %s", got)
	}
	for _, r := range recs {
		if r.ConfirmationID != res.Confirmation.ID || r.Capability != "pay" || r.ArgumentsDigest != sha256Hex(`{"amount":30,"to":"bob"}`) ||
			actorOf(r) != (actor{AgentID: "agt_ann", HostID: "hst_1", UserID: "ann"}) {
			t.Errorf("preview record %+v", r)
		}
	}
	if recs[0].Duration != 0 || recs[1].Duration <= 0 {
		t.Errorf("durations %v %v", recs[0].Duration, recs[1].Duration)
	}

	// Without a token: a fresh one is issued and the call refused.
	_, err = e.Execute(ctx, "pay", ann, args)
	if codeOf(err) != agentcap.CodeConfirmationRequired {
		t.Fatalf("err = %v", err)
	}
	recs = log.take()
	if got := auditEvents(recs); got != "confirmation.issued:ok pay:confirmation_required" || recs[0].ConfirmationID == "" ||
		recs[1].ConfirmationID != recs[0].ConfirmationID {
		t.Fatalf("records %s: %+v", got, recs)
	}

	token := res.Confirmation.Token
	if _, err := e.Execute(core.WithConfirmationToken(ctx, token), "pay", ann, args); err != nil {
		t.Fatal(err)
	}
	recs = log.take()
	if got := auditEvents(recs); got != "confirmation.consumed:ok pay:ok" {
		t.Fatalf("records %s", got)
	}
	for _, r := range recs {
		if r.ConfirmationID != confirm.TokenID(token) {
			t.Errorf("record %s names confirmation %q, want %q", r.Event, r.ConfirmationID, confirm.TokenID(token))
		}
	}

	// The spent token again: refused, and recorded as such.
	if _, err := e.Execute(core.WithConfirmationToken(ctx, token), "pay", ann, args); codeOf(err) != agentcap.CodeConfirmationUsed {
		t.Fatalf("err = %v", err)
	}
	if got := auditEvents(log.take()); got != "confirmation.denied:confirmation_used pay:confirmation_used" {
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
	if _, err := core.NewExecutor(core.MustRegistry(guarded), createContext, core.Config{}); err == nil ||
		!strings.Contains(err.Error(), "Audit.Writer") {
		t.Fatalf("NewExecutor without a writer: %v", err)
	}

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	var logged bytes.Buffer
	down := errors.New("store down")
	log := &auditLog{}
	e := mustExec(t, core.Config{
		MeterProvider: mp,
		Logger:        slog.New(slog.NewTextHandler(&logged, nil)),
		Audit:         core.AuditConfig{Writer: log},
	}, guarded, echoCap)
	if _, err := e.Execute(ctx, "guarded", caller("ann"), []byte(`{"text":"a"}`)); err != nil {
		t.Fatal(err)
	}
	if got := auditEvents(log.take()); got != "guarded:started guarded:ok" {
		t.Fatalf("records %s", got)
	}
	// A refused call writes no start record.
	if _, err := e.Execute(ctx, "guarded", nil, []byte(`{"text":"a"}`)); err == nil {
		t.Fatal("a call without a user ran")
	}
	if got := auditEvents(log.take()); got != "guarded:no_user" {
		t.Fatalf("records %s", got)
	}

	// The store goes down: the guarded call is refused before its
	// handler; a call of another capability runs, and its lost record is
	// counted and logged.
	log.fail = func(core.AuditRecord) error { return down }
	_, err := e.Execute(ctx, "guarded", caller("ann"), []byte(`{"text":"b"}`))
	ce := coreErr(t, err)
	if ce.Code != agentcap.CodeAuditUnavailable || ce.Stage != agentcap.StageAudit || ce.HTTPStatus() != http.StatusServiceUnavailable ||
		string(ce.Code) != "audit_unavailable" || strings.Contains(ce.Message, "store down") || !errors.Is(err, down) {
		t.Fatalf("err = %v (status %d)", err, ce.HTTPStatus())
	}
	if runs != 1 {
		t.Fatalf("the handler ran without a start record: runs = %d", runs)
	}
	if _, err := e.Execute(ctx, "echo", caller("ann"), []byte(`{"text":"c"}`)); err != nil {
		t.Fatalf("an audit failure failed a call: %v", err)
	}
	// A writer that panics is a failure like any other.
	log.fail = func(core.AuditRecord) error { panic("writer bug") }
	if _, err := e.Execute(ctx, "echo", caller("ann"), []byte(`{"text":"d"}`)); err != nil {
		t.Fatalf("a panicking writer failed a call: %v", err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	failures := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "agentcap.audit.failures" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				c, _ := dp.Attributes.Value(attribute.Key("agentcap.capability"))
				ev, _ := dp.Attributes.Value(attribute.Key("agentcap.audit.event"))
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
	e := mustExec(t, core.Config{Audit: core.AuditConfig{Writer: log}}, echoCap)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Execute(ctx, "echo", caller("ann"), []byte(`{"text":"a"}`)); codeOf(err) != agentcap.CodeCancelled {
		t.Fatalf("err = %v", err)
	}
	if got := auditEvents(log.take()); got != "echo:cancelled" {
		t.Fatalf("records %q: the canceled call's record was not written", got)
	}
}

func TestAuditArgumentsRedacted(t *testing.T) {
	ctx := context.Background()
	handler := func(_ context.Context, _ app, in cardPayIn) (payOut, error) { return payOut{Paid: in.Amount}, nil }
	log := &auditLog{}
	e := mustExec(t, core.Config{Audit: core.AuditConfig{Writer: log}},
		core.MustDefine("card_pay", "Pay by card", handler, core.WithAuditArguments()),
		core.MustDefine("card_pay_quiet", "Pay by card", handler),
		core.MustDefine("echo_kept", "Echo", func(_ context.Context, _ app, in echoIn) (echoOut, error) {
			return echoOut{Text: in.Text}, nil
		}, core.WithAuditArguments()))
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
		_, _ = e.Execute(ctx, tt.capability, caller("ann"), []byte(tt.args))
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
