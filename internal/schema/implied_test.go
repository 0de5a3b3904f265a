package schema_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap/internal/schema"
)

type impliedName string

type impliedPlain struct {
	ID     string      `json:"id" description:"the id" example:"tr_1"`
	Status impliedName `json:"status"`
	Amount float64     `json:"amount"`
	Ratio  float32     `json:"ratio"`
	Count  int         `json:"count"`
	Small  int8        `json:"small"`
	Big    uint64      `json:"big"`
	Byte   uint8       `json:"byte"`
	OK     bool        `json:"ok"`
	NoTag  string
	Hidden string `json:"-"`
	secret string
}

// String reads the unexported field, which ImpliedBy must skip.
func (p impliedPlain) String() string { return p.ID + p.secret }

type impliedEmpty struct{}

type textName string

func (textName) MarshalText() ([]byte, error) { return []byte("t"), nil }

func TestImpliedBy(t *testing.T) {
	for _, c := range []struct {
		name string
		t    reflect.Type
		want bool
	}{
		{"plain struct", reflect.TypeFor[impliedPlain](), true},
		{"empty struct", reflect.TypeFor[impliedEmpty](), true},
		{"pointer to struct", reflect.TypeFor[*impliedPlain](), false},
		{"slice", reflect.TypeFor[[]impliedPlain](), false},
		{"string", reflect.TypeFor[string](), false},
		{"omitempty", reflect.TypeFor[struct {
			A string `json:"a,omitempty"`
		}](), false},
		{"string option", reflect.TypeFor[struct {
			A int `json:"a,string"`
		}](), false},
		{"enum tag", reflect.TypeFor[struct {
			A string `json:"a" enum:"x,y"`
		}](), false},
		{"minimum tag", reflect.TypeFor[struct {
			A float64 `json:"a" minimum:"1"`
		}](), false},
		{"format tag", reflect.TypeFor[struct {
			A string `json:"a" format:"email"`
		}](), false},
		{"nested struct", reflect.TypeFor[struct{ A impliedEmpty }](), false},
		{"slice field", reflect.TypeFor[struct{ A []string }](), false},
		{"pointer field", reflect.TypeFor[struct{ A *string }](), false},
		{"time field", reflect.TypeFor[struct{ A time.Time }](), false},
		{"json.Number field", reflect.TypeFor[struct{ A json.Number }](), false},
		{"text marshaler field", reflect.TypeFor[struct{ A textName }](), false},
		{"embedded", reflect.TypeFor[struct{ impliedEmpty }](), false},
		{"any field", reflect.TypeFor[struct{ A any }](), false},
	} {
		if got := schema.ImpliedBy(c.t); got != c.want {
			t.Errorf("%s: ImpliedBy = %v, want %v", c.name, got, c.want)
		}
	}
}

// Whatever a type ImpliedBy accepts holds, its encoding fits the derived
// schema: random values, extremes and invalid UTF-8 included.
func TestImpliedByHolds(t *testing.T) {
	typ := reflect.TypeFor[impliedPlain]()
	if !schema.ImpliedBy(typ) {
		t.Fatal("the test type is not implied")
	}
	doc, err := schema.ForOutput(typ)
	if err != nil {
		t.Fatal(err)
	}
	v, err := schema.Compile(doc)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewChaCha8([32]byte{13}))
	strs := []string{"", "a", "\xff\xfe", "\u2028", strings.Repeat("x", 300), "\x00"}
	for i := range 3000 {
		val := reflect.New(typ).Elem()
		for j := range typ.NumField() {
			f := val.Field(j)
			if !f.CanSet() {
				continue
			}
			switch f.Kind() {
			case reflect.String:
				f.SetString(strs[rng.IntN(len(strs))])
			case reflect.Bool:
				f.SetBool(rng.IntN(2) == 1)
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				x := rng.Int64()
				if i%3 == 0 {
					x = math.MinInt64
				}
				if f.OverflowInt(x) {
					x = x % (1 << (f.Type().Bits() - 1))
				}
				f.SetInt(x)
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
				x := rng.Uint64()
				if f.OverflowUint(x) {
					x = x % (1 << f.Type().Bits())
				}
				f.SetUint(x)
			case reflect.Float32:
				f.SetFloat(float64(math.Float32frombits(rng.Uint32())))
			case reflect.Float64:
				f.SetFloat(math.Float64frombits(rng.Uint64()))
			}
		}
		data, err := json.Marshal(val.Interface())
		if err != nil {
			continue // non-finite floats: the executor reports the encoding error
		}
		violations, err := v.ValidateJSON(data)
		if err != nil || len(violations) > 0 {
			t.Fatalf("%s does not fit %s: %v %v", data, doc, violations, err)
		}
	}
}
