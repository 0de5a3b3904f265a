package httpx

import (
	"strconv"
	"sync"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// appendString appends s as a JSON string. It is the project's one JSON
// string encoder, internal/jsonvalue's: it escapes what RFC 8259 requires
// (the quote, the backslash and control characters) and writes invalid
// UTF-8 as U+FFFD, as encoding/json does. It leaves <, >, & and U+2028
// alone where encoding/json escapes them for HTML: answers are JSON sent
// with X-Content-Type-Options: nosniff, never HTML, and both forms decode
// to the same string.
func appendString(dst []byte, s string) []byte { return jsonvalue.AppendString(dst, s) }

// appendStrings appends a JSON array of strings.
func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// maxPooledBuffer keeps one unusually large response from pinning its
// memory in the pool for the life of the process.
const maxPooledBuffer = 64 << 10

type buffer struct{ b []byte }

var bufferPool = sync.Pool{New: func() any { return &buffer{b: make([]byte, 0, 1024)} }}

func getBuffer() *buffer { return bufferPool.Get().(*buffer) }

func putBuffer(b *buffer) {
	if cap(b.b) > maxPooledBuffer {
		return
	}
	b.b = b.b[:0]
	bufferPool.Put(b)
}

// appendBool appends a member ,"key":true or ,"key":false to an open
// object.
func appendBool(dst []byte, key string, v bool) []byte {
	dst = append(dst, ',')
	dst = appendString(dst, key)
	dst = append(dst, ':')
	return strconv.AppendBool(dst, v)
}
