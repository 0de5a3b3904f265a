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
	// leading zero in number at offset 9
}

// A Reader walks a document without building a tree: here it sums the
// numbers of an array.
func ExampleReader() {
	var r jsonvalue.Reader
	r.Reset([]byte(`{"amounts": [1.5, 2, 3.25], "currency": "EUR"}`))
	sum := 0.0
	if _, err := r.Peek(); err != nil {
		fmt.Println(err)
		return
	}
	if err := r.BeginObject(); err != nil {
		fmt.Println(err)
		return
	}
	for {
		key, more, err := r.NextMember()
		if err != nil || !more {
			break
		}
		if key != "amounts" {
			if err := r.Skip(); err != nil {
				fmt.Println(err)
				return
			}
			continue
		}
		if _, err := r.Peek(); err != nil {
			fmt.Println(err)
			return
		}
		if err := r.BeginArray(); err != nil {
			fmt.Println(err)
			return
		}
		for {
			more, err := r.NextElement()
			if err != nil || !more {
				break
			}
			if _, err := r.Peek(); err != nil {
				fmt.Println(err)
				return
			}
			n, err := r.ReadNumber()
			if err != nil {
				fmt.Println(err)
				return
			}
			f, _ := n.Float64()
			sum += f
		}
	}
	fmt.Println(sum, r.Finish())
	// Output: 6.75 <nil>
}

func ExampleAppend() {
	tree, _ := jsonvalue.Parse([]byte(`{ "b": [1, "x\u0041"], "a": null }`))
	fmt.Println(string(jsonvalue.Append(nil, tree)))
	// Output: {"a":null,"b":[1,"xA"]}
}
