package httpx

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func gzipped(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// oneByteReader hands out one byte per Read, as a slow connection might.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

// TestReadBodyLimit checks that the limit holds on the bytes actually
// read, whatever length the request announced, and on the decoded size.
func TestReadBodyLimit(t *testing.T) {
	const limit = 16
	fits := strings.Repeat("a", limit)
	over := strings.Repeat("b", limit+1)
	tests := []struct {
		name     string
		body     io.Reader
		encoding string
		length   int64
		want     string
		tooLarge bool
		err      bool
	}{
		{name: "announced length", body: strings.NewReader("hello"), length: 5, want: "hello"},
		{name: "unknown length", body: strings.NewReader("hello"), length: -1, want: "hello"},
		{name: "exactly the limit", body: strings.NewReader(fits), length: limit, want: fits},
		{name: "one byte over", body: strings.NewReader(over), length: limit + 1, tooLarge: true},
		{name: "over, announced short", body: strings.NewReader(over), length: 3, tooLarge: true},
		{name: "over, announced zero", body: strings.NewReader(over), length: 0, tooLarge: true},
		{name: "over, unknown length", body: strings.NewReader(over), length: -1, tooLarge: true},
		{name: "announced long", body: strings.NewReader("hi"), length: limit, want: "hi"},
		{name: "slow reader", body: oneByteReader{strings.NewReader(fits)}, length: -1, want: fits},
		{name: "slow reader over", body: oneByteReader{strings.NewReader(over)}, length: limit + 1, tooLarge: true},
		{name: "gzip", body: bytes.NewReader(gzipped(t, fits)), encoding: "gzip", length: 10, want: fits},
		{name: "gzip expands past the limit", body: bytes.NewReader(gzipped(t, strings.Repeat("c", 1000))),
			encoding: " GZIP ", length: 10, tooLarge: true},
		{name: "broken gzip", body: strings.NewReader("not gzip"), encoding: "gzip", length: 8, err: true},
		{name: "unsupported coding", body: strings.NewReader("x"), encoding: "br", length: 1, err: true},
		{name: "wire limit hit inside gzip", body: http.MaxBytesReader(nil, io.NopCloser(bytes.NewReader(gzipped(t, fits))), 4),
			encoding: "gzip", length: -1, tooLarge: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, tooLarge, err := readBody(make([]byte, 0, 4), tc.body, tc.encoding, limit, tc.length)
			if tooLarge != tc.tooLarge || (err != nil) != tc.err {
				t.Fatalf("tooLarge %v, err %v; want %v, error %v", tooLarge, err, tc.tooLarge, tc.err)
			}
			if tooLarge || err != nil {
				return
			}
			if diff := cmp.Diff(tc.want, string(data)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadBodyPublic checks that ReadBody returns nothing but the flag
// for a body over the limit, and the caller's own bytes otherwise.
func TestReadBodyPublic(t *testing.T) {
	data, tooLarge, err := ReadBody(strings.NewReader("0123456789"), "", 9)
	if data != nil || !tooLarge || err != nil {
		t.Errorf("over the limit: %q %v %v", data, tooLarge, err)
	}
	data, tooLarge, err = ReadBody(strings.NewReader("0123456789"), "identity", 10)
	if string(data) != "0123456789" || tooLarge || err != nil {
		t.Errorf("within the limit: %q %v %v", data, tooLarge, err)
	}
}

// TestReadBodySizedFromLength checks the point of the announced length:
// the body is read into one buffer of its size, and a reused buffer that
// is large enough costs no allocation at all.
func TestReadBodySizedFromLength(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 3000)
	rd := bytes.NewReader(body)
	data, _, err := readBody(nil, rd, "", 1<<20, int64(len(body)))
	if err != nil || !bytes.Equal(data, body) {
		t.Fatalf("read %d bytes, %v", len(data), err)
	}
	if cap(data) != len(body)+1 {
		t.Errorf("buffer of %d bytes for a body of %d", cap(data), len(body))
	}
	dst := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		rd.Reset(body)
		data, _, _ = readBody(dst, rd, "", 1<<20, int64(len(body)))
	})
	if allocs != 0 {
		t.Errorf("%v allocations per read into a large enough buffer", allocs)
	}
}

// TestSetHeadersAllocatesNothing checks that the constant headers of an
// answer are assigned, not built per request.
func TestSetHeadersAllocatesNothing(t *testing.T) {
	hd := http.Header{}
	m := replyMeta{status: http.StatusOK, cache: cacheNoStore}
	allocs := testing.AllocsPerRun(100, func() {
		clear(hd)
		m.setHeaders(hd)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per answer", allocs)
	}
	want := http.Header{"Content-Type": {"application/json"}, "X-Content-Type-Options": {"nosniff"}, "Cache-Control": {"no-store"}}
	if diff := cmp.Diff(want, hd); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}
