package jsonvalue

import (
	"hash/maphash"
	"math/big"
	"math/bits"
	"strings"
)

// Decimal is a JSON number read exactly from its text, without converting
// it: binary floating point would make 0.3 fail a multipleOf 0.1 and merge
// integers above 2^53 with their neighbours. Schema validation and grant
// constraints both compare numbers with it.
//
// The value is 0.d₁d₂…dₙ × 10^point, negative when neg, where the digits
// d are hi followed by lo (the parts before and after the decimal point in
// the text) with leading and trailing zeros removed. Zero has no digits.
// Both parts are slices of the text, so reading a number allocates
// nothing. An exponent too long for int64 arithmetic, which only a text
// that did not come from Parse can hold, keeps the point in bigPoint, so
// that comparisons stay exact whatever the exponent.
type Decimal struct {
	hi, lo   string
	point    int64
	bigPoint *big.Int
	neg      bool
}

// maxExponentDigits is the longest exponent, leading zeros aside, kept in
// int64: far from overflowing when the position of the point is added.
const maxExponentDigits = 15

// ParseDecimal reads a JSON number: an optional minus sign, digits, an
// optional fraction and an optional exponent whose sign may be "+" (as
// strconv writes it). Leading zeros of the integer part are taken as
// strconv takes them.
func ParseDecimal(s string) (Decimal, bool) {
	var d Decimal
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
		return Decimal{}, false
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
			return Decimal{}, false
		}
	}
	var exp string
	negExp := false
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			negExp = s[i] == '-'
			i++
		}
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if start == i {
			return Decimal{}, false
		}
		exp = s[start:i]
		for len(exp) > 1 && exp[0] == '0' {
			exp = exp[1:]
		}
	}
	if i != len(s) {
		return Decimal{}, false
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
		return Decimal{}, true // zero, whatever its sign
	}
	last := n - 1
	for digit(last) == '0' {
		last--
	}
	shift := int64(len(intPart)) - int64(first)
	if len(exp) > maxExponentDigits {
		d.bigPoint = bigPoint(exp, negExp, shift)
	} else {
		var e int64
		for k := 0; k < len(exp); k++ {
			e = e*10 + int64(exp[k]-'0')
		}
		if negExp {
			e = -e
		}
		d.point = e + shift
	}
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

// bigPoint is the position of the point for an exponent too long for
// int64. It reads a copy of the exponent, so that the number's text, whose
// parts a Decimal keeps, never reaches the heap through math/big.
func bigPoint(exp string, neg bool, shift int64) *big.Int {
	e, _ := new(big.Int).SetString(strings.Clone(exp), 10)
	if neg {
		e.Neg(e)
	}
	return e.Add(e, big.NewInt(shift))
}

// digitCount is the number of significant digits.
func (d Decimal) digitCount() int { return len(d.hi) + len(d.lo) }

func (d Decimal) digit(k int) byte {
	if k < len(d.hi) {
		return d.hi[k]
	}
	return d.lo[k-len(d.hi)]
}

// Sign returns -1, 0 or +1.
func (d Decimal) Sign() int {
	switch {
	case d.digitCount() == 0:
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// pointBig is the position of the decimal point as a big integer.
func (d Decimal) pointBig() *big.Int {
	if d.bigPoint != nil {
		return d.bigPoint
	}
	return big.NewInt(d.point)
}

// IsInteger reports whether d has no fractional part: every significant
// digit stands before the decimal point.
func (d Decimal) IsInteger() bool {
	if d.bigPoint != nil {
		return d.bigPoint.Sign() > 0
	}
	return d.point >= int64(d.digitCount())
}

// CompareDecimals returns -1, 0 or +1 as a is less than, equal to or
// greater than b.
func CompareDecimals(a, b Decimal) int {
	sa, sb := a.Sign(), b.Sign()
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
func compareMagnitudes(a, b Decimal) int {
	if a.bigPoint != nil || b.bigPoint != nil {
		if c := a.pointBig().Cmp(b.pointBig()); c != 0 {
			return c
		}
	} else if a.point != b.point {
		if a.point < b.point {
			return -1
		}
		return 1
	}
	na, nb := a.digitCount(), b.digitCount()
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

// IsMultipleOf reports whether d divided by m, which is greater than zero,
// is an integer.
//
// Write d = D × 10^e and m = M × 10^f with integers D and M that have no
// trailing zeros. Then d/m = (D/M) × 10^(e-f). If e < f the quotient is an
// integer only if 10 divides D, which it does not; otherwise M must divide
// D × 10^(e-f). Both fit in 64 bits for the numbers schemas and inputs
// usually hold, and big integers handle the rest.
func (d Decimal) IsMultipleOf(m Decimal) bool {
	if d.digitCount() == 0 {
		return true
	}
	if d.bigPoint != nil || m.bigPoint != nil {
		shift := new(big.Int).Sub(d.pointBig(), big.NewInt(int64(d.digitCount())))
		shift.Sub(shift, m.pointBig())
		shift.Add(shift, big.NewInt(int64(m.digitCount())))
		if shift.Sign() < 0 {
			return false
		}
		dv, mv := d.bigInt(), m.bigInt()
		p := new(big.Int).Exp(big.NewInt(10), shift, mv)
		p.Mul(p, dv)
		return p.Mod(p, mv).Sign() == 0
	}
	shift := (d.point - int64(d.digitCount())) - (m.point - int64(m.digitCount()))
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

// WriteHash writes d to h so that equal decimals, however they were
// spelled, write the same bytes.
func (d Decimal) WriteHash(h *maphash.Hash) {
	h.WriteByte('0' + byte(d.Sign()+1))
	if d.bigPoint != nil {
		h.WriteByte('b')
		h.WriteString(d.bigPoint.String())
	} else {
		var b [8]byte
		for i := range b {
			b[i] = byte(uint64(d.point) >> (8 * i))
		}
		h.Write(b[:])
	}
	h.WriteString(d.hi)
	h.WriteString(d.lo)
}

// uint64 returns the significant digits as an integer, if they fit.
func (d Decimal) uint64() (uint64, bool) {
	n := d.digitCount()
	if n > 19 {
		return 0, false
	}
	var v uint64
	for k := range n {
		v = v*10 + uint64(d.digit(k)-'0')
	}
	return v, true
}

func (d Decimal) bigInt() *big.Int {
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
