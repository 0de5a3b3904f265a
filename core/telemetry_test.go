package core_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/core"
)

func TestTelemetryIsBoundedAndCarriesNoData(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	e := mustExec(t, core.Config{TracerProvider: tp, MeterProvider: mp}, transferCap)
	const secretArg, secretUser = "acct-SECRET-777", "user-SECRET-888"
	ok := []byte(`{"source_account":"` + secretArg + `","destination_account":"b","amount":99.5,"currency":"USD"}`)
	bad := []byte(`{"source_account":"` + secretArg + `","destination_account":"b","amount":-1,"currency":"USD"}`)
	if _, err := e.Execute(context.Background(), "transfer_money", caller(secretUser), ok); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Execute(context.Background(), "transfer_money", caller(secretUser), bad); err == nil {
		t.Fatal("bad input accepted")
	}
	if _, err := e.Execute(context.Background(), "caller-chosen-"+secretArg, caller(secretUser), ok); err == nil {
		t.Fatal("unknown capability accepted")
	}

	ended := spans.Ended()
	if len(ended) != 3 {
		t.Fatalf("spans = %d, want 3", len(ended))
	}
	wantNames := []string{"transfer_money", "transfer_money", "agentcap.unknown_capability"}
	wantAttrs := []map[attribute.Key]string{
		{attribute.Key("agentcap.capability"): "transfer_money", attribute.Key("agentcap.stage"): "output", attribute.Key("agentcap.outcome"): "ok"},
		{attribute.Key("agentcap.capability"): "transfer_money", attribute.Key("agentcap.stage"): "input", attribute.Key("agentcap.outcome"): "error", attribute.Key("agentcap.error_code"): "invalid_request"},
		{attribute.Key("agentcap.stage"): "lookup", attribute.Key("agentcap.outcome"): "error", attribute.Key("agentcap.error_code"): "capability_not_found"},
	}
	for i, s := range ended {
		if s.Name() != wantNames[i] {
			t.Errorf("span %d name = %q", i, s.Name())
		}
		got := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			got[kv.Key] = kv.Value.String()
		}
		if fmt.Sprint(got) != fmt.Sprint(wantAttrs[i]) {
			t.Errorf("span %d attributes = %v, want %v", i, got, wantAttrs[i])
		}
		dump := fmt.Sprintf("%v %v %v %v", s.Name(), s.Attributes(), s.Events(), s.Status())
		if strings.Contains(dump, "SECRET") || strings.Contains(dump, "99.5") {
			t.Errorf("span %d records data: %s", i, dump)
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			seen[m.Name] = true
			dump := fmt.Sprintf("%+v", m.Data)
			if strings.Contains(dump, "SECRET") {
				t.Errorf("metric %s records data: %s", m.Name, dump)
			}
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
				var total int64
				for _, dp := range sum.DataPoints {
					total += dp.Value
					if dp.Attributes.Len() > 4 {
						t.Errorf("too many attributes: %v", dp.Attributes)
					}
				}
				if total != 3 {
					t.Errorf("executions = %d, want 3", total)
				}
			}
		}
	}
	if !seen["agentcap.capability.executions"] || !seen["agentcap.capability.duration"] {
		t.Errorf("metrics = %v", seen)
	}
}

// Previews are told apart from executions by agentcap.operation=preview on
// their spans and metric points; a successful one reaches StagePreview.
func TestTelemetryOfPreviews(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	pay := core.MustDefine("pay", "Pay someone",
		func(_ context.Context, _ app, in payIn) (payOut, error) { return payOut{Paid: in.Amount}, nil },
		core.WithPreview(func(_ context.Context, _ app, in payIn) (payPreview, error) {
			return payPreview{To: in.To, Amount: in.Amount}, nil
		}))
	e := mustExec(t, core.Config{TracerProvider: tp, MeterProvider: mp}, pay)
	ctx := context.Background()
	if _, err := e.Preview(ctx, "pay", caller("a"), []byte(`{"to":"bob","amount":3}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Preview(ctx, "pay", caller("a"), []byte(`{"to":"bob","amount":"3"}`)); codeOf(err) != agentcap.CodeInvalidRequest {
		t.Fatalf("bad preview input: %v", err)
	}
	if _, err := e.Execute(ctx, "pay", caller("a"), []byte(`{"to":"bob","amount":3}`)); err != nil {
		t.Fatal(err)
	}

	want := []map[attribute.Key]string{
		{attribute.Key("agentcap.capability"): "pay", attribute.Key("agentcap.operation"): "preview", attribute.Key("agentcap.stage"): "preview", attribute.Key("agentcap.outcome"): "ok"},
		{attribute.Key("agentcap.capability"): "pay", attribute.Key("agentcap.operation"): "preview", attribute.Key("agentcap.stage"): "input", attribute.Key("agentcap.outcome"): "error", attribute.Key("agentcap.error_code"): "invalid_request"},
		{attribute.Key("agentcap.capability"): "pay", attribute.Key("agentcap.stage"): "output", attribute.Key("agentcap.outcome"): "ok"},
	}
	ended := spans.Ended()
	if len(ended) != len(want) {
		t.Fatalf("spans = %d, want %d", len(ended), len(want))
	}
	for i, s := range ended {
		got := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			got[kv.Key] = kv.Value.String()
		}
		if fmt.Sprint(got) != fmt.Sprint(want[i]) {
			t.Errorf("span %d attributes = %v, want %v", i, got, want[i])
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if m.Name != "agentcap.capability.executions" || !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				op, _ := dp.Attributes.Value(attribute.Key("agentcap.operation"))
				stage, _ := dp.Attributes.Value(attribute.Key("agentcap.stage"))
				counts[op.AsString()+"/"+stage.AsString()] += dp.Value
			}
		}
	}
	if wantCounts := map[string]int64{"preview/preview": 1, "preview/input": 1, "/output": 1}; fmt.Sprint(counts) != fmt.Sprint(wantCounts) {
		t.Errorf("execution counts by operation/stage = %v, want %v", counts, wantCounts)
	}
}
