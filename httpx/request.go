package httpx

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
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
	// Serve returns, but the executor may read it until then.
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

	// httpW and httpR are set by NewRequest: the body is then read only
	// when a route needs it, after authentication.
	httpW http.ResponseWriter
	httpR *http.Request
}

// Response is a transport-neutral HTTP response.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Header holds the response headers; it always has Content-Type and
	// Cache-Control.
	Header http.Header
	// Body is the JSON body, ending in a newline. It is owned by the
	// caller.
	Body []byte
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
		Method:   r.Method,
		Path:     path,
		RawQuery: r.URL.RawQuery,
		Header:   r.Header.Get,
		Context:  r.Context(),
		httpW:    w,
		httpR:    r,
	}
}

// loadBody reads a body that NewRequest left unread.
func (r *Request) loadBody(limit int64) {
	if r.httpR == nil {
		return
	}
	hr := r.httpR
	r.httpR = nil
	if hr.Body == nil || hr.Body == http.NoBody {
		return
	}
	r.Body, r.BodyTooLarge, r.BodyError = ReadBody(http.MaxBytesReader(r.httpW, hr.Body, limit), hr.Header.Get("Content-Encoding"), limit)
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
// that reader's limit is reported as tooLarge, not as an error.
func ReadBody(body io.Reader, contentEncoding string, limit int64) (data []byte, tooLarge bool, err error) {
	enc := strings.ToLower(strings.TrimSpace(contentEncoding))
	var src io.Reader
	switch enc {
	case "", "identity":
		src = body
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, isTooLarge(err), unlessTooLarge(err)
		}
		defer zr.Close()
		src = zr
	case "deflate":
		zr, err := zlib.NewReader(body)
		if err != nil {
			return nil, isTooLarge(err), unlessTooLarge(err)
		}
		defer zr.Close()
		src = zr
	default:
		return nil, false, errUnsupportedEncoding
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(src, limit+1))
	if err != nil {
		return nil, isTooLarge(err), unlessTooLarge(err)
	}
	if n > limit {
		return nil, true, nil
	}
	return buf.Bytes(), false, nil
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
