package core

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentcap/agentcap"
)

// instrumentationName is the name of the tracer and meter the executor
// uses.
const instrumentationName = "github.com/agentcap/agentcap/core"

// Telemetry attribute keys. Their values are bounded: capability names come
// from the registry (unknown names are never recorded), stages and outcomes
// are closed sets, and error codes are pipeline or application codes.
const (
	attrCapability = attribute.Key("agentcap.capability")
	attrStage      = attribute.Key("agentcap.stage")
	attrOutcome    = attribute.Key("agentcap.outcome")
	attrErrorCode  = attribute.Key("agentcap.error_code")
	// attrOperation is set, to operationPreview, on the spans and metrics
	// of previews; executions do not carry it.
	attrOperation = attribute.Key("agentcap.operation")
)

// operationPreview is the attrOperation value of previews.
const operationPreview = "preview"

// Metric names.
const (
	metricExecutions = "agentcap.capability.executions"
	metricDuration   = "agentcap.capability.duration"
)

// Outcomes recorded on spans and metrics.
const (
	outcomeOK    = "ok"
	outcomeError = "error"
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
	// The same for previews, whose successful stage is preview.
	previewSpanStart []trace.SpanStartOption
	previewOkAdd     []metric.AddOption
	previewOkRecord  []metric.RecordOption
}

func newTelemetryAttrs(name string) telemetryAttrs {
	c := attrCapability.String(name)
	set := attribute.NewSet(c, attrStage.String(string(agentcap.StageOutput)), attrOutcome.String(outcomeOK))
	op := attrOperation.String(operationPreview)
	pset := attribute.NewSet(c, op, attrStage.String(string(agentcap.StagePreview)), attrOutcome.String(outcomeOK))
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
	meter := mp.Meter(instrumentationName)
	count, err := meter.Int64Counter(metricExecutions,
		metric.WithDescription("Capability executions, by capability, stage reached, outcome and error code."),
		metric.WithUnit("{execution}"))
	if err != nil {
		return nil, err
	}
	duration, err := meter.Float64Histogram(metricDuration,
		metric.WithDescription("Duration of capability executions."),
		metric.WithUnit("s"))
	if err != nil {
		return nil, err
	}
	return &telemetry{tracer: tp.Tracer(instrumentationName), count: count, duration: duration}, nil
}

// start opens the span of an execution or a preview.
func (t *telemetry) start(ctx context.Context, def *Definition, preview bool) (context.Context, trace.Span) {
	switch {
	case def == nil && preview:
		return t.tracer.Start(ctx, spanNameUnknown, trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attrOperation.String(operationPreview)))
	case def == nil:
		return t.tracer.Start(ctx, spanNameUnknown, trace.WithSpanKind(trace.SpanKindInternal))
	case preview:
		return t.tracer.Start(ctx, def.name, def.tel.previewSpanStart...)
	}
	return t.tracer.Start(ctx, def.name, def.tel.spanStart...)
}

// finish closes the span and records metrics. Only bounded attributes are
// recorded: never the identity, arguments or results.
func (t *telemetry) finish(ctx context.Context, span trace.Span, def *Definition, took time.Duration, err *agentcap.Error, preview bool) {
	secs := took.Seconds()
	if err == nil {
		stage, add, record := agentcap.StageOutput, def.tel.okAdd, def.tel.okRecord
		if preview {
			stage, add, record = agentcap.StagePreview, def.tel.previewOkAdd, def.tel.previewOkRecord
		}
		if span.IsRecording() {
			span.SetAttributes(attrStage.String(string(stage)), attrOutcome.String(outcomeOK))
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
		attrs = append(attrs, attrOperation.String(operationPreview))
	}
	attrs = append(attrs,
		attrStage.String(string(err.Stage)),
		attrOutcome.String(outcomeError),
		attrErrorCode.String(string(err.Code)))
	if span.IsRecording() {
		span.SetAttributes(attrs...)
		span.SetStatus(codes.Error, string(err.Code))
	}
	span.End()
	set := metric.WithAttributeSet(attribute.NewSet(attrs...))
	t.count.Add(ctx, 1, set)
	t.duration.Record(ctx, secs, set)
}
