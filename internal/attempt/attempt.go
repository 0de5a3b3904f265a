// Package attempt names attempts: strings unique across processes that
// a store writes beside what an attempt changed, so that the attempt,
// sent again by a client library after its answer was lost, recognises
// its own write instead of taking it for someone else's.
//
// Names tell attempts apart; they guard nothing, so they need not be
// unpredictable. A random prefix drawn once per process makes them
// unique across processes, a counter within one.
package attempt

import (
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"sync/atomic"
)

var (
	prefix = func() string {
		var b [12]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		return base64.RawURLEncoding.EncodeToString(b[:]) + "."
	}()
	counter atomic.Uint64
)

// New returns a name no other call of New, in this process or another,
// returns.
func New() string {
	var b [40]byte
	t := append(b[:0], prefix...)
	return string(strconv.AppendUint(t, counter.Add(1), 36))
}
