package schema_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/internal/schema"
)

// Level has a text form, so it is described as a string.
type Level int

func (l Level) MarshalText() ([]byte, error) {
	switch l {
	case 0:
		return []byte("low"), nil
	case 1:
		return []byte("high"), nil
	}
	return nil, fmt.Errorf("bad level %d", int(l))
}

func (l *Level) UnmarshalText(b []byte) error {
	switch string(b) {
	case "low":
		*l = 0
	case "high":
		*l = 1
	default:
		return fmt.Errorf("unknown level %q", b)
	}
	return nil
}

// Custom has its own JSON form, which For cannot know.
type Custom struct{ X int }

func (Custom) MarshalJSON() ([]byte, error) { return []byte(`"custom"`), nil }

// Decoder has only a custom decoding.
type Decoder struct{ X int }

func (*Decoder) UnmarshalJSON([]byte) error { return nil }

type Key string

type Base struct {
	ID      string `json:"id" description:"identifier"`
	Created time.Time
}

type Audit struct {
	By string `json:"by"`
}

type inner struct {
	Hidden string `json:"hidden"`
}

type Shadow struct {
	Name string `json:"name"`
}

type Node struct {
	Children []Node
}

type Pair struct {
	Left  *PairB
	Right int
}

type PairB struct {
	Back []Pair
}

type Tree map[string]Tree

func TestForGolden(t *testing.T) {
	const head = `{"$schema":"https://json-schema.org/draft/2020-12/schema",`
	tests := []struct {
		name string
		typ  reflect.Type
		want string
	}{
		{
			name: "empty struct",
			typ:  reflect.TypeFor[struct{}](),
			want: head + `"type":"object","properties":{},"additionalProperties":false}`,
		},
		{
			name: "pointer to struct at the top",
			typ:  reflect.TypeFor[*struct{ A bool }](),
			want: head + `"type":"object","properties":{"A":{"type":"boolean"}},"required":["A"],"additionalProperties":false}`,
		},
		{
			name: "scalars",
			typ: reflect.TypeFor[struct {
				B   bool
				S   string
				F32 float32
				F64 float64
				N   json.Number
			}](),
			want: head + `"type":"object","properties":{` +
				`"B":{"type":"boolean"},"S":{"type":"string"},"F32":{"type":"number"},"F64":{"type":"number"},"N":{"type":"number"}},` +
				`"required":["B","S","F32","F64","N"],"additionalProperties":false}`,
		},
		{
			name: "integer bounds",
			typ: reflect.TypeFor[struct {
				I   int
				I8  int8
				I16 int16
				I32 int32
				I64 int64
				U   uint
				U8  uint8
				U16 uint16
				U32 uint32
				U64 uint64
			}](),
			want: head + `"type":"object","properties":{` +
				`"I":{"type":"integer"},` +
				`"I8":{"type":"integer","minimum":-128,"maximum":127},` +
				`"I16":{"type":"integer","minimum":-32768,"maximum":32767},` +
				`"I32":{"type":"integer","minimum":-2147483648,"maximum":2147483647},` +
				`"I64":{"type":"integer"},` +
				`"U":{"type":"integer","minimum":0},` +
				`"U8":{"type":"integer","minimum":0,"maximum":255},` +
				`"U16":{"type":"integer","minimum":0,"maximum":65535},` +
				`"U32":{"type":"integer","minimum":0,"maximum":4294967295},` +
				`"U64":{"type":"integer","minimum":0}},` +
				`"required":["I","I8","I16","I32","I64","U","U8","U16","U32","U64"],"additionalProperties":false}`,
		},
		{
			name: "json names and options",
			typ: reflect.TypeFor[struct {
				Amount   int    `json:"amount"`
				Memo     string `json:"memo,omitempty"`
				Note     string `json:",omitzero"`
				Skipped  string `json:"-"`
				private  string
				Untagged bool
			}](),
			want: head + `"type":"object","properties":{` +
				`"amount":{"type":"integer"},"memo":{"type":"string"},"Note":{"type":"string"},"Untagged":{"type":"boolean"}},` +
				`"required":["amount","Untagged"],"additionalProperties":false}`,
		},
		{
			// Built at run time: linters flag this legal but odd tag.
			name: "a field named -",
			typ: reflect.StructOf([]reflect.StructField{
				{Name: "Dash", Type: reflect.TypeFor[string](), Tag: `json:"-,"`},
			}),
			want: head + `"type":"object","properties":{"-":{"type":"string"}},"required":["-"],"additionalProperties":false}`,
		},
		{
			name: "bytes, slices, arrays and maps",
			typ: reflect.TypeFor[struct {
				Raw    []byte            `json:"raw"`
				Tags   []string          `json:"tags"`
				Grid   [][]int8          `json:"grid"`
				Pair   [2]bool           `json:"pair"`
				Octets [4]byte           `json:"octets"`
				Labels map[string]string `json:"labels"`
				ByKey  map[Key][]float64 `json:"by_key"`
				Nested map[string]struct{ A int }
			}](),
			want: head + `"type":"object","properties":{` +
				`"raw":{"type":["string","null"],"contentEncoding":"base64"},` +
				`"tags":{"type":["array","null"],"items":{"type":"string"}},` +
				`"grid":{"type":["array","null"],"items":{"type":["array","null"],"items":{"type":"integer","minimum":-128,"maximum":127}}},` +
				`"pair":{"type":"array","items":{"type":"boolean"},"minItems":2,"maxItems":2},` +
				`"octets":{"type":"array","items":{"type":"integer","minimum":0,"maximum":255},"minItems":4,"maxItems":4},` +
				`"labels":{"type":["object","null"],"properties":{},"additionalProperties":{"type":"string"}},` +
				`"by_key":{"type":["object","null"],"properties":{},"additionalProperties":{"type":["array","null"],"items":{"type":"number"}}},` +
				`"Nested":{"type":["object","null"],"properties":{},"additionalProperties":{"type":"object","properties":{"A":{"type":"integer"}},"required":["A"],"additionalProperties":false}}},` +
				`"required":["raw","tags","grid","pair","octets","labels","by_key","Nested"],"additionalProperties":false}`,
		},
		{
			name: "pointers are nullable",
			typ: reflect.TypeFor[struct {
				P  *string         `json:"p"`
				PP **int16         `json:"pp"`
				PS *[]string       `json:"ps"`
				PT *struct{}       `json:"pt"`
				PE *string         `json:"pe,omitempty" enum:"x,y"`
				PB *bool           `json:"pb" default:"true"`
				PM *map[string]int `json:"pm"`
			}](),
			want: head + `"type":"object","properties":{` +
				`"p":{"type":["string","null"]},` +
				`"pp":{"type":["integer","null"],"minimum":-32768,"maximum":32767},` +
				`"ps":{"type":["array","null"],"items":{"type":"string"}},` +
				`"pt":{"type":["object","null"],"properties":{},"additionalProperties":false},` +
				`"pe":{"type":["string","null"],"enum":["x","y",null]},` +
				`"pb":{"type":["boolean","null"],"default":true},` +
				`"pm":{"type":["object","null"],"properties":{},"additionalProperties":{"type":"integer"}}},` +
				`"required":["p","pp","ps","pt","pb","pm"],"additionalProperties":false}`,
		},
		{
			name: "text marshalers and time",
			typ: reflect.TypeFor[struct {
				At    time.Time  `json:"at"`
				Maybe *time.Time `json:"maybe"`
				Level Level      `json:"level" enum:"low,high"`
				Tier  *Level     `json:"tier"`
			}](),
			want: head + `"type":"object","properties":{` +
				`"at":{"type":"string","format":"date-time"},` +
				`"maybe":{"type":["string","null"],"format":"date-time"},` +
				`"level":{"type":"string","enum":["low","high"]},` +
				`"tier":{"type":["string","null"]}},` +
				`"required":["at","maybe","level","tier"],"additionalProperties":false}`,
		},
		{
			name: "embedded structs are promoted",
			typ: reflect.TypeFor[struct {
				Base
				*Audit
				inner
				Shadow
				Name  string `json:"name"`
				Named Shadow `json:"named"`
				Key
			}](),
			want: head + `"type":"object","properties":{` +
				`"id":{"type":"string","description":"identifier"},` +
				`"Created":{"type":"string","format":"date-time"},` +
				`"by":{"type":"string"},` +
				`"hidden":{"type":"string"},` +
				`"name":{"type":"string"},` +
				`"named":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false},` +
				`"Key":{"type":"string"}},` +
				`"required":["id","Created","hidden","name","named","Key"],"additionalProperties":false}`,
		},
		{
			name: "tagged embedded struct is a field",
			typ: reflect.TypeFor[struct {
				Base `json:"base"`
			}](),
			want: head + `"type":"object","properties":{` +
				`"base":{"type":"object","properties":{"id":{"type":"string","description":"identifier"},"Created":{"type":"string","format":"date-time"}},"required":["id","Created"],"additionalProperties":false}},` +
				`"required":["base"],"additionalProperties":false}`,
		},
		{
			name: "numeric tags",
			typ: reflect.TypeFor[struct {
				Amount float64 `json:"amount" minimum:"0.01" exclusiveMaximum:"1e6" multipleOf:"0.01" description:"in euros" example:"12.5"`
				Count  uint8   `json:"count" minimum:"1" maximum:"10" default:"3"`
				Step   int32   `json:"step" exclusiveMinimum:"-5" multipleOf:"5" enum:"0,5,10"`
				Ratio  float32 `json:"ratio" maximum:"1" minimum:"-1"`
			}](),
			want: head + `"type":"object","properties":{` +
				`"amount":{"type":"number","description":"in euros","minimum":0.01,"exclusiveMaximum":1e6,"multipleOf":0.01,"examples":[12.5]},` +
				`"count":{"type":"integer","minimum":1,"maximum":10,"default":3},` +
				`"step":{"type":"integer","enum":[0,5,10],"minimum":-2147483648,"exclusiveMinimum":-5,"maximum":2147483647,"multipleOf":5},` +
				`"ratio":{"type":"number","minimum":-1,"maximum":1}},` +
				`"required":["amount","count","step","ratio"],"additionalProperties":false}`,
		},
		{
			name: "string, array and map tags",
			typ: reflect.TypeFor[struct {
				Email  string            `json:"email" format:"email" maxLength:"254"`
				Code   string            `json:"code" pattern:"^[A-Z]{3}$" minLength:"3" maxLength:"3" default:"EUR" example:"USD"`
				Kind   string            `json:"kind" enum:"a,b c,"`
				Tags   []string          `json:"tags" minItems:"1" maxItems:"5" uniqueItems:"true"`
				Fixed  [3]int            `json:"fixed" uniqueItems:"true"`
				Labels map[string]string `json:"labels" minProperties:"1" maxProperties:"8"`
				Blob   []byte            `json:"blob" default:"aGk=" description:"raw \"bytes\"\n"`
			}](),
			want: head + `"type":"object","properties":{` +
				`"email":{"type":"string","format":"email","maxLength":254},` +
				`"code":{"type":"string","minLength":3,"maxLength":3,"pattern":"^[A-Z]{3}$","default":"EUR","examples":["USD"]},` +
				`"kind":{"type":"string","enum":["a","b c",""]},` +
				`"tags":{"type":["array","null"],"items":{"type":"string"},"minItems":1,"maxItems":5,"uniqueItems":true},` +
				`"fixed":{"type":"array","items":{"type":"integer"},"minItems":3,"maxItems":3,"uniqueItems":true},` +
				`"labels":{"type":["object","null"],"properties":{},"additionalProperties":{"type":"string"},"minProperties":1,"maxProperties":8},` +
				`"blob":{"type":["string","null"],"description":"raw \"bytes\"\n","contentEncoding":"base64","default":"aGk="}},` +
				`"required":["email","code","kind","tags","fixed","labels","blob"],"additionalProperties":false}`,
		},
		{
			name: "nested structs and shared types",
			typ: reflect.TypeFor[struct {
				Items []struct {
					Meta Audit `json:"meta"`
				} `json:"items"`
				First  Audit  `json:"first"`
				Second *Audit `json:"second,omitempty"`
			}](),
			want: head + `"type":"object","properties":{` +
				`"items":{"type":["array","null"],"items":{"type":"object","properties":{"meta":{"type":"object","properties":{"by":{"type":"string"}},"required":["by"],"additionalProperties":false}},"required":["meta"],"additionalProperties":false}},` +
				`"first":{"type":"object","properties":{"by":{"type":"string"}},"required":["by"],"additionalProperties":false},` +
				`"second":{"type":["object","null"],"properties":{"by":{"type":"string"}},"required":["by"],"additionalProperties":false}},` +
				`"required":["items","first"],"additionalProperties":false}`,
		},
		{
			name: "unsupported types behind json:\"-\" and unexported fields are ignored",
			typ: reflect.TypeFor[struct {
				Fn   func() `json:"-"`
				Any  any    `json:"-"`
				ch   chan int
				cplx complex64
				OK   bool `json:"ok"`
			}](),
			want: head + `"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := schema.For(tt.typ)
			if err != nil {
				t.Fatalf("For(%v) error: %v", tt.typ, err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("For(%v) mismatch (-want +got):\n%s", tt.typ, diff)
			}
			if !json.Valid(got) {
				t.Errorf("For(%v) is not valid JSON", tt.typ)
			}
			again, _ := schema.For(tt.typ)
			if string(again) != string(got) {
				t.Errorf("For(%v) is not deterministic", tt.typ)
			}
		})
	}
}

func TestForRejects(t *testing.T) {
	tests := []struct {
		name   string
		typ    reflect.Type
		field  string
		reason string // a part of the reason that must appear
	}{
		{"nil type", nil, "", "no type given"},
		{"top-level string", reflect.TypeFor[string](), "", "must be a struct or a pointer to a struct"},
		{"top-level slice", reflect.TypeFor[[]struct{}](), "", "must be a struct"},
		{"top-level map", reflect.TypeFor[map[string]int](), "", "must be a struct"},
		{"top-level interface", reflect.TypeFor[any](), "", "must be a struct"},
		{"top-level double pointer", reflect.TypeFor[**struct{}](), "", "must be a struct"},
		{"top-level time", reflect.TypeFor[time.Time](), "", "must be described by a JSON object, not a string"},
		{"interface field", reflect.TypeFor[struct{ V any }](), "V", "interface type"},
		{"error field", reflect.TypeFor[struct{ E error }](), "E", "interface type error"},
		{"interface deep", reflect.TypeFor[struct {
			Items []struct{ Meta fmt.Stringer }
		}](), "Items[].Meta", "interface type fmt.Stringer"},
		{"channel", reflect.TypeFor[struct{ C chan int }](), "C", "chan type chan int has no JSON form"},
		{"func", reflect.TypeFor[struct{ F func() }](), "F", "func type"},
		{"complex", reflect.TypeFor[struct{ Z complex128 }](), "Z", "complex128 type"},
		{"unsafe pointer", reflect.TypeFor[struct{ P unsafe.Pointer }](), "P", "unsafe.Pointer type"},
		{"int map key", reflect.TypeFor[struct{ M map[int]string }](), "M", "map key type int is not string-kinded"},
		{"map value", reflect.TypeFor[struct{ M map[string]any }](), "M[key]", "interface type"},
		{"raw message", reflect.TypeFor[struct{ R json.RawMessage }](), "R", "json.RawMessage cannot be described"},
		{"custom marshaler", reflect.TypeFor[struct{ C Custom }](), "C", "has its own MarshalJSON or UnmarshalJSON"},
		{"custom unmarshaler", reflect.TypeFor[struct{ D Decoder }](), "D", "has its own MarshalJSON or UnmarshalJSON"},
		{"big int", reflect.TypeFor[struct{ N *big.Int }](), "N", "has its own MarshalJSON or UnmarshalJSON"},
		{"recursive through slice", reflect.TypeFor[Node](), "Children[]", "recursive type schema_test.Node"},
		{"recursive through pointers", reflect.TypeFor[Pair](), "Left.Back[]", "recursive type schema_test.Pair"},
		{"recursive map", reflect.TypeFor[struct{ T Tree }](), "T[key]", "recursive type schema_test.Tree"},
		{"string option", reflect.TypeFor[struct {
			N int `json:"n,string"`
		}](), "N", `",string" json option is not supported`},
		// Built at run time: go vet rightly flags such tags in source.
		{"ambiguous names", reflect.StructOf([]reflect.StructField{
			{Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
			{Name: "B", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
		}), "A", `fields A and B all map to JSON name "x"`},
		{"ambiguous promoted names", reflect.StructOf([]reflect.StructField{
			{Name: "Shadow", Type: reflect.TypeFor[Shadow](), Anonymous: true},
			{Name: "Other", Type: reflect.TypeFor[struct{ Name string }](), Tag: `json:"-"`},
			{Name: "Audit", Type: reflect.TypeFor[Audit](), Anonymous: true},
			{Name: "Copy", Type: reflect.TypeFor[Copy](), Anonymous: true},
		}), "Copy.Name", `fields Copy.Name and Shadow.Name all map to JSON name "name"`},
		{"invalid tag name", reflect.StructOf([]reflect.StructField{
			{Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"a\"b"`},
		}), "A", `json tag name "a\"b" is not a valid JSON field name`},
		{"embedded pointer to unexported struct", reflect.TypeFor[struct{ *inner }](), "inner", "embedded pointer to unexported struct"},
		{"enum on slice", reflect.TypeFor[struct {
			S []string `enum:"a,b"`
		}](), "S", "tag enum: only string, integer, number and boolean fields take an enum"},
		{"enum on bytes", reflect.TypeFor[struct {
			S []byte `enum:"a,b"`
		}](), "S", "tag enum: only string"},
		{"enum integer", reflect.TypeFor[struct {
			N int `enum:"1,two"`
		}](), "N", `tag enum: "two" is not a valid int`},
		{"enum out of range", reflect.TypeFor[struct {
			N uint8 `enum:"1,256"`
		}](), "N", `tag enum: "256" is not a valid uint8`},
		{"enum boolean", reflect.TypeFor[struct {
			B bool `enum:"true,yes"`
		}](), "B", `tag enum: "yes" is not true or false`},
		{"enum duplicate", reflect.TypeFor[struct {
			S string `enum:"a,b,a"`
		}](), "S", `tag enum: value "a" is listed twice`},
		{"enum duplicate number spelling", reflect.TypeFor[struct {
			N int `enum:"1,+1"`
		}](), "N", `tag enum: value "+1" is listed twice`},
		{"enum text unmarshaler", reflect.TypeFor[struct {
			L Level `enum:"low,medium"`
		}](), "L", `tag enum: "medium" is not a valid schema_test.Level`},
		{"enum outside bounds", reflect.TypeFor[struct {
			N int `enum:"1,20" maximum:"10"`
		}](), "N", "enum value 20 violates the field's schema"},
		{"enum violating pattern", reflect.TypeFor[struct {
			S string `enum:"ab,c" pattern:"^a"`
		}](), "S", `enum value "c" violates the field's schema`},
		{"minimum on string", reflect.TypeFor[struct {
			S string `minimum:"1"`
		}](), "S", "tag minimum: only integer and number fields take numeric bounds"},
		{"minimum on text marshaler", reflect.TypeFor[struct {
			L Level `minimum:"1"`
		}](), "L", "tag minimum: only integer and number fields"},
		{"fractional minimum on int", reflect.TypeFor[struct {
			N int `minimum:"1.5"`
		}](), "N", `tag minimum: "1.5" is not a valid int`},
		{"negative minimum on uint", reflect.TypeFor[struct {
			N uint `minimum:"-1"`
		}](), "N", `tag minimum: "-1" is not a valid uint`},
		{"maximum out of int8 range", reflect.TypeFor[struct {
			N int8 `maximum:"128"`
		}](), "N", `tag maximum: "128" is not a valid int8`},
		{"float not a JSON number", reflect.TypeFor[struct {
			F float64 `maximum:"0x10"`
		}](), "F", `tag maximum: "0x10" is not a JSON number`},
		{"float NaN", reflect.TypeFor[struct {
			F float64 `minimum:"NaN"`
		}](), "F", `"NaN" is not a JSON number`},
		{"float32 out of range", reflect.TypeFor[struct {
			F float32 `maximum:"1e39"`
		}](), "F", `tag maximum: "1e39" is out of range for float32`},
		{"float with spaces", reflect.TypeFor[struct {
			F float64 `maximum:" 1"`
		}](), "F", `is not a JSON number`},
		{"multipleOf zero", reflect.TypeFor[struct {
			N int `multipleOf:"0"`
		}](), "N", "tag multipleOf: must be greater than 0"},
		{"multipleOf negative", reflect.TypeFor[struct {
			F float64 `multipleOf:"-0.5"`
		}](), "F", "tag multipleOf: must be greater than 0"},
		{"minimum above maximum", reflect.TypeFor[struct {
			N int `minimum:"5" maximum:"4"`
		}](), "N", "minimum 5 leaves no room below maximum 4"},
		{"exclusive bounds meet", reflect.TypeFor[struct {
			F float64 `exclusiveMinimum:"1" exclusiveMaximum:"1"`
		}](), "F", "exclusiveMinimum 1 leaves no room below exclusiveMaximum 1"},
		{"minimum at exclusive maximum", reflect.TypeFor[struct {
			F float64 `minimum:"2.5" exclusiveMaximum:"2.50"`
		}](), "F", "minimum 2.5 leaves no room below exclusiveMaximum 2.50"},
		{"exclusive minimum at maximum", reflect.TypeFor[struct {
			F float64 `exclusiveMinimum:"3" maximum:"3"`
		}](), "F", "exclusiveMinimum 3 leaves no room below maximum 3"},
		{"user bound against type bound", reflect.TypeFor[struct {
			N uint8 `maximum:"0" exclusiveMaximum:"0"`
		}](), "N", "minimum 0 leaves no room below exclusiveMaximum 0"},
		{"minLength on int", reflect.TypeFor[struct {
			N int `minLength:"1"`
		}](), "N", "tag minLength: only string fields take minLength"},
		{"maxLength on bytes", reflect.TypeFor[struct {
			B []byte `maxLength:"1"`
		}](), "B", "tag maxLength: only string fields"},
		{"negative length", reflect.TypeFor[struct {
			S string `minLength:"-1"`
		}](), "S", `tag minLength: "-1" is not a non-negative integer`},
		{"minLength above maxLength", reflect.TypeFor[struct {
			S string `minLength:"5" maxLength:"4"`
		}](), "S", "minLength 5 is greater than maxLength 4"},
		{"bad pattern", reflect.TypeFor[struct {
			S string `pattern:"a("`
		}](), "S", "tag pattern: does not compile"},
		{"pattern on slice", reflect.TypeFor[struct {
			S []string `pattern:"a"`
		}](), "S", "tag pattern: only string fields"},
		{"unknown format", reflect.TypeFor[struct {
			S string `format:"e-mail"`
		}](), "S", `tag format: unknown format "e-mail"`},
		{"format on int", reflect.TypeFor[struct {
			N int `format:"email"`
		}](), "N", "tag format: only string fields"},
		{"format on time", reflect.TypeFor[struct {
			T time.Time `format:"date"`
		}](), "T", `tag format: the type already has format "date-time"`},
		{"minItems on string", reflect.TypeFor[struct {
			S string `minItems:"1"`
		}](), "S", "tag minItems: only slice fields take minItems"},
		{"minItems on array", reflect.TypeFor[struct {
			A [2]int `minItems:"1"`
		}](), "A", "tag minItems: an array's length is fixed by its type"},
		{"minItems above maxItems", reflect.TypeFor[struct {
			S []int `minItems:"3" maxItems:"2"`
		}](), "S", "minItems 3 is greater than maxItems 2"},
		{"uniqueItems on map", reflect.TypeFor[struct {
			M map[string]int `uniqueItems:"true"`
		}](), "M", "tag uniqueItems: only slice and array fields"},
		{"uniqueItems value", reflect.TypeFor[struct {
			S []int `uniqueItems:"yes"`
		}](), "S", `tag uniqueItems: "yes" is not true or false`},
		{"minProperties on struct", reflect.TypeFor[struct {
			S struct{} `minProperties:"1"`
		}](), "S", "tag minProperties: only map fields take minProperties"},
		{"minProperties above maxProperties", reflect.TypeFor[struct {
			M map[string]int `minProperties:"2" maxProperties:"1"`
		}](), "M", "minProperties 2 is greater than maxProperties 1"},
		{"default on struct", reflect.TypeFor[struct {
			S struct{} `default:"{}"`
		}](), "S", "tag default: only string, integer, number, boolean and []byte fields take default"},
		{"default on slice", reflect.TypeFor[struct {
			S []int `default:"[]"`
		}](), "S", "tag default: only"},
		{"default wrong type", reflect.TypeFor[struct {
			N int `default:"ten"`
		}](), "N", `tag default: "ten" is not a valid int`},
		{"default not in enum", reflect.TypeFor[struct {
			S string `enum:"a,b" default:"c"`
		}](), "S", `default value "c" violates the field's schema`},
		{"default too long", reflect.TypeFor[struct {
			S string `maxLength:"2" default:"abc"`
		}](), "S", `default value "abc" violates the field's schema`},
		{"default not an email", reflect.TypeFor[struct {
			S string `format:"email" default:"nobody"`
		}](), "S", `default value "nobody" violates the field's schema`},
		{"default not a date-time", reflect.TypeFor[struct {
			T time.Time `default:"yesterday"`
		}](), "T", `tag default: "yesterday" is not a valid time.Time`},
		{"default bad base64", reflect.TypeFor[struct {
			B []byte `default:"!!"`
		}](), "B", `tag default: "!!" is not standard base64`},
		{"example out of bounds", reflect.TypeFor[struct {
			F float64 `exclusiveMinimum:"0" example:"0"`
		}](), "F", "example value 0 violates the field's schema"},
		{"example not multiple", reflect.TypeFor[struct {
			N int `multipleOf:"5" example:"7"`
		}](), "N", "example value 7 violates the field's schema"},
		{"tag errors name nested fields", reflect.TypeFor[struct {
			Items []struct {
				Meta struct {
					Count int `minimum:"x"`
				}
			}
		}](), "Items[].Meta.Count", `tag minimum: "x" is not a valid int`},
		{"tag errors name promoted fields", reflect.TypeFor[struct {
			Embedded
		}](), "Embedded.Size", "tag maxLength: only string fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := schema.For(tt.typ)
			var de *schema.DeriveError
			if !errors.As(err, &de) {
				t.Fatalf("For(%v) = %s, %v; want a *DeriveError", tt.typ, got, err)
			}
			if got != nil {
				t.Errorf("For(%v) returned a schema with its error", tt.typ)
			}
			if de.Type != tt.typ {
				t.Errorf("error Type = %v, want %v", de.Type, tt.typ)
			}
			if de.Field != tt.field {
				t.Errorf("error Field = %q, want %q (reason: %s)", de.Field, tt.field, de.Reason)
			}
			if !strings.Contains(de.Reason, tt.reason) {
				t.Errorf("error Reason = %q, want it to contain %q", de.Reason, tt.reason)
			}
			if !strings.Contains(err.Error(), tt.field) || !strings.Contains(err.Error(), de.Reason) {
				t.Errorf("message %q does not name the field and reason", err)
			}
		})
	}
}

type Copy struct {
	Name string `json:"name"`
}

type Embedded struct {
	Size int `maxLength:"3"`
}

func TestDeriveErrorMessage(t *testing.T) {
	_, err := schema.For(reflect.TypeFor[struct {
		Items []struct{ Meta any }
	}]())
	want := "schema: struct { Items []struct { Meta interface {} } }: field Items[].Meta: interface type interface {} cannot be described: any JSON value would fit"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
	_, err = schema.For(reflect.TypeFor[int]())
	if want := "schema: int: must be a struct or a pointer to a struct, since arguments are a JSON object; got int"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}
