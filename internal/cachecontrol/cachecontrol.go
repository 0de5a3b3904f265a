// Package cachecontrol reads how long a response may be reused from its
// Cache-Control header (RFC 9111 §5.2.2): the one reading shared by the
// client's discovery cache and agentauth's cache of fetched key sets,
// each of which bounds the result by its own floor and ceiling.
package cachecontrol

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// maxSeconds bounds a max-age read: RFC 9111 §1.2.2 reads a greater
// value, or one too large to represent, as 2^31 seconds (about 68
// years), far beyond any caller's ceiling.
const maxSeconds = math.MaxInt32 + 1

// MaxAge returns the freshness lifetime header gives a response. ok is
// false when the header names none (it is empty, or has neither max-age,
// no-store nor no-cache), and the caller's default applies. no-store and
// no-cache give zero, whatever else the header says; so does a max-age
// that is not a non-negative integer (a quoted one is read), since a
// response that cannot say how long it keeps is best not reused. A
// max-age above 2^31 seconds is read as that.
// Directive names are matched without regard to case.
func MaxAge(header string) (age time.Duration, ok bool) {
	age = -1
	for d := range strings.SplitSeq(header, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), "=")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "no-store", "no-cache":
			return 0, true
		case "max-age":
			n, err := strconv.ParseUint(strings.Trim(strings.TrimSpace(value), `"`), 10, 64)
			switch {
			case errors.Is(err, strconv.ErrRange):
				n = maxSeconds
			case err != nil:
				return 0, true
			}
			age = time.Duration(min(n, maxSeconds)) * time.Second
		}
	}
	if age < 0 {
		return 0, false
	}
	return age, true
}
