package schema_test

import (
	"reflect"
	"testing"

	"github.com/agentcap/agentcap/internal/jsonvalue"
	"github.com/agentcap/agentcap/internal/schema"
)

type smallInput struct {
	Account string  `json:"account" minLength:"15" maxLength:"34"`
	Amount  float64 `json:"amount" exclusiveMinimum:"0"`
	Memo    string  `json:"memo,omitempty" maxLength:"140"`
}

// invoice has 20 fields spread over nested objects and arrays.
type invoice struct {
	ID       string `json:"id" pattern:"^inv_"`
	Customer struct {
		Name  string `json:"name"`
		Email string `json:"email" format:"email"`
		VIP   bool   `json:"vip"`
	} `json:"customer"`
	Currency string  `json:"currency" enum:"EUR,USD,GBP"`
	Total    float64 `json:"total" minimum:"0"`
	Lines    []struct {
		SKU   string  `json:"sku"`
		Qty   uint16  `json:"qty" minimum:"1"`
		Price float64 `json:"price"`
		Note  *string `json:"note"`
	} `json:"lines" minItems:"1"`
	Shipping struct {
		Street  string `json:"street"`
		City    string `json:"city"`
		Zip     string `json:"zip"`
		Country string `json:"country" minLength:"2" maxLength:"2"`
	} `json:"shipping"`
	Tags     []string `json:"tags" uniqueItems:"true"`
	Paid     bool     `json:"paid"`
	Due      string   `json:"due" format:"date-time"`
	Attempts int      `json:"attempts"`
}

var (
	smallDoc  = `{"account":"DE89370400440532013000","amount":125.50,"memo":"rent"}`
	nestedDoc = `{
		"id": "inv_2024_000183",
		"customer": {"name": "Ada Lovelace", "email": "ada@example.com", "vip": true},
		"currency": "EUR",
		"total": 1249.99,
		"lines": [
			{"sku": "A-100", "qty": 2, "price": 499.5, "note": "gift wrap"},
			{"sku": "B-200", "qty": 1, "price": 250.99, "note": null}
		],
		"shipping": {"street": "1 Analytical Way", "city": "London", "zip": "N1 9GU", "country": "GB"},
		"tags": ["priority", "export"],
		"paid": false,
		"due": "2024-07-01T00:00:00Z",
		"attempts": 0
	}`
)

var benchInputs = []struct {
	name string
	typ  reflect.Type
	doc  string
}{
	{"small", reflect.TypeFor[smallInput](), smallDoc},
	{"nested20", reflect.TypeFor[invoice](), nestedDoc},
}

func BenchmarkValidate(b *testing.B) {
	for _, in := range benchInputs {
		v := mustValidator(b, in.typ)
		value := mustParse(b, in.doc)
		if vs := v.Validate(value); vs != nil {
			b.Fatalf("%s: %v", in.name, vs)
		}
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v.Validate(value) != nil {
					b.Fatal("invalid")
				}
			}
		})
	}
}

func BenchmarkValidateInvalid(b *testing.B) {
	v := mustValidator(b, reflect.TypeFor[invoice]())
	value := mustParse(b, `{"id":"x","customer":{"name":1,"Email":"a"},"currency":"JPY","lines":[],"extra":true}`)
	b.ReportAllocs()
	for b.Loop() {
		if v.Validate(value) == nil {
			b.Fatal("valid")
		}
	}
}

func BenchmarkKeyCheck(b *testing.B) {
	for _, in := range benchInputs {
		k := schema.NewKeyChecker(in.typ)
		value := mustParse(b, in.doc)
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if k.Check(value) != nil {
					b.Fatal("violations")
				}
			}
		})
	}
}

// BenchmarkParseCheckValidate is the whole input stage of a request:
// strict parse, exact key check, schema validation.
func BenchmarkParseCheckValidate(b *testing.B) {
	for _, in := range benchInputs {
		v := mustValidator(b, in.typ)
		k := schema.NewKeyChecker(in.typ)
		data := []byte(in.doc)
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				value, err := jsonvalue.Parse(data)
				if err != nil || k.Check(value) != nil || v.Validate(value) != nil {
					b.Fatal("rejected")
				}
			}
		})
	}
}

func BenchmarkFor(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := schema.For(reflect.TypeFor[invoice]()); err != nil {
			b.Fatal(err)
		}
	}
}
