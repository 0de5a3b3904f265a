package httpx

import (
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/agentcap/agentcap/auth"
)

// Request is a transport-neutral HTTP request. Mounts for other routers
// fill it from their own request type; [NewRequest] fills it from a
// net/http request.
type Request struct {
	// Method is the HTTP method, in upper case.
	Method string
	// Path is relative to the mount point: "capability/list" and
	// "/capability/list" are the same route.
	Path string
	// RawQuery is the query string without the question mark.
	RawQuery string
	// Header returns the first value of a request header, or "". A nil
	// Header means no headers.
	Header func(name string) string
	// Body is the request body after Content-Encoding is decoded, at most
	// the handler's MaxBodyBytes. The handler does not retain it after
	// Serve returns, but the executor may read it until then. A body the
	// handler reads itself, for a request made by NewRequest, lives in
	// memory that is reused once the answer is rendered.
	Body []byte
	// BodyTooLarge reports a body that exceeded MaxBodyBytes, on the wire
	// or once decoded; Body is then incomplete and is not read.
	BodyTooLarge bool
	// BodyError reports a body that could not be read or decoded (a broken
	// gzip stream, an unsupported Content-Encoding). It is answered 400.
	BodyError error
	// Context carries the caller's deadline, cancellation and request
	// values into authentication and execution. Nil means
	// context.Background.
	Context context.Context
	// RemoteAddr is the network address of the client, host:port as in
	// http.Request.RemoteAddr; "" when unknown. The executor's audit
	// records take the client address from it (see Config.ClientIP).
	RemoteAddr string

	// httpW and httpR are set by NewRequest: the body is then read only
	// when a route needs it, after authentication.
	httpW http.ResponseWriter
	httpR *http.Request
	// bodyBuf holds a body that the handler read itself, for reuse once
	// the answer is rendered.
	bodyBuf *buffer
	// auth is what the verifier is told, kept here so that telling it
	// costs no allocation of its own.
	auth auth.Request
}

// Response is a transport-neutral HTTP response.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Header holds the response headers; it always has Content-Type and
	// Cache-Control.
	Header http.Header
	// Body is the JSON body, ending in a newline. It is owned by the
	// caller until [Response.Release]. It is nil for an event stream
	// (see [Response.Streaming]), whose body [Response.WriteStream]
	// writes.
	Body []byte

	// buf is the pooled memory of Body.
	buf *buffer
	// stream is set for an answer that is an event stream; see
	// Response.Streaming.
	stream *eventStream
}

// header returns a request header through the optional accessor.
func (r *Request) header(name string) string {
	if r.Header == nil {
		return ""
	}
	return r.Header(name)
}

// NewRequest wraps a net/http request for [Handler.Serve]. path is the
// route relative to the mount point. The body is not read here: Serve
// reads it through [http.MaxBytesReader] only for a route that needs it,
// after the caller is authenticated, so an anonymous client cannot make
// the server buffer a body it will refuse. w must be the writer of r's
// response; it lets the server close a connection whose body was too
// large. The request's context becomes Context; replace it to add values.
func NewRequest(w http.ResponseWriter, r *http.Request, path string) *Request {
	return &Request{
		Method:     r.Method,
		Path:       path,
		RawQuery:   r.URL.RawQuery,
		Header:     r.Header.Get,
		Context:    r.Context(),
		RemoteAddr: r.RemoteAddr,
		httpW:      w,
		httpR:      r,
	}
}

// loadBody reads a body that NewRequest left unread, into memory that
// releaseBody hands back once the answer is rendered.
func (r *Request) loadBody(limit int64) {
	if r.httpR == nil {
		return
	}
	hr := r.httpR
	r.httpR = nil
	if hr.Body == nil || hr.Body == http.NoBody {
		return
	}
	// A body whose length is announced and within the limit cannot run
	// past it on a net/http server connection, and readBody counts the
	// bytes anyway; any other body goes through MaxBytesReader, which
	// also tells the server to close a connection whose body was too
	// large.
	var src io.Reader = hr.Body
	if hr.ContentLength < 0 || hr.ContentLength > limit {
		src = http.MaxBytesReader(r.httpW, hr.Body, limit)
	}
	buf := getBuffer()
	r.bodyBuf = buf
	buf.b, r.BodyTooLarge, r.BodyError = readBody(buf.b[:0], src, hr.Header.Get("Content-Encoding"), limit, hr.ContentLength)
	if !r.BodyTooLarge && r.BodyError == nil {
		r.Body = buf.b
	}
}

// releaseBody hands the memory of a body that loadBody read back to the
// pool. Nothing may hold the body afterwards: the executor keeps
// sub-slices of the arguments only while a call runs, and every answer is
// rendered into a buffer of its own before this runs.
func (r *Request) releaseBody() {
	if r.bodyBuf == nil {
		return
	}
	r.Body = nil
	putBuffer(r.bodyBuf)
	r.bodyBuf = nil
}

// errUnsupportedEncoding is the cause of a BodyError for a coding that
// ReadBody cannot decode.
var errUnsupportedEncoding = errors.New("httpx: unsupported Content-Encoding")

// ReadBody reads at most limit bytes of a body sent with the given
// Content-Encoding header value and decodes it. Identity, gzip (and
// x-gzip) and deflate (the zlib format, as HTTP defines it) are decoded;
// anything else is an error. tooLarge reports a body longer than limit
// before or after decoding, so a small compressed body cannot expand past
// the limit in memory. A body read through [http.MaxBytesReader] that hits
// that reader's limit is reported as tooLarge, not as an error. The
// returned bytes belong to the caller.
func ReadBody(body io.Reader, contentEncoding string, limit int64) (data []byte, tooLarge bool, err error) {
	data, tooLarge, err = readBody(nil, body, contentEncoding, limit, -1)
	if tooLarge || err != nil {
		return nil, tooLarge, err
	}
	return data, false, nil
}

// minBodyRead is the first buffer size for a body of unknown length.
const minBodyRead = 512

// readBody is ReadBody appending to dst, which it grows as needed.
// length is the announced length of the body on the wire, or -1; an
// identity body of a length within the limit is then read into a buffer of
// exactly its size (plus the byte that shows the end), without growing.
// The limit is enforced on the bytes actually read, whatever was
// announced. On tooLarge or an error, the returned slice is dst's memory
// for reuse and holds nothing meaningful.
func readBody(dst []byte, body io.Reader, contentEncoding string, limit, length int64) (data []byte, tooLarge bool, err error) {
	enc := strings.ToLower(strings.TrimSpace(contentEncoding))
	src := body
	switch enc {
	case "", "identity":
		if length >= 0 && length <= limit && int64(cap(dst)) <= length {
			dst = make([]byte, 0, length+1)
		}
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return dst, isTooLarge(err), unlessTooLarge(err)
		}
		defer zr.Close()
		src = zr
	case "deflate":
		zr, err := zlib.NewReader(body)
		if err != nil {
			return dst, isTooLarge(err), unlessTooLarge(err)
		}
		defer zr.Close()
		src = zr
	default:
		return dst, false, errUnsupportedEncoding
	}
	if cap(dst) == 0 {
		dst = make([]byte, 0, minBodyRead)
	}
	// Read until EOF, never holding more than limit+1 bytes: the extra
	// byte is how a body that is too long shows itself.
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		room := dst[len(dst):cap(dst)]
		if over := int64(len(dst)) + int64(len(room)) - (limit + 1); over > 0 {
			room = room[:int64(len(room))-over]
		}
		n, err := src.Read(room)
		dst = dst[:len(dst)+n]
		if int64(len(dst)) > limit {
			return dst[:0], true, nil
		}
		if err == io.EOF {
			return dst, false, nil
		}
		if err != nil {
			return dst[:0], isTooLarge(err), unlessTooLarge(err)
		}
	}
}

func isTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

func unlessTooLarge(err error) error {
	if isTooLarge(err) {
		return nil
	}
	return err
}
