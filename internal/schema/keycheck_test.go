package schema_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/internal/schema"
)

type Order struct {
	Base
	*Audit
	ID       string            `json:"id"`
	Customer Customer          `json:"customer"`
	Lines    []Line            `json:"lines"`
	Backup   *Customer         `json:"backup,omitempty"`
	Grid     [2][]Line         `json:"grid"`
	Labels   map[string]Line   `json:"labels"`
	Level    Level             `json:"level"`
	When     time.Time         `json:"when"`
	Extra    map[string]string `json:"extra"`
	Skipped  string            `json:"-"`
}

type Customer struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

type Line struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

func TestKeyChecker(t *testing.T) {
	k := schema.NewKeyChecker(reflect.TypeFor[Order]())
	tests := []struct {
		name string
		in   string
		want []schema.Violation
	}{
		{
			name: "exact names pass",
			in: `{"id":"o1","Created":"2024-01-01T00:00:00Z","by":"x","customer":{"name":"A","email":"a@b"},` +
				`"lines":[{"sku":"s","qty":1}],"backup":null,"grid":[[{"sku":"t"}],null],` +
				`"labels":{"Any Key":{"sku":"map keys are data"}},"level":"low","when":"2024-01-01T00:00:00Z",` +
				`"extra":{"X":"y"}}`,
		},
		{
			name: "case variants at every level",
			in: `{"ID":"o1","Customer":{"NAME":"A"},"lines":[{"sku":"s"},{"Qty":1}],` +
				`"backup":{"Email":"e"},"grid":[[],[{"Sku":"t"}]],"By":"x"}`,
			want: []schema.Violation{
				{Path: "/By", Message: `unknown field; field names are case-sensitive, did you mean "by"?`},
				{Path: "/Customer", Message: `unknown field; field names are case-sensitive, did you mean "customer"?`},
				{Path: "/ID", Message: `unknown field; field names are case-sensitive, did you mean "id"?`},
				{Path: "/backup/Email", Message: `unknown field; field names are case-sensitive, did you mean "email"?`},
				{Path: "/grid/1/0/Sku", Message: `unknown field; field names are case-sensitive, did you mean "sku"?`},
				{Path: "/lines/1/Qty", Message: `unknown field; field names are case-sensitive, did you mean "qty"?`},
			},
		},
		{
			// A map's keys are data, but the struct values it holds have
			// field names like any other struct.
			name: "map values",
			in:   `{"labels":{"SKU":{"SKU":"x","qty":1},"b":{"sku":"y","Qty":2}},"extra":{"SKU":"z"}}`,
			want: []schema.Violation{
				{Path: "/labels/SKU/SKU", Message: `unknown field; field names are case-sensitive, did you mean "sku"?`},
				{Path: "/labels/b/Qty", Message: `unknown field; field names are case-sensitive, did you mean "qty"?`},
			},
		},
		{
			// encoding/json ignores the items beyond an array's length.
			name: "beyond an array",
			in:   `{"grid":[[{"sku":"a"}],[],[{"SKU":"ignored"}]]}`,
		},
		{
			name: "unknown keys",
			in:   `{"id":"o1","customer":{"name":"A","nick":"a"},"lines":[{"sku":"s","price":1}],"a/b":1,"Skipped":"x","-":1}`,
			want: []schema.Violation{
				{Path: "/-", Message: "unknown field"},
				{Path: "/Skipped", Message: "unknown field"},
				{Path: "/a~1b", Message: "unknown field"},
				{Path: "/customer/nick", Message: "unknown field"},
				{Path: "/lines/0/price", Message: "unknown field"},
			},
		},
		{
			name: "unicode case folding as encoding/json does it",
			// U+017F (long s) folds to s and U+212A (Kelvin sign) to k.
			in: `{"customer":{"ſku":1,"nAme":"x"},"lines":[{"s\u212au":1,"ſKU":2}]}`,
			want: []schema.Violation{
				{Path: "/customer/nAme", Message: `unknown field; field names are case-sensitive, did you mean "name"?`},
				{Path: "/customer/ſku", Message: "unknown field"},
				{Path: "/lines/0/s\u212au", Message: `unknown field; field names are case-sensitive, did you mean "sku"?`},
				{Path: "/lines/0/ſKU", Message: `unknown field; field names are case-sensitive, did you mean "sku"?`},
			},
		},
		{
			name: "values of the wrong type are left to validation",
			in:   `{"customer":"A","lines":{"sku":1},"backup":[{"Name":1}],"grid":"x"}`,
		},
		{
			name: "not an object",
			in:   `[{"ID":1}]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := k.Check(mustParse(t, tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check(%s) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

type Folder struct {
	Name     string    `json:"name"`
	Children []*Folder `json:"children"`
	Parent   *Folder   `json:"parent,omitempty"`
}

func TestKeyCheckerRecursiveType(t *testing.T) {
	k := schema.NewKeyChecker(reflect.TypeFor[Folder]())
	got := k.Check(mustParse(t, `{"name":"a","children":[{"name":"b","children":[{"Name":"c","children":null}]}],"parent":{"nme":"z"}}`))
	want := []schema.Violation{
		{Path: "/children/0/children/0/Name", Message: `unknown field; field names are case-sensitive, did you mean "name"?`},
		{Path: "/parent/nme", Message: "unknown field"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Check mismatch (-want +got):\n%s", diff)
	}
}

func TestKeyCheckerSkips(t *testing.T) {
	tests := []struct {
		name string
		typ  reflect.Type
		in   string
	}{
		{"map of scalars", reflect.TypeFor[map[string]int](), `{"A":1}`},
		{"map of text unmarshalers", reflect.TypeFor[map[string]Level](), `{"A":"low"}`},
		{"text unmarshaler", reflect.TypeFor[struct{ L Level }](), `{"L":{"Whatever":1}}`},
		{"json unmarshaler", reflect.TypeFor[struct{ D Decoder }](), `{"D":{"Whatever":1}}`},
		{"time", reflect.TypeFor[struct{ T *time.Time }](), `{"T":{"Whatever":1}}`},
		{"bytes", reflect.TypeFor[struct{ B []byte }](), `{"B":"aGk="}`},
		{"interface", reflect.TypeFor[struct{ V any }](), `{"V":{"Whatever":1}}`},
		{"scalars", reflect.TypeFor[[]int](), `[1,2]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := schema.NewKeyChecker(tt.typ).Check(mustParse(t, tt.in)); got != nil {
				t.Errorf("Check(%s) = %v, want nil", tt.in, got)
			}
		})
	}
	if got := schema.NewKeyChecker(nil).Check(map[string]any{"a": 1}); got != nil {
		t.Errorf("nil type checker reported %v", got)
	}
}

func TestKeyCheckerAmbiguousFieldsAreUnknown(t *testing.T) {
	// encoding/json ignores both fields, so neither key may be used.
	typ := reflect.StructOf([]reflect.StructField{
		{Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
		{Name: "B", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
		{Name: "C", Type: reflect.TypeFor[string](), Tag: `json:"c"`},
	})
	got := schema.NewKeyChecker(typ).Check(mustParse(t, `{"x":"1","c":"2"}`))
	want := []schema.Violation{{Path: "/x", Message: "unknown field"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Check mismatch (-want +got):\n%s", diff)
	}
}

func TestKeyCheckerCleanValueAllocatesNothing(t *testing.T) {
	k := schema.NewKeyChecker(reflect.TypeFor[Order]())
	v := mustParse(t, `{"id":"o1","customer":{"name":"A","email":"a@b"},"lines":[{"sku":"s","qty":1},{"sku":"t","qty":2}],"labels":{"k":{"sku":"x"}}}`)
	if allocs := testing.AllocsPerRun(100, func() { _ = k.Check(v) }); allocs != 0 {
		t.Errorf("Check of a clean value allocates %v times", allocs)
	}
}

// TestKeyCheckerCatchesCaseInsensitiveDecoding shows the gap KeyChecker
// closes: encoding/json fills a field from each of these keys, yet none is
// the field's name.
func TestKeyCheckerCatchesCaseInsensitiveDecoding(t *testing.T) {
	k := schema.NewKeyChecker(reflect.TypeFor[Line]())
	for _, key := range []string{"SKU", "Sku", "s\u212au", "\u017fku"} {
		doc := `{"` + key + `":"x"}`
		var line Line
		if err := json.Unmarshal([]byte(doc), &line); err != nil || line.SKU != "x" {
			t.Fatalf("encoding/json did not fill SKU from %s: %v %+v", doc, err, line)
		}
		want := []schema.Violation{{Path: "/" + key, Message: `unknown field; field names are case-sensitive, did you mean "sku"?`}}
		if diff := cmp.Diff(want, k.Check(mustParse(t, doc))); diff != "" {
			t.Errorf("Check(%s) mismatch (-want +got):\n%s", doc, diff)
		}
	}
}
