package schema

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// nativeFormats are the "format" values the native validator asserts. Each
// accepts exactly the strings the validation library accepts for the same
// name, and explains a rejection with the same words, so that a schema
// reads the same whichever validator runs it. A checker allocates only
// when it rejects, except for the URI formats, which need net/url.
var nativeFormats = map[string]func(string) error{
	"date-time":     checkDateTime,
	"date":          checkDate,
	"time":          checkTime,
	"email":         checkEmail,
	"hostname":      checkHostname,
	"uuid":          checkUUID,
	"ipv4":          checkIPv4,
	"ipv6":          checkIPv6,
	"uri":           checkURI,
	"iri":           checkURI,
	"uri-reference": checkURIReference,
	"iri-reference": checkURIReference,
}

// formatError is a fixed reason, so the common rejections allocate nothing.
type formatError string

func (e formatError) Error() string { return string(e) }

// checkDateTime accepts an RFC 3339 date-time: a full date, "T" (either
// case) and a full time, both as checkDate and checkTime accept them.
func checkDateTime(s string) error {
	if len(s) < len("2006-01-02T15:04:05Z") {
		return formatError("less than 20 characters long")
	}
	if s[10] != 'T' && s[10] != 't' {
		return formatError("11th character must be t or T")
	}
	if err := checkDate(s[:10]); err != nil {
		return fmt.Errorf("invalid date element: %v", err)
	}
	if err := checkTime(s[11:]); err != nil {
		return fmt.Errorf("invalid time element: %v", err)
	}
	return nil
}

// checkDate accepts what time.Parse accepts as yyyy-mm-dd, which checks
// the day against the month and the year.
func checkDate(s string) error {
	_, err := time.Parse(time.DateOnly, s)
	return err
}

// checkTime accepts an RFC 3339 full time: hh:mm:ss, an optional fraction
// and "Z" or a ±hh:mm offset. A second of 60 is a leap second, allowed
// only at 23:59 UTC.
func checkTime(s string) error {
	if len(s) < len("15:04:05Z") {
		return formatError("less than 9 characters long")
	}
	if s[2] != ':' || s[5] != ':' {
		return formatError("missing colon in correct place")
	}
	// The three fields are two characters each between the colons just
	// checked; strconv.Atoi decides what a field may hold.
	var hms [3]int
	for k, field := range [3]string{s[0:2], s[3:5], s[6:8]} {
		n, err := strconv.Atoi(field)
		if err != nil {
			return formatError("invalid hour/min/sec")
		}
		if n < 0 {
			return formatError("non-positive hour/min/sec")
		}
		hms[k] = n
	}
	h, m, sec := hms[0], hms[1], hms[2]
	if h > 23 || m > 59 || sec > 60 {
		return formatError("hour/min/sec out of range")
	}
	rest := s[8:]
	if frac, ok := strings.CutPrefix(rest, "."); ok {
		n := 0
		for n < len(frac) && isDigit(frac[n]) {
			n++
		}
		if n == 0 {
			return formatError("no digits in second fraction")
		}
		rest = frac[n:]
	}
	if rest != "Z" && rest != "z" {
		if len(rest) != len("+07:00") {
			return formatError("offset must be 6 characters long")
		}
		// An offset east of UTC is subtracted to get back to UTC.
		var sign int
		switch rest[0] {
		case '+':
			sign = -1
		case '-':
			sign = 1
		default:
			return formatError("offset must begin with plus/minus")
		}
		rest = rest[1:]
		if rest[2] != ':' {
			return formatError("missing colon in offset in correct place")
		}
		var zone [2]int
		for k, field := range [2]string{rest[0:2], rest[3:5]} {
			n, err := strconv.Atoi(field)
			if err != nil {
				return formatError("invalid hour/min in offset")
			}
			if n < 0 {
				return formatError("non-positive hour/min in offset")
			}
			zone[k] = n
		}
		if zone[0] > 23 || zone[1] > 59 {
			return formatError("hour/min in offset out of range")
		}
		minutes := h*60 + m + sign*(zone[0]*60+zone[1])
		if minutes < 0 {
			minutes += 24 * 60
		}
		h, m = minutes/60, minutes%60
	}
	if sec == 60 && (h != 23 || m != 59) {
		return formatError("invalid leap second")
	}
	return nil
}

// checkEmail accepts an address of at most 254 bytes: a local part of at
// most 64 bytes, either quoted or dot-separated atoms, then "@" and a
// hostname or a bracketed IPv4 or "IPv6:" address.
func checkEmail(s string) error {
	if len(s) > 254 {
		return formatError("more than 255 characters long")
	}
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return formatError("missing @")
	}
	local, domain := s[:at], s[at+1:]
	if len(local) > 64 {
		return formatError("local part more than 64 characters long")
	}
	if len(local) > 1 && local[0] == '"' && local[len(local)-1] == '"' {
		if strings.ContainsAny(local[1:len(local)-1], `\"`) {
			return formatError("backslash and quote are not allowed within quoted local part")
		}
	} else {
		switch {
		case strings.HasPrefix(local, "."):
			return formatError("starts with dot")
		case strings.HasSuffix(local, "."):
			return formatError("ends with dot")
		case strings.Contains(local, ".."):
			return formatError("consecutive dots")
		}
		for _, c := range local {
			if !isAlnum(c) && !strings.ContainsRune(".!#$%&'*+-/=?^_`{|}~", c) {
				return fmt.Errorf("invalid character %q", c)
			}
		}
	}
	if len(domain) >= 2 && domain[0] == '[' && domain[len(domain)-1] == ']' {
		addr := domain[1 : len(domain)-1]
		if v6, ok := strings.CutPrefix(addr, "IPv6:"); ok {
			if err := checkIPv6(v6); err != nil {
				return fmt.Errorf("invalid ipv6 address: %v", err)
			}
			return nil
		}
		if err := checkIPv4(addr); err != nil {
			return fmt.Errorf("invalid ipv4 address: %v", err)
		}
		return nil
	}
	if err := checkHostname(domain); err != nil {
		return fmt.Errorf("invalid domain: %v", err)
	}
	return nil
}

func isAlnum(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// checkHostname accepts at most 253 bytes (a final dot aside) of labels
// separated by dots, each 1 to 63 letters, digits and inner hyphens.
func checkHostname(s string) error {
	s = strings.TrimSuffix(s, ".")
	if len(s) > 253 {
		return formatError("more than 253 characters long")
	}
	for rest, more := s, true; more; {
		var label string
		label, rest, more = strings.Cut(rest, ".")
		if len(label) < 1 || len(label) > 63 {
			return formatError("label must be 1 to 63 characters long")
		}
		if label[0] == '-' {
			return formatError("label starts with hyphen")
		}
		if label[len(label)-1] == '-' {
			return formatError("label ends with hyphen")
		}
		for _, c := range label {
			if !isAlnum(c) && c != '-' {
				return fmt.Errorf("invalid character %q", c)
			}
		}
	}
	return nil
}

// checkUUID accepts five groups of 8, 4, 4, 4 and 12 hexadecimal digits
// separated by hyphens, in either case.
func checkUUID(s string) error {
	sizes := [5]int{8, 4, 4, 4, 12}
	if strings.Count(s, "-") != len(sizes)-1 {
		return fmt.Errorf("must have %d elements", len(sizes))
	}
	rest := s
	for k, size := range sizes {
		var group string
		group, rest, _ = strings.Cut(rest, "-")
		if len(group) != size {
			return fmt.Errorf("element %d must be %d characters long", k+1, size)
		}
		for _, c := range group {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return fmt.Errorf("non-hex character %q", c)
			}
		}
	}
	return nil
}

// checkIPv4 accepts four dot-separated decimals from 0 to 255 without
// leading zeros, each as strconv.Atoi reads it.
func checkIPv4(s string) error {
	if strings.Count(s, ".") != 3 {
		return formatError("expected four decimals")
	}
	for rest, more := s, true; more; {
		var group string
		group, rest, more = strings.Cut(rest, ".")
		if len(group) > 1 && group[0] == '0' {
			return formatError("leading zeros")
		}
		n, err := strconv.Atoi(group)
		if err != nil {
			return err
		}
		if n < 0 || n > 255 {
			return formatError("decimal must be between 0 and 255")
		}
	}
	return nil
}

// checkIPv6 accepts what netip.ParseAddr accepts with a colon in it and
// no zone.
func checkIPv6(s string) error {
	if !strings.Contains(s, ":") {
		return formatError("missing colon")
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return err
	}
	if addr.Zone() != "" {
		return formatError("zone id is not a part of ipv6 address")
	}
	return nil
}

// checkURI accepts an absolute URI as net/url parses it.
func checkURI(s string) error {
	u, err := parseURI(s)
	if err != nil {
		return err
	}
	if !u.IsAbs() {
		return formatError("relative url")
	}
	return nil
}

// checkURIReference accepts an absolute or relative URI without
// backslashes.
func checkURIReference(s string) error {
	if strings.Contains(s, `\`) {
		return formatError(`contains \`)
	}
	_, err := parseURI(s)
	return err
}

// parseURI is url.Parse plus the check it leaves out: an IPv6 host must be
// bracketed and valid.
func parseURI(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if host := u.Hostname(); strings.Contains(host, ":") {
		if !strings.Contains(u.Host, "[") || !strings.Contains(u.Host, "]") {
			return nil, errors.New("ipv6 address not enclosed in brackets")
		}
		if err := checkIPv6(host); err != nil {
			return nil, fmt.Errorf("invalid ipv6 address: %v", err)
		}
	}
	return u, nil
}
