package fiberx

import "testing"

// FuzzDecodeBody feeds arbitrary bytes to every decoder: none may panic or
// return more than the limit.
func FuzzDecodeBody(f *testing.F) {
	for _, enc := range []string{"", "gzip", "deflate", "br", "x-gzip", "identity", "bogus"} {
		f.Add(enc, []byte{0x1f, 0x8b, 0x08, 0x00})
		f.Add(enc, []byte(`{"capability":"x"}`))
	}
	const limit = 64
	f.Fuzz(func(t *testing.T, enc string, raw []byte) {
		data, tooLarge, err := decodeBody(nil, raw, enc, limit)
		if len(data) > limit {
			t.Fatalf("%d bytes decoded past the limit", len(data))
		}
		if tooLarge && (err != nil || len(data) != 0) {
			t.Fatalf("too large with data %d, err %v", len(data), err)
		}
	})
}
