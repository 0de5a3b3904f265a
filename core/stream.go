package core

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/internal/schema"
)

// Emitter sends the chunks of one streaming call. It is safe for
// concurrent use.
type Emitter[Chunk any] struct {
	st *emitState
}

// emitState is the untyped part of an Emitter.
type emitState struct {
	info *streamInfo
	sink StreamSink
	mu   sync.Mutex
	// bad is the first chunk that failed its schema; the call then fails
	// with it whatever the handler returns.
	bad *agentcap.Error
}

// streamInfo is what a definition knows about its chunks.
type streamInfo struct {
	schema    json.RawMessage
	validator *schema.Validator
	// implied: every encoding of the chunk type fits its schema.
	implied bool
}

// StreamSink receives the chunks of a streaming call, each as the JSON
// text of one value that fits the capability's chunk schema. A transport
// installs one with [WithStream]. An error from the sink (the client went
// away, say) is returned by [Emitter.Emit] to the handler.
type StreamSink func(chunk json.RawMessage) error

type streamKey struct{}

// WithStream returns a copy of ctx under which a streaming capability's
// chunks reach sink. Calls of a streaming capability without a sink (an
// in-process [Call], say) validate their chunks and drop them.
func WithStream(ctx context.Context, sink StreamSink) context.Context {
	if sink == nil {
		return ctx
	}
	return context.WithValue(ctx, streamKey{}, sink)
}

// Emit validates chunk against the chunk schema and sends it. A chunk that
// does not fit is a fault of the handler: Emit returns an
// *agentcap.Error with internal_error, and the call fails with that error even if the
// handler ignores it (the caller sees an internal error; the details stay
// in the hidden cause). A sink error is returned as it is.
func (e *Emitter[Chunk]) Emit(chunk Chunk) error {
	data, err := json.Marshal(chunk)
	if err != nil {
		return e.st.fail(fmt.Errorf("encoding a chunk: %w", err))
	}
	if !e.st.info.implied {
		violations, err := e.st.info.validator.ValidateJSON(data)
		if err != nil {
			return e.st.fail(fmt.Errorf("re-reading an encoded chunk: %w", err))
		}
		if len(violations) > 0 {
			parts := make([]string, len(violations))
			for i, v := range violations {
				parts[i] = pathOrRoot(v.Path) + ": " + v.Message
			}
			return e.st.fail(fmt.Errorf("a chunk does not fit the chunk schema: %s", strings.Join(parts, "; ")))
		}
	}
	e.st.mu.Lock()
	defer e.st.mu.Unlock()
	if e.st.bad != nil {
		return e.st.bad
	}
	if e.st.sink == nil {
		return nil
	}
	return e.st.sink(data)
}

func (s *emitState) fail(cause error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bad == nil {
		s.bad = internalAt(agentcap.StageHandler, cause)
	}
	return s.bad
}

// DefineStream builds a streaming capability. Its handler sends
// intermediate results ("chunks") through emit while it works and returns
// the final result, which is validated against the output schema like any
// other result. Chunk is a plain Go type. Everything [Define] says
// about names, schemas and options holds; in addition the JSON Schema of
// Chunk is derived here (like an output schema) and every emitted chunk is
// validated against it. Transports publish it next to the output schema
// ([Definition.ChunkSchema]).
//
// A streaming capability is not bound by the executor's default timeout:
// the transport bounds a stream (httpx ends it after its maximum
// duration, when the client goes away and when the caller's credentials
// are revoked). [WithTimeout] still applies when given. Batches refuse
// streaming capabilities with batch_unsupported_result_type.
func DefineStream[C, In, Chunk, Out any](name, description string, handler func(ctx context.Context, app C, in In, emit *Emitter[Chunk]) (Out, error), opts ...Option) (*Capability[C, In, Out], error) {
	if handler == nil {
		return nil, &DefinitionError{Capability: name, Reason: "nil handler"}
	}
	ct := reflect.TypeFor[Chunk]()
	doc, v, err := buildSchema(ct, nil, schema.ForOutput)
	if err != nil {
		return nil, &DefinitionError{Capability: name, Reason: fmt.Sprintf("chunk: %v", err)}
	}
	info := &streamInfo{schema: doc, validator: v, implied: schema.ImpliedBy(ct)}
	wrapped := func(ctx context.Context, app C, in In) (Out, error) {
		sink, _ := ctx.Value(streamKey{}).(StreamSink)
		st := &emitState{info: info, sink: sink}
		out, err := handler(ctx, app, in, &Emitter[Chunk]{st: st})
		st.mu.Lock()
		bad := st.bad
		st.mu.Unlock()
		if bad != nil {
			var zero Out
			return zero, bad
		}
		return out, err
	}
	opts = append(opts[:len(opts):len(opts)], func(o *options) { o.stream = info })
	return Define(name, description, wrapped, opts...)
}

// MustDefineStream is DefineStream for package-level variables: it panics
// on error.
func MustDefineStream[C, In, Chunk, Out any](name, description string, handler func(ctx context.Context, app C, in In, emit *Emitter[Chunk]) (Out, error), opts ...Option) *Capability[C, In, Out] {
	c, err := DefineStream(name, description, handler, opts...)
	if err != nil {
		panic(err)
	}
	return c
}

// Streams reports whether the capability was defined with DefineStream.
func (d *Definition) Streams() bool { return d.stream != nil }

// ChunkSchema returns the JSON Schema of a streaming capability's chunks,
// or nil for other capabilities. It must not be modified.
func (d *Definition) ChunkSchema() json.RawMessage {
	if d.stream == nil {
		return nil
	}
	return d.stream.schema
}
