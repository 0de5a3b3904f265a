package schema_test

import (
	"fmt"
	"reflect"

	"github.com/agentcap/agentcap/internal/jsonvalue"
	"github.com/agentcap/agentcap/internal/schema"
)

func ExampleFor() {
	type Payment struct {
		Amount   float64 `json:"amount" exclusiveMinimum:"0" description:"in euros"`
		Currency string  `json:"currency" enum:"EUR,USD"`
		Memo     *string `json:"memo,omitempty" maxLength:"140"`
	}
	doc, err := schema.For(reflect.TypeFor[Payment]())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(doc))
	// Output:
	// {"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"amount":{"type":"number","description":"in euros","exclusiveMinimum":0},"currency":{"type":"string","enum":["EUR","USD"]},"memo":{"type":["string","null"],"maxLength":140}},"required":["amount","currency"],"additionalProperties":false}
}

func ExampleForOutput() {
	type Account struct {
		ID   string `json:"id"`
		Type string `json:"type" enum:"checking,savings"`
	}
	t := reflect.TypeFor[[]Account]()
	doc, err := schema.ForOutput(t)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(doc))
	// A nil slice is sent as [], which the schema admits; null it does not.
	fmt.Println(string(schema.NilEncoding(t)))
	// Output:
	// {"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"type":{"type":"string","enum":["checking","savings"]}},"required":["id","type"],"additionalProperties":false}}
	// []
}

func ExampleValidator_Validate() {
	type Payment struct {
		Amount   float64 `json:"amount" exclusiveMinimum:"0"`
		Currency string  `json:"currency" enum:"EUR,USD"`
	}
	doc, _ := schema.For(reflect.TypeFor[Payment]())
	v, err := schema.Compile(doc)
	if err != nil {
		fmt.Println(err)
		return
	}
	value, _ := jsonvalue.Parse([]byte(`{"Amount": 5, "currency": "GBP"}`))
	for _, violation := range v.Validate(value) {
		fmt.Printf("%s: %s\n", violation.Path, violation.Message)
	}
	// Output:
	// /Amount: unknown field
	// /amount: missing required field
	// /currency: value must be one of 'EUR', 'USD'
}

func ExampleCompile() {
	// A hand-written schema: the nullable form is the one For gives a
	// self-described type behind a pointer.
	v, err := schema.Compile([]byte(`{
		"type": "object",
		"properties": {
			"when": {"type": "string", "format": "date-time"},
			"code": {"anyOf": [{"type": "string", "pattern": "^[A-Z]{3}$"}, {"type": "null"}]},
			"sizes": {"type": "array", "items": {"type": "integer", "minimum": 1}, "uniqueItems": true}
		},
		"required": ["when"]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	value, _ := jsonvalue.Parse([]byte(`{"when": "tomorrow", "code": null, "sizes": [1, 0, 1.0]}`))
	for _, violation := range v.Validate(value) {
		fmt.Printf("%s: %s\n", violation.Path, violation.Message)
	}
	// Output:
	// /sizes: items at 0 and 2 are equal
	// /sizes/1: minimum: got 0, want 1
	// /when: 'tomorrow' is not valid date-time: less than 20 characters long
}

func ExampleKeyChecker() {
	type Payment struct {
		Amount float64 `json:"amount"`
	}
	k := schema.NewKeyChecker(reflect.TypeFor[Payment]())
	value, _ := jsonvalue.Parse([]byte(`{"AMOUNT": 5}`))
	fmt.Println(k.Check(value))
	// Output: [{/AMOUNT unknown field; field names are case-sensitive, did you mean "amount"?}]
}

func ExampleProperties() {
	names, err := schema.Properties([]byte(`{"type":"object","properties":{"to":{},"amount":{}}}`))
	fmt.Println(names, err)
	// Output: [to amount] <nil>
}

// ValidateJSON validates encoded text, such as a capability's output,
// without building a tree of it.
func ExampleValidator_ValidateJSON() {
	type Receipt struct {
		ID     string `json:"id" pattern:"^tr_"`
		Status string `json:"status" enum:"completed,pending"`
	}
	doc, _ := schema.For(reflect.TypeFor[Receipt]())
	v, _ := schema.Compile(doc)
	violations, err := v.ValidateJSON([]byte(`{"id":"tr_1","status":"completed"}`))
	fmt.Println(violations, err)
	violations, err = v.ValidateJSON([]byte(`{"id":"x","status":"lost"}`))
	fmt.Println(violations, err)
	// Output:
	// [] <nil>
	// [{/id 'x' does not match pattern '^tr_'} {/status value must be one of 'completed', 'pending'}] <nil>
}
