package jsonvalue_test

import (
	"errors"
	"fmt"

	"github.com/agentcap/agentcap/internal/jsonvalue"
)

func ExampleParseObject() {
	obj, members, err := jsonvalue.ParseObject([]byte(`{"amount": 12.50, "to": {"iban": "DE00"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%T %v\n", obj["amount"], obj["amount"])
	fmt.Println(string(members["to"]))

	_, _, err = jsonvalue.ParseObject([]byte(`{"amount": 1, "amount": 2}`))
	var dup *jsonvalue.DuplicateKeyError
	fmt.Println(errors.As(err, &dup), dup.Key)
	// Output:
	// json.Number 12.50
	// {"iban": "DE00"}
	// true amount
}

func ExamplePointer() {
	fmt.Println(jsonvalue.Pointer(jsonvalue.Pointer("", "a/b"), "m~n"))
	// Output: /a~1b/m~0n
}

func ExampleParse() {
	v, err := jsonvalue.Parse([]byte(`{"items": [{"sku": "A-1", "qty": 2}], "note": null}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	item := v.(map[string]any)["items"].([]any)[0].(map[string]any)
	fmt.Println(item["sku"], item["qty"])

	_, err = jsonvalue.Parse([]byte(`{"qty": 02}`))
	fmt.Println(err)
	// Output:
	// A-1 2
	// jsonvalue: leading zero in number at offset 9
}
