package client

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"

	"github.com/agentcap/agentcap"
)

// Limits of an event stream.
const (
	// maxEventLine bounds one line of an event stream.
	maxEventLine = 1 << 20
	// maxEventData bounds the data of one event.
	maxEventData = 8 << 20
)

// ErrStreamTruncated is returned by a stream that ended without a done
// event: the protocol makes done the only sign of completion, so a closed
// connection means the result is incomplete.
var ErrStreamTruncated = errors.New("client: event stream ended without done")

// Event is one server-sent event.
type Event struct {
	// Type is the event's type: agentcap.EventData (also for events without an
	// event field), agentcap.EventError, agentcap.EventDone, or another name the server
	// used.
	Type string
	// Data is the event's data, its data lines joined by newlines. For
	// data and done events it is JSON (or empty for done).
	Data string
	// ID is the event's id field, if any.
	ID string
}

// Stream is an execution answered with an event stream.
type Stream struct {
	body   io.ReadCloser
	cancel func()
	r      *eventReader

	once sync.Once
	used bool
}

// NewStream reads an execution stream from r, for callers that sent the
// request themselves (with a token from Agent.SignJWT, say). Close closes
// r when it is an io.Closer.
func NewStream(r io.Reader) *Stream {
	rc, ok := r.(io.ReadCloser)
	if !ok {
		rc = io.NopCloser(r)
	}
	return newStream(rc, nil)
}

func newStream(body io.ReadCloser, cancel func()) *Stream {
	return &Stream{body: body, cancel: cancel, r: newEventReader(body)}
}

// Events returns an iterator over the stream's events. It yields every
// event, stopping after done; an error event is yielded with its *Error,
// and a stream that ends without done yields ErrStreamTruncated. The
// stream is closed when iteration ends, however it ends. Events may be
// called only once.
func (s *Stream) Events() iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		defer s.Close()
		if s.used {
			yield(Event{}, errors.New("client: stream already read"))
			return
		}
		s.used = true
		for {
			ev, err := s.r.next()
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = ErrStreamTruncated
				}
				yield(Event{}, err)
				return
			}
			switch ev.Type {
			case agentcap.EventError:
				e := decodeErrorObject([]byte(ev.Data))
				if e.Code == "" && e.Message == "" {
					e.Message = ev.Data
				}
				yield(ev, e)
				return
			case agentcap.EventDone:
				yield(ev, nil)
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// Close ends the stream and releases its connection. It may be called
// more than once.
func (s *Stream) Close() error {
	var err error
	s.once.Do(func() {
		err = s.body.Close()
		if s.cancel != nil {
			s.cancel()
		}
	})
	return err
}

// eventReader parses the text/event-stream format (the HTML Living
// Standard's server-sent events): fields "event", "data", "id" and
// "retry", comment lines starting with ':', an optional space after the
// colon, events dispatched by a blank line, and lines ending in LF, CR or
// CRLF.
type eventReader struct {
	r *bufio.Reader
	// pendingCR is set after a line ended in CR, so that a following LF
	// is not read as an empty line.
	pendingCR bool
	// maxLine and maxData are maxEventLine and maxEventData, lowered by
	// tests.
	maxLine, maxData int
}

func newEventReader(r io.Reader) *eventReader {
	return &eventReader{r: bufio.NewReaderSize(r, 4096), maxLine: maxEventLine, maxData: maxEventData}
}

// line reads one line without its terminator.
func (er *eventReader) line() ([]byte, error) {
	if er.pendingCR {
		er.pendingCR = false
		if b, err := er.r.Peek(1); err == nil && b[0] == '\n' {
			_, _ = er.r.Discard(1)
		}
	}
	var buf []byte
	for {
		if er.r.Buffered() == 0 {
			if _, err := er.r.Peek(1); err != nil {
				if errors.Is(err, io.EOF) && len(buf) > 0 {
					// A last line without a terminator is incomplete:
					// the stream ended mid-event.
					return nil, io.EOF
				}
				return nil, err
			}
		}
		chunk, _ := er.r.Peek(er.r.Buffered())
		i := bytes.IndexAny(chunk, "\r\n")
		n := i
		if i < 0 {
			n = len(chunk)
		}
		if len(buf)+n > er.maxLine {
			return nil, fmt.Errorf("client: event stream line longer than %d bytes", er.maxLine)
		}
		buf = append(buf, chunk[:n]...)
		if i < 0 {
			_, _ = er.r.Discard(n)
			continue
		}
		er.pendingCR = chunk[i] == '\r'
		_, _ = er.r.Discard(i + 1)
		if buf == nil {
			buf = []byte{}
		}
		return buf, nil
	}
}

// next returns the next event. Blank lines with no data before them
// dispatch nothing, as the format says.
func (er *eventReader) next() (Event, error) {
	var ev Event
	var data bytes.Buffer
	hasData := false
	for {
		l, err := er.line()
		if err != nil {
			return Event{}, err
		}
		if len(l) == 0 {
			if !hasData && ev.Type == "" {
				continue
			}
			if ev.Type == "" {
				ev.Type = agentcap.EventData
			}
			ev.Data = data.String()
			return ev, nil
		}
		if l[0] == ':' {
			continue
		}
		name, value, found := bytes.Cut(l, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(name) {
		case "event":
			ev.Type = string(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			if data.Len()+len(value) > er.maxData {
				return Event{}, fmt.Errorf("client: event data longer than %d bytes", er.maxData)
			}
			data.Write(value)
			hasData = true
		case "id":
			if !bytes.ContainsRune(value, 0) {
				ev.ID = string(value)
			}
		}
	}
}
