package schema_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/internal/jsonvalue"
	"github.com/agentcap/agentcap/internal/schema"
)

// upper normalises its value to upper case when decoded, so its JSON form
// cannot be derived: it describes itself.
type upper string

func (u *upper) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*u = upper(strings.ToUpper(s))
	return nil
}

func (upper) JSONSchema() json.RawMessage {
	return json.RawMessage(`{"type": "string", "pattern": "^(?i:usd|eur)$"}`)
}

type badSchemer struct{ X int }

func (*badSchemer) UnmarshalJSON([]byte) error { return nil }
func (badSchemer) JSONSchema() json.RawMessage { return json.RawMessage(`{"type":"strange"}`) }

func TestSchemerTypes(t *testing.T) {
	type in struct {
		Currency upper  `json:"currency"`
		Optional *upper `json:"optional,omitempty"`
	}
	got, err := schema.For(reflect.TypeFor[in]())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{` +
		`"currency":{"type":"string","pattern":"^(?i:usd|eur)$"},` +
		`"optional":{"anyOf":[{"type":"string","pattern":"^(?i:usd|eur)$"},{"type":"null"}]}},` +
		`"required":["currency"],"additionalProperties":false}`
	if string(got) != want {
		t.Fatalf("schema:\n got %s\nwant %s", got, want)
	}
	v, err := schema.Compile(got)
	if err != nil {
		t.Fatal(err)
	}
	for doc, valid := range map[string]bool{
		`{"currency":"usd"}`:                  true,
		`{"currency":"EuR","optional":null}`:  true,
		`{"currency":"gbp"}`:                  false,
		`{"currency":"usd","optional":"jpy"}`: false,
	} {
		tree, err := jsonvalue.Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Validate(tree) == nil; got != valid {
			t.Errorf("%s: valid = %v, want %v", doc, got, valid)
		}
	}

	type tagged struct {
		Currency upper `json:"currency" maxLength:"3"`
	}
	if _, err := schema.For(reflect.TypeFor[tagged]()); err == nil || !strings.Contains(err.Error(), "Currency") {
		t.Errorf("a tag on a self-described field: err = %v", err)
	}
	type broken struct {
		B badSchemer `json:"b"`
	}
	if _, err := schema.For(reflect.TypeFor[broken]()); err == nil || !strings.Contains(err.Error(), "does not compile") {
		t.Errorf("a schema that does not compile: err = %v", err)
	}
}
