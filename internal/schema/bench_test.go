package schema_test

import (
	"encoding/json"
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

// coreSmallIn and coreNestedIn have the shapes of core's executor
// benchmarks.
type coreSmallIn struct {
	Account  string  `json:"account_id" minLength:"1"`
	Amount   float64 `json:"amount" exclusiveMinimum:"0"`
	Currency string  `json:"currency" enum:"USD,EUR,GBP"`
}

type coreAddress struct {
	Street  string `json:"street" minLength:"1"`
	City    string `json:"city" minLength:"1"`
	Zip     string `json:"zip" pattern:"^[0-9]{5}$"`
	Country string `json:"country" enum:"US,DE,FR"`
}

type coreParty struct {
	Name    string      `json:"name" minLength:"1"`
	Email   string      `json:"email" maxLength:"200"`
	Address coreAddress `json:"address"`
}

type coreNestedIn struct {
	ID       string    `json:"id" minLength:"1"`
	Amount   float64   `json:"amount" minimum:"0"`
	Currency string    `json:"currency" enum:"USD,EUR,GBP"`
	Priority int       `json:"priority" minimum:"1" maximum:"5"`
	Tags     []string  `json:"tags" maxItems:"10"`
	Urgent   bool      `json:"urgent"`
	Note     string    `json:"note,omitempty" maxLength:"500"`
	From     coreParty `json:"from"`
	To       coreParty `json:"to"`
}

var (
	coreSmallDoc  = `{"account_id":"acc_123","amount":12.5,"currency":"EUR"}`
	coreNestedDoc = `{"id":"ord_1","amount":99.95,"currency":"USD","priority":3,"tags":["a","b"],"urgent":true,` +
		`"from":{"name":"Alice","email":"alice@example.com","address":{"street":"1 Main St","city":"Springfield","zip":"12345","country":"US"}},` +
		`"to":{"name":"Bob","email":"bob@example.com","address":{"street":"2 Side St","city":"Shelbyville","zip":"54321","country":"DE"}}}`
)

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
	{"coreSmall", reflect.TypeFor[coreSmallIn](), coreSmallDoc},
	{"coreNested", reflect.TypeFor[coreNestedIn](), coreNestedDoc},
}

// BenchmarkValidate compares the native validator Compile picks for
// derived schemas with the validation library on the same schema.
func BenchmarkValidate(b *testing.B) {
	for _, in := range benchInputs {
		doc, err := schema.For(in.typ)
		if err != nil {
			b.Fatal(err)
		}
		native, reference := compileBoth(b, string(doc))
		value := mustParse(b, in.doc)
		for _, run := range []struct {
			name string
			v    *schema.Validator
		}{{"native", native}, {"reference", reference}} {
			if vs := run.v.Validate(value); vs != nil {
				b.Fatalf("%s: %v", in.name, vs)
			}
			b.Run(run.name+"/"+in.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if run.v.Validate(value) != nil {
						b.Fatal("invalid")
					}
				}
			})
		}
	}
}

func BenchmarkValidateInvalid(b *testing.B) {
	doc, err := schema.For(reflect.TypeFor[invoice]())
	if err != nil {
		b.Fatal(err)
	}
	native, reference := compileBoth(b, string(doc))
	value := mustParse(b, `{"id":"x","customer":{"name":1,"Email":"a"},"currency":"JPY","lines":[],"extra":true}`)
	for _, run := range []struct {
		name string
		v    *schema.Validator
	}{{"native", native}, {"reference", reference}} {
		b.Run(run.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if run.v.Validate(value) == nil {
					b.Fatal("valid")
				}
			}
		})
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

// BenchmarkDecode compares filling the Go value from the tree the input
// was validated as with decoding its text a second time with
// encoding/json.
func BenchmarkDecode(b *testing.B) {
	for _, in := range benchInputs {
		d := mustDecoder(b, in.typ)
		value := mustParse(b, in.doc)
		data := []byte(in.doc)
		b.Run("tree/"+in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				target := reflect.New(in.typ)
				if vs, err := d.Decode(value, target.Interface()); vs != nil || err != nil {
					b.Fatal(vs, err)
				}
			}
		})
		b.Run("encoding-json/"+in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				target := reflect.New(in.typ)
				if err := json.Unmarshal(data, target.Interface()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateJSON compares the two ways of validating encoded
// output: reading the text once with ValidateJSON, and parsing it into a
// tree that Validate then walks.
func BenchmarkValidateJSON(b *testing.B) {
	for _, in := range benchInputs {
		v := mustValidator(b, in.typ)
		data := []byte(in.doc)
		b.Run("text/"+in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if vs, err := v.ValidateJSON(data); vs != nil || err != nil {
					b.Fatal(vs, err)
				}
			}
		})
		b.Run("tree/"+in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				value, err := jsonvalue.Parse(data)
				if err != nil || v.Validate(value) != nil {
					b.Fatal("rejected")
				}
			}
		})
	}
}
