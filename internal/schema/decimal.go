package schema

import (
	"math/big"
	"math/bits"
)

// decimal is a JSON number read exactly from its text, without converting
// it: binary floating point would make 0.3 fail multipleOf 0.1 and merge
// integers above 2^53 with their neighbours.
//
// The value is 0.d₁d₂…dₙ × 10^point, negative when neg, where the digits
// d are hi followed by lo (the parts before and after the decimal point in
// the text) with leading and trailing zeros removed. Zero has no digits.
// Both parts are slices of the text, so reading a number allocates nothing.
type decimal struct {
	hi, lo string
	point  int64
	neg    bool
}

// maxExponent bounds the exponent a decimal keeps. Texts from
// jsonvalue.Parse have exponents far smaller; the bound keeps arithmetic on
// the decimal point from overflowing for numbers that callers build
// themselves.
const maxExponent = 1 << 40

// parseDecimal reads a JSON number: an optional minus sign, digits, an
// optional fraction and an optional exponent whose sign may be "+" (as
// strconv writes it).
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[start:i]
	if intPart == "" {
		return decimal{}, false
	}
	var frac string
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		frac = s[start:i]
		if frac == "" {
			return decimal{}, false
		}
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		negExp := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			negExp = s[i] == '-'
			i++
		}
		start = i
		for i < len(s) && isDigit(s[i]) {
			if exp < maxExponent {
				exp = exp*10 + int64(s[i]-'0')
			}
			i++
		}
		if start == i {
			return decimal{}, false
		}
		if negExp {
			exp = -exp
		}
	}
	if i != len(s) {
		return decimal{}, false
	}

	// Find the first and last non-zero digits across both parts.
	n := len(intPart) + len(frac)
	digit := func(k int) byte {
		if k < len(intPart) {
			return intPart[k]
		}
		return frac[k-len(intPart)]
	}
	first := 0
	for first < n && digit(first) == '0' {
		first++
	}
	if first == n {
		return decimal{}, true // zero, whatever its sign
	}
	last := n - 1
	for digit(last) == '0' {
		last--
	}
	d.point = int64(len(intPart)) + exp - int64(first)
	if first < len(intPart) {
		d.hi = intPart[first:min(last+1, len(intPart))]
		if last >= len(intPart) {
			d.lo = frac[:last+1-len(intPart)]
		}
	} else {
		d.lo = frac[first-len(intPart) : last+1-len(intPart)]
	}
	return d, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digits is the number of significant digits.
func (d decimal) digits() int { return len(d.hi) + len(d.lo) }

func (d decimal) digit(k int) byte {
	if k < len(d.hi) {
		return d.hi[k]
	}
	return d.lo[k-len(d.hi)]
}

func (d decimal) sign() int {
	switch {
	case d.digits() == 0:
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// isInteger reports whether d has no fractional part: every significant
// digit stands before the decimal point.
func (d decimal) isInteger() bool {
	return d.point >= int64(d.digits())
}

// compareDecimals returns -1, 0 or +1 as a is less than, equal to or
// greater than b.
func compareDecimals(a, b decimal) int {
	sa, sb := a.sign(), b.sign()
	if sa != sb {
		if sa < sb {
			return -1
		}
		return 1
	}
	if sa == 0 {
		return 0
	}
	return sa * compareMagnitudes(a, b)
}

// compareMagnitudes compares non-zero decimals by absolute value. With no
// leading zeros, the position of the decimal point decides first; then the
// digits, and a longer run of digits is larger because its last one is
// not zero.
func compareMagnitudes(a, b decimal) int {
	if a.point != b.point {
		if a.point < b.point {
			return -1
		}
		return 1
	}
	na, nb := a.digits(), b.digits()
	for k := range min(na, nb) {
		if ca, cb := a.digit(k), b.digit(k); ca != cb {
			if ca < cb {
				return -1
			}
			return 1
		}
	}
	switch {
	case na < nb:
		return -1
	case na > nb:
		return 1
	}
	return 0
}

// isMultipleOf reports whether d divided by m, which is greater than zero,
// is an integer.
//
// Write d = D × 10^e and m = M × 10^f with integers D and M that have no
// trailing zeros. Then d/m = (D/M) × 10^(e-f). If e < f the quotient is an
// integer only if 10 divides D, which it does not; otherwise M must divide
// D × 10^(e-f). Both fit in 64 bits for the numbers schemas and inputs
// usually hold, and big integers handle the rest.
func (d decimal) isMultipleOf(m decimal) bool {
	if d.digits() == 0 {
		return true
	}
	shift := (d.point - int64(d.digits())) - (m.point - int64(m.digits()))
	if shift < 0 {
		return false
	}
	if dv, ok := d.uint64(); ok {
		if mv, ok := m.uint64(); ok {
			return mulMod(dv%mv, powMod(10, uint64(shift), mv), mv) == 0
		}
	}
	dv, mv := d.bigInt(), m.bigInt()
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(shift), mv)
	p.Mul(p, dv)
	return p.Mod(p, mv).Sign() == 0
}

// uint64 returns the significant digits as an integer, if they fit.
func (d decimal) uint64() (uint64, bool) {
	n := d.digits()
	if n > 19 {
		return 0, false
	}
	var v uint64
	for k := range n {
		v = v*10 + uint64(d.digit(k)-'0')
	}
	return v, true
}

func (d decimal) bigInt() *big.Int {
	v, _ := new(big.Int).SetString(d.hi+d.lo, 10)
	return v
}

func mulMod(a, b, m uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return bits.Rem64(hi, lo, m)
}

func powMod(base, exp, m uint64) uint64 {
	result := uint64(1) % m
	base %= m
	for exp > 0 {
		if exp&1 == 1 {
			result = mulMod(result, base, m)
		}
		base = mulMod(base, base, m)
		exp >>= 1
	}
	return result
}
