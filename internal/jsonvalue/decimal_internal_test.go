package jsonvalue

import (
	"encoding/json"
	"math/big"
	"testing"
)

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		in     string
		ok     bool
		hi, lo string
		point  int64
		neg    bool
	}{
		{in: "0", ok: true},
		{in: "-0.000e5", ok: true},
		{in: "5", ok: true, hi: "5", point: 1},
		{in: "-5.0", ok: true, hi: "5", point: 1, neg: true},
		{in: "1200", ok: true, hi: "12", point: 4},
		{in: "10.50", ok: true, hi: "10", lo: "5", point: 2},
		{in: "0.0012", ok: true, lo: "12", point: -2},
		{in: "1.5e+3", ok: true, hi: "1", lo: "5", point: 4},
		{in: "1.5E-3", ok: true, hi: "1", lo: "5", point: -2},
		{in: "123e400", ok: true, hi: "123", point: 403},
		{in: "", ok: false},
		{in: "-", ok: false},
		{in: ".5", ok: false},
		{in: "5.", ok: false},
		{in: "1e", ok: false},
		{in: "1e+", ok: false},
		{in: "0x10", ok: false},
		{in: "1 ", ok: false},
		{in: "+1", ok: false},
		{in: "NaN", ok: false},
	}
	for _, tt := range tests {
		d, ok := ParseDecimal(tt.in)
		if ok != tt.ok {
			t.Errorf("ParseDecimal(%q) ok = %v, want %v", tt.in, ok, tt.ok)
			continue
		}
		want := Decimal{hi: tt.hi, lo: tt.lo, point: tt.point, neg: tt.neg}
		if ok && d != want {
			t.Errorf("ParseDecimal(%q) = %+v, want %+v", tt.in, d, want)
		}
	}
}

func TestDecimalArithmetic(t *testing.T) {
	numbers := []string{
		"0", "-0", "1", "-1", "0.1", "0.3", "0.30", "3e-1", "1e400", "-1e400", "1e-400",
		"9007199254740992", "9007199254740993", "18446744073709551615", "18446744073709551616",
		"123456789012345678901234567890", "1.0000000000000000000001", "19.99", "19.999", "0.01",
		"2.5", "25e-1", "1e21", "0.000000000000000000011", "11000000000000000000000000",
	}
	for _, a := range numbers {
		for _, b := range numbers {
			checkAgainstRat(t, a, b)
		}
	}
}

// checkAgainstRat compares the decimal operations on two number texts with
// the same operations on exact rationals.
func checkAgainstRat(t *testing.T, a, b string) {
	t.Helper()
	da, okA := ParseDecimal(a)
	db, okB := ParseDecimal(b)
	ra, okRA := new(big.Rat).SetString(a)
	rb, okRB := new(big.Rat).SetString(b)
	if !okA || !okB || !okRA || !okRB {
		t.Fatalf("%q or %q does not parse", a, b)
	}
	if got, want := CompareDecimals(da, db), ra.Cmp(rb); got != want {
		t.Errorf("compare(%s, %s) = %d, want %d", a, b, got, want)
	}
	if got, want := da.IsInteger(), ra.IsInt(); got != want {
		t.Errorf("isInteger(%s) = %v, want %v", a, got, want)
	}
	if rb.Sign() > 0 {
		if got, want := da.IsMultipleOf(db), new(big.Rat).Quo(ra, rb).IsInt(); got != want {
			t.Errorf("isMultipleOf(%s, %s) = %v, want %v", a, b, got, want)
		}
	}
}

// FuzzDecimal checks the exact decimal operations on any two numbers
// Parse accepts against big.Rat.
func FuzzDecimal(f *testing.F) {
	f.Add("0.3", "0.1")
	f.Add("-12.5e3", "2.5")
	f.Add("123456789012345678901234567890", "7")
	f.Add("1e400", "3e-5")
	f.Add("0.00000000000000000000000000001", "1e-30")
	f.Fuzz(func(t *testing.T, a, b string) {
		na, errA := Parse([]byte(a))
		nb, errB := Parse([]byte(b))
		if errA != nil || errB != nil {
			return
		}
		sa, okA := na.(json.Number)
		sb, okB := nb.(json.Number)
		if !okA || !okB {
			return
		}
		checkAgainstRat(t, string(sa), string(sb))
	})
}

// TestDecimalHugeExponents checks exponents beyond int64 arithmetic,
// which texts not from Parse (grant constraints) may hold: they compare
// exactly, never capped.
func TestDecimalHugeExponents(t *testing.T) {
	const big1, big2 = "1e99999999999999999999", "1e99999999999999999998"
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{big1, big2, 1},
		{big2, big1, -1},
		{"10e99999999999999999998", big1, 0},
		{"0.1e000000000000000000000000001", "1", 0},
		{big1, "1e400", 1},
		{"-" + big1, "-1e400", -1},
		{"1e-99999999999999999999", "0", 1},
		{"1e-99999999999999999999", "1e-99999999999999999998", -1},
		{"0e99999999999999999999", "0", 0},
	} {
		a, okA := ParseDecimal(tt.a)
		b, okB := ParseDecimal(tt.b)
		if !okA || !okB {
			t.Fatalf("%s or %s does not parse", tt.a, tt.b)
		}
		if got := CompareDecimals(a, b); got != tt.want {
			t.Errorf("CompareDecimals(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
	for _, tt := range []struct {
		d, m            string
		integer, divide bool
	}{
		{big1, "2", true, true},
		{"7" + big1[1:], "7", true, true},
		{big1, "7", true, false},
		{"1e-99999999999999999999", "1", false, false},
		{"1e-99999999999999999999", "1e-99999999999999999999", false, true},
		{"3", "1e-99999999999999999999", true, true},
		{"3", big1, true, false},
	} {
		d, _ := ParseDecimal(tt.d)
		m, _ := ParseDecimal(tt.m)
		if got := d.IsInteger(); got != tt.integer {
			t.Errorf("IsInteger(%s) = %v", tt.d, got)
		}
		if got := d.IsMultipleOf(m); got != tt.divide {
			t.Errorf("IsMultipleOf(%s, %s) = %v", tt.d, tt.m, got)
		}
	}
}
