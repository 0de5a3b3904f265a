package core

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// InstrumentationName is the name of the tracer and meter the executor
// uses.
const InstrumentationName = "github.com/agentcap/agentcap/core"

// Telemetry attribute keys. Their values are bounded: capability names come
// from the registry (unknown names are never recorded), stages and outcomes
// are closed sets, and error codes are pipeline or application codes.
const (
	AttrCapability = attribute.Key("agentcap.capability")
	AttrStage      = attribute.Key("agentcap.stage")
	AttrOutcome    = attribute.Key("agentcap.outcome")
	AttrErrorCode  = attribute.Key("agentcap.error_code")
	// AttrOperation is set, to OperationPreview, on the spans and metrics
	// of previews; executions do not carry it.
	AttrOperation = attribute.Key("agentcap.operation")
)

// OperationPreview is the AttrOperation value of previews.
const OperationPreview = "preview"

// Metric names.
const (
	MetricExecutions = "agentcap.capability.executions"
	MetricDuration   = "agentcap.capability.duration"
)

// Outcomes recorded on spans and metrics.
const (
	OutcomeOK    = "ok"
	OutcomeError = "error"
)

// spanNameUnknown names spans of calls whose capability does not exist, so
// that arbitrary caller-chosen names never become span names.
const spanNameUnknown = "agentcap.unknown_capability"

// telemetryAttrs are a definition's precomputed attributes, so the success
// path records spans and metrics without building attribute sets.
type telemetryAttrs struct {
	capability attribute.KeyValue
	spanStart  []trace.SpanStartOption
	// Option slices, so that passing them as variadic arguments does not
	// allocate on every call.
	okAdd    []metric.AddOption
	okRecord []metric.RecordOption
	// The same for previews, whose successful stage is StagePreview.
	previewSpanStart []trace.SpanStartOption
	previewOkAdd     []metric.AddOption
	previewOkRecord  []metric.RecordOption
}

func newTelemetryAttrs(name string) telemetryAttrs {
	c := AttrCapability.String(name)
	set := attribute.NewSet(c, AttrStage.String(string(StageOutput)), AttrOutcome.String(OutcomeOK))
	op := AttrOperation.String(OperationPreview)
	pset := attribute.NewSet(c, op, AttrStage.String(string(StagePreview)), AttrOutcome.String(OutcomeOK))
	return telemetryAttrs{
		capability:       c,
		spanStart:        []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(c)},
		okAdd:            []metric.AddOption{metric.WithAttributeSet(set)},
		okRecord:         []metric.RecordOption{metric.WithAttributeSet(set)},
		previewSpanStart: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(c, op)},
		previewOkAdd:     []metric.AddOption{metric.WithAttributeSet(pset)},
		previewOkRecord:  []metric.RecordOption{metric.WithAttributeSet(pset)},
	}
}

// telemetry holds an executor's tracer and instruments.
type telemetry struct {
	tracer   trace.Tracer
	count    metric.Int64Counter
	duration metric.Float64Histogram
}

func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) (*telemetry, error) {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	meter := mp.Meter(InstrumentationName)
	count, err := meter.Int64Counter(MetricExecutions,
		metric.WithDescription("Capability executions, by capability, stage reached, outcome and error code."),
		metric.WithUnit("{execution}"))
	if err != nil {
		return nil, err
	}
	duration, err := meter.Float64Histogram(MetricDuration,
		metric.WithDescription("Duration of capability executions."),
		metric.WithUnit("s"))
	if err != nil {
		return nil, err
	}
	return &telemetry{tracer: tp.Tracer(InstrumentationName), count: count, duration: duration}, nil
}

// start opens the span of an execution or a preview.
func (t *telemetry) start(ctx context.Context, def *Definition, preview bool) (context.Context, trace.Span) {
	switch {
	case def == nil && preview:
		return t.tracer.Start(ctx, spanNameUnknown, trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(AttrOperation.String(OperationPreview)))
	case def == nil:
		return t.tracer.Start(ctx, spanNameUnknown, trace.WithSpanKind(trace.SpanKindInternal))
	case preview:
		return t.tracer.Start(ctx, def.name, def.tel.previewSpanStart...)
	}
	return t.tracer.Start(ctx, def.name, def.tel.spanStart...)
}

// finish closes the span and records metrics. Only bounded attributes are
// recorded: never the principal, arguments or results.
func (t *telemetry) finish(ctx context.Context, span trace.Span, def *Definition, took time.Duration, err *Error, preview bool) {
	secs := took.Seconds()
	if err == nil {
		stage, add, record := StageOutput, def.tel.okAdd, def.tel.okRecord
		if preview {
			stage, add, record = StagePreview, def.tel.previewOkAdd, def.tel.previewOkRecord
		}
		if span.IsRecording() {
			span.SetAttributes(AttrStage.String(string(stage)), AttrOutcome.String(OutcomeOK))
		}
		span.End()
		t.count.Add(ctx, 1, add...)
		t.duration.Record(ctx, secs, record...)
		return
	}
	attrs := make([]attribute.KeyValue, 0, 5)
	if def != nil {
		attrs = append(attrs, def.tel.capability)
	}
	if preview {
		attrs = append(attrs, AttrOperation.String(OperationPreview))
	}
	attrs = append(attrs,
		AttrStage.String(string(err.Stage)),
		AttrOutcome.String(OutcomeError),
		AttrErrorCode.String(string(err.Code)))
	if span.IsRecording() {
		span.SetAttributes(attrs...)
		span.SetStatus(codes.Error, string(err.Code))
	}
	span.End()
	set := metric.WithAttributeSet(attribute.NewSet(attrs...))
	t.count.Add(ctx, 1, set)
	t.duration.Record(ctx, secs, set)
}
