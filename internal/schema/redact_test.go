package schema_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/agentcap/agentcap/internal/jsonvalue"
	"github.com/agentcap/agentcap/internal/schema"
)

type redactCard struct {
	Number string `json:"number" audit:"secret"`
	Holder string `json:"holder"`
}

type RedactBase struct {
	Token string `audit:"secret"`
}

type redactInput struct {
	RedactBase
	Amount   int                   `json:"amount"`
	PIN      *string               `json:"pin,omitempty" audit:"secret"`
	Card     *redactCard           `json:"card"`
	Cards    []redactCard          `json:"cards"`
	ByName   map[string]redactCard `json:"by_name"`
	When     time.Time             `json:"when"`
	Password string                `json:"-" audit:"secret"`
}

type redactPlain struct {
	A string            `json:"a"`
	B []int             `json:"b"`
	C map[string]string `json:"c"`
}

func isSecret(f reflect.StructField) bool { return f.Tag.Get("audit") == "secret" }

func TestRedaction(t *testing.T) {
	if r := schema.NewRedaction(reflect.TypeFor[redactPlain](), isSecret); r != nil {
		t.Fatal("a type without secret fields has a redaction")
	}
	r := schema.NewRedaction(reflect.TypeFor[*redactInput](), isSecret)
	if r == nil {
		t.Fatal("no redaction for a type with secret fields")
	}
	tests := []struct {
		name, in, want string
	}{
		{"every depth",
			`{"Token":"t","amount":5,"pin":"1234","card":{"number":"4111","holder":"Ann"},` +
				`"cards":[{"number":"1","holder":"B"},{"number":"2","holder":"C"}],` +
				`"by_name":{"x":{"number":"3","holder":"D"}},"when":"2024-01-02T03:04:05Z"}`,
			`{"Token":"[redacted]","amount":5,"by_name":{"x":{"holder":"D","number":"[redacted]"}},` +
				`"card":{"holder":"Ann","number":"[redacted]"},` +
				`"cards":[{"holder":"B","number":"[redacted]"},{"holder":"C","number":"[redacted]"}],` +
				`"pin":"[redacted]","when":"2024-01-02T03:04:05Z"}`},
		{"null kept", `{"Token":null,"amount":1,"card":null,"cards":null,"by_name":null}`,
			`{"Token":null,"amount":1,"by_name":null,"card":null,"cards":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree, err := jsonvalue.Parse([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			r.Apply(tree, "[redacted]")
			if got := string(jsonvalue.Append(nil, tree)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
