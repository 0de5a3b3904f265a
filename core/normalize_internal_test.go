package core

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// normalizedField must give, for every field it answers for, the value
// the whole encoding has; these types cover every rule of its plan.

type upperValue string

func (u upperValue) MarshalJSON() ([]byte, error) {
	return json.Marshal(strings.ToUpper(string(u)))
}

type upperPointer string

func (u *upperPointer) MarshalJSON() ([]byte, error) {
	return json.Marshal(strings.ToUpper(string(*u)))
}

type textValue int

func (t textValue) MarshalText() ([]byte, error) { return []byte("n" + string(rune('0'+int(t)))), nil }

type namedString string

type plainIn struct {
	Name     string         `json:"name"`
	Number   json.Number    `json:"number"`
	Named    namedString    `json:"named"`
	HTML     string         `json:"html"`
	Amount   float64        `json:"amount"`
	Count    int            `json:"count,omitempty"`
	Big      int64          `json:"big"`
	Flag     bool           `json:"flag,omitempty"`
	Tags     []string       `json:"tags,omitempty"`
	Meta     map[string]any `json:"meta"`
	When     time.Time      `json:"when"`
	Upper    upperValue     `json:"upper"`
	Text     textValue      `json:"text"`
	Any      any            `json:"any"`
	Ptr      *string        `json:"ptr,omitempty"`
	Untagged string
	Skipped  string            `json:"-"`
	Nested   struct{ A int }   `json:"nested"`
	Raw      json.RawMessage   `json:"raw"`
	Ints     map[int]string    `json:"ints"`
	Bytes    []byte            `json:"bytes"`
	Array    [2]float32        `json:"array"`
	Strs     map[string]string `json:"strs,omitempty"`
	hidden   string
}

type embedded struct{ E string }

type withEmbedded struct {
	embedded
	X string `json:"x"`
}

type withStringOpt struct {
	N int `json:"n,string"`
}

type withOmitZero struct {
	T time.Time `json:"t,omitzero"`
}

// withDuplicates names "A" twice: encoding/json lets the tagged field win,
// which the plan leaves to encoding/json.
type withDuplicates struct {
	A string
	B string `json:"A"`
	C string `json:"c"`
}

type withPointerMarshaler struct {
	U upperPointer `json:"u"`
}

type selfMarshaling struct{ A string }

func (selfMarshaling) MarshalJSON() ([]byte, error) { return []byte(`{"A":"other"}`), nil }

func TestNormalizedFieldMatchesWholeEncoding(t *testing.T) {
	s := "pointed"
	full := plainIn{
		Name: "acc_456", Number: "100.50", Named: "n", HTML: "<a href=\"x\">&amp;</a>\u2028", Amount: 250.75, Count: 3,
		Big: 1 << 60, Flag: true, Tags: []string{"a", "b"}, Meta: map[string]any{"k": []any{1.5, "x"}},
		When: time.Date(2026, 11, 30, 10, 0, 0, 5, time.UTC), Upper: "eur", Text: 4, Any: map[string]int{"z": 1},
		Ptr: &s, Untagged: "u", Skipped: "s", Raw: json.RawMessage(`{"r":[1,2]}`),
		Ints: map[int]string{2: "two"}, Bytes: []byte{0, 1, 2}, Array: [2]float32{0.1, 3}, Strs: map[string]string{"a": "b"},
		hidden: "h",
	}
	full.Nested.A = 7
	inputs := map[string]any{
		"plain":                             full,
		"plain zero":                        plainIn{},
		"pointer":                           &full,
		"nil pointer":                       (*plainIn)(nil),
		"invalid utf-8":                     plainIn{Name: "a\xffb"},
		"embedded":                          withEmbedded{embedded{"e"}, "x"},
		"string option":                     withStringOpt{N: 5},
		"omitzero":                          withOmitZero{},
		"duplicates":                        withDuplicates{"1", "2", "3"},
		"pointer marshaler":                 withPointerMarshaler{U: "gbp"},
		"pointer marshaler through pointer": &withPointerMarshaler{U: "gbp"},
		"self marshaling":                   selfMarshaling{A: "mine"},
		"not a struct":                      map[string]any{"a": 1},
	}
	fields := []string{"name", "number", "named", "html", "amount", "count", "big", "flag", "tags", "meta", "when", "upper", "text",
		"any", "ptr", "Untagged", "Skipped", "nested", "raw", "ints", "bytes", "array", "strs", "hidden",
		"E", "x", "n", "t", "a", "c", "u", "A", "missing"}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			whole, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			var members map[string]json.RawMessage
			if _, m, err := jsonvalue.ParseObject(whole); err == nil {
				members = m
			}
			for _, f := range fields {
				got, ok, known := normalizedField(in, f)
				if !known {
					continue
				}
				want, wantOK := members[f]
				if ok != wantOK {
					t.Errorf("field %q: present = %v, whole encoding %s says %v", f, ok, whole, wantOK)
					continue
				}
				if ok && !sameJSON(t, got, want) {
					t.Errorf("field %q = %s, whole encoding has %s", f, got, want)
				}
			}
		})
	}
}

func TestNormalizedFieldPlans(t *testing.T) {
	// Which types are answered field by field, and which fall back.
	for _, c := range []struct {
		in    any
		whole bool
	}{
		{plainIn{}, false},
		{&plainIn{}, false},
		{withEmbedded{}, true},
		{withStringOpt{}, true},
		{withOmitZero{}, true},
		{withDuplicates{}, true},
		{withPointerMarshaler{}, true},
		{selfMarshaling{}, true},
		{map[string]any{}, true},
	} {
		_, _, known := normalizedField(c.in, "name")
		if known == c.whole {
			t.Errorf("%T: answered field by field = %v, want %v", c.in, known, !c.whole)
		}
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return cmp.Equal(va, vb)
}

func BenchmarkInvocationNormalized(b *testing.B) {
	in := plainIn{Name: "acc_456", Amount: 250.75}
	b.ReportAllocs()
	for b.Loop() {
		inv := &Invocation{Input: in}
		if _, ok := inv.Normalized("name"); !ok {
			b.Fatal("no name")
		}
		if _, ok := inv.Normalized("amount"); !ok {
			b.Fatal("no amount")
		}
	}
}

func TestAppendPlainMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewChaCha8([32]byte{11}))
	values := []any{true, false, 0, -1, int8(-128), int16(300), int32(-7), int64(math.MinInt64), uint(0),
		uint8(255), uint16(65535), uint32(1 << 31), uint64(math.MaxUint64), uintptr(9), "", "plain",
		0.0, math.Copysign(0, -1), 1.0, -1.5, 250.75, 0.1, 1e-6, 9.99e-7, 1e-7, 1.5e-300, 1e20, 1e21, 123456789e13,
		math.MaxFloat64, math.SmallestNonzeroFloat64, float32(0.1), float32(1e-7), float32(3e38), float32(1e21),
		float32(9.99e20), float32(-2.5e-6)}
	for range 2000 {
		values = append(values, math.Float64frombits(rng.Uint64()), math.Float32frombits(rng.Uint32()), rng.Int64(), rng.Uint64())
	}
	for _, v := range values {
		want, wantErr := json.Marshal(v)
		got, done := appendPlain(nil, reflect.ValueOf(v))
		if wantErr != nil {
			if done {
				t.Errorf("%#v: wrote %s, encoding/json refuses it: %v", v, got, wantErr)
			}
			continue
		}
		if !done {
			t.Errorf("%#v: not written, encoding/json writes %s", v, want)
			continue
		}
		if s, ok := v.(string); ok && s != "" {
			continue // escapes may differ; TestNormalizedFieldMatchesWholeEncoding compares values
		}
		if string(got) != string(want) {
			t.Errorf("%#v: wrote %s, encoding/json writes %s", v, got, want)
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(1), float32(math.Inf(-1)), "bad \xff utf-8"} {
		if got, done := appendPlain(nil, reflect.ValueOf(v)); done {
			t.Errorf("%#v: wrote %s, want it left to encoding/json", v, got)
		}
	}
}

type ptrCents int

func (c *ptrCents) MarshalJSON() ([]byte, error) { return []byte(`"cents"`), nil }

type innerWithPointerMarshaler struct{ V ptrCents }

type outerNested struct {
	In  innerWithPointerMarshaler `json:"in"`
	Arr [1]ptrCents               `json:"arr"`
}

type oddTagName struct {
	A int `json:"a→b"`
	B int `json:"b"`
}

type nilSafe struct{}

func (*nilSafe) MarshalJSON() ([]byte, error) { return []byte(`"none"`), nil }

type withMarshalerInterface struct {
	M json.Marshaler `json:"m"`
}

// Shapes where a field encoded alone could read differently from the same
// field inside the whole encoding: pointer-receiver marshalers nested in a
// field (reached only when the whole input is addressable), a tag name
// encoding/json ignores, and an interface type promising a marshaler that
// holds a nil pointer.
func TestNormalizedFieldNestedMethodsAndNames(t *testing.T) {
	for name, c := range map[string]struct {
		in     any
		fields []string
	}{
		"nested pointer marshaler, *struct input": {&outerNested{}, []string{"in", "arr"}},
		"nested pointer marshaler, struct input":  {outerNested{}, []string{"in", "arr"}},
		"tag name encoding/json ignores":          {oddTagName{A: 1, B: 2}, []string{"a→b", "A", "b"}},
		"marshaler interface holding nil":         {withMarshalerInterface{M: (*nilSafe)(nil)}, []string{"m"}},
	} {
		t.Run(name, func(t *testing.T) {
			whole, err := json.Marshal(c.in)
			if err != nil {
				t.Fatal(err)
			}
			_, members, _ := jsonvalue.ParseObject(whole)
			for _, f := range c.fields {
				got, ok, known := normalizedField(c.in, f)
				if !known {
					continue // answered by the whole encoding itself
				}
				want, wantOK := members[f]
				if ok != wantOK || (ok && !sameJSON(t, got, want)) {
					t.Errorf("field %q: (%s, %v), the whole encoding %s has (%s, %v)", f, got, ok, whole, want, wantOK)
				}
			}
		})
	}
}
