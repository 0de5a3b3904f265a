package jsonvalue

import (
	"math/rand/v2"
	"testing"
)

// TestPlainWord checks the word-at-a-time test against the byte table, on
// words made of bytes near each edge of plain.
func TestPlainWord(t *testing.T) {
	edges := []byte{0, 0x1f, 0x20, 0x21, '"' - 1, '"', '"' + 1, '\\' - 1, '\\', '\\' + 1, 'a', 0x7e, 0x7f, 0x80, 0x81, 0xdf, 0xfe, 0xff}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		var b [8]byte
		want := true
		for k := range b {
			if rng.IntN(4) == 0 {
				b[k] = edges[rng.IntN(len(edges))]
			} else {
				b[k] = byte(0x20 + rng.IntN(0x60))
			}
			want = want && plain[b[k]]
		}
		if got := plainWord(string(b[:])); got != want {
			t.Fatalf("plainWord(%q) = %v, want %v", b, got, want)
		}
	}
	for c := range 256 {
		for k := range 8 {
			b := []byte("abcdefgh")
			b[k] = byte(c)
			if got := plainWord(string(b)); got != plain[c] {
				t.Fatalf("plainWord(%q) = %v, want %v", b, got, plain[c])
			}
		}
	}
}
