package schema_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/internal/jsonvalue"
	"github.com/agentcap/agentcap/internal/schema"
)

// validateTree is what ValidateJSON stands in for: parse, then validate.
func validateTree(v *schema.Validator, data []byte) ([]schema.Violation, error) {
	tree, err := jsonvalue.Parse(data)
	if err != nil {
		return nil, err
	}
	return v.Validate(tree), nil
}

// sameResult fails unless ValidateJSON gives what parsing and validating
// gives: the same error text, or the same violations. It reports whether
// there were violations.
func sameResult(t testing.TB, v *schema.Validator, label string, data []byte) bool {
	t.Helper()
	want, wantErr := validateTree(v, data)
	got, gotErr := v.ValidateJSON(data)
	if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		t.Fatalf("%s, %q: ValidateJSON error %v, Parse error %v", label, data, gotErr, wantErr)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%s, %q: ValidateJSON differs from Parse and Validate (-tree +text):\n%s", label, data, diff)
	}
	return len(got) > 0
}

func TestValidateJSON(t *testing.T) {
	const objectSchema = `{"type":"object","properties":{"a":{"type":"integer","maximum":3},` +
		`"b":{"type":"array","items":{"type":"string","minLength":2}},"c":{"anyOf":[{"type":"string","enum":["x"]},{"type":"null"}]}},` +
		`"required":["a","z"],"additionalProperties":false}`
	tests := []struct {
		name   string
		schema string
		doc    string
		want   []schema.Violation
	}{
		{"valid", objectSchema, `{"a":3,"z":1,"b":["xy"],"c":null}`, []schema.Violation{{Path: "/z", Message: "unknown field"}}},
		{"every kind of violation", objectSchema, ` { "a" : 4.0 , "b" : [ "y" , 1 ] , "c" : "q" , "d" : {"x":[1]} } `, []schema.Violation{
			{Path: "/a", Message: "maximum: got 4, want 3"},
			{Path: "/b/0", Message: "minLength: got 1, want 2"},
			{Path: "/b/1", Message: "got number, want string"},
			{Path: "/c", Message: "got string, want null"},
			{Path: "/c", Message: "value must be 'x'"},
			{Path: "/d", Message: "unknown field"},
			{Path: "/z", Message: "missing required field"},
		}},
		{"escaped key and value", objectSchema, `{"\u0061":1,"z":0,"b":["\u00e9\n"]}`, []schema.Violation{{Path: "/z", Message: "unknown field"}}},
		{"wrong type skips the value", `{"type":"string"}`, `{"a":[{"b":1}]}`, []schema.Violation{{Path: "", Message: "got object, want string"}}},
		{"enum of objects", `{"enum":[{"a":[1]},2]}`, `{"a":[1.0]}`, nil},
		{"enum of objects fails", `{"enum":[{"a":[1]},2]}`, `{"a":[2]}`, []schema.Violation{{Path: "", Message: "'enum' failed"}}},
		{"unique items", `{"items":{"uniqueItems":true}}`, `[[1,2],[1,1.0]]`, []schema.Violation{{Path: "/1", Message: "items at 0 and 1 are equal"}}},
		{"false schema", `{"properties":{"a":false}}`, `{"a":{"deep":[1,2]}}`, []schema.Violation{{Path: "/a", Message: "value not allowed"}}},
		{"required only", `{"required":["q"],"additionalProperties":{"type":"number"}}`, `{"q":"x","r":1}`, []schema.Violation{{Path: "/q", Message: "got string, want number"}}},
		{"counts", `{"minProperties":2,"items":{"maxItems":1}}`, `{"a":[1,2]}`, []schema.Violation{{Path: "", Message: "minProperties: got 1, want 2"}}},
		{"counts on arrays", `{"items":{"maxItems":1,"minItems":1}}`, `[[1,2],[]]`, []schema.Violation{
			{Path: "/0", Message: "maxItems: got 2, want 1"},
			{Path: "/1", Message: "minItems: got 0, want 1"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := schema.Compile([]byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			if !schema.IsNative(v) {
				t.Fatalf("%s does not run natively", tt.schema)
			}
			got, err := v.ValidateJSON([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			sameResult(t, v, tt.schema, []byte(tt.doc))
		})
	}
}

// TestValidateJSONErrors checks that text Parse refuses is refused with
// Parse's own error, wherever the problem is.
func TestValidateJSONErrors(t *testing.T) {
	v, err := schema.Compile([]byte(`{"properties":{"a":{"type":"string"},"b":{"items":{"type":"integer"}}},"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{
		``, ` `, `{`, `{"a"`, `{"a":`, `{"a":"x"`, `{"a":"x",}`, `{"a":"x"}x`, `{"a":"x" "b":1}`,
		`{"a":"x","a":"y"}`, `{"b":[{"c":1,"c":2}]}`, `{"x":{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k1":0}}`,
		`{"b":[1,]}`, `{"b":[1 2]}`, `{"b":[01]}`, `{"b":[1e401]}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{"a":tru}`,
		`{"a":nul}`, `{"a":"\q"}`, `[` + strings.Repeat(`[`, jsonvalue.MaxDepth) + strings.Repeat(`]`, jsonvalue.MaxDepth+1),
		`{"b":"` + strings.Repeat("x", 10) + `"`, `{"a":1}`, `{"c":{"d":[true,false,null,-0.5e3,"s"]}}`,
	} {
		sameResult(t, v, "closed object", []byte(doc))
	}
}

// TestValidateJSONAllocations holds the text path to its promise: a valid
// document costs one copy of the text. (The nested20 input is left out:
// its uniqueItems builds a tree of the array it applies to.)
func TestValidateJSONAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	for _, in := range benchInputs {
		if in.name == "nested20" {
			continue
		}
		v := mustValidator(t, in.typ)
		data := []byte(in.doc)
		if got, err := v.ValidateJSON(data); got != nil || err != nil {
			t.Fatalf("%s: ValidateJSON = %v, %v", in.name, got, err)
		}
		if allocs := testing.AllocsPerRun(100, func() { _, _ = v.ValidateJSON(data) }); allocs > 1 {
			t.Errorf("%s: ValidateJSON allocates %v times per valid document", in.name, allocs)
		}
	}
}

// FuzzValidateJSON checks ValidateJSON against parsing and validating, on
// fuzzed text, for every schema of fuzzSchemas and for the output of
// encoding/json.
func FuzzValidateJSON(f *testing.F) {
	docs := fuzzSchemas(f)
	validators := make([]*schema.Validator, len(docs))
	for i, doc := range docs {
		validators[i], _ = compileBoth(f, doc)
	}
	for _, in := range benchInputs {
		f.Add([]byte(in.doc))
	}
	for _, s := range []string{
		`{"id":"ab_1","kind":"\u00e9","count":5,"tags":["a","a"],"lines":[{"sku":"s","qty":1,"note":null,"Props":{"w":[1]}},null]}`,
		`[[1,2,2],null,[1.0,1]]`, `{"a":[1],"b":{"a":null},"x":0,"z":1}`, `{"a":1,"a":1}`, `[{"a":1,"b":2,"a":3}]`,
		`{"when":"2024-07-01T12:00:00Z","grid":[[1,2],[3]],"meta":{"a":"b","c":"d","e":"f"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for i, v := range validators {
			sameResult(t, v, "schema "+docs[i], data)
		}
	})
}

// FuzzValidateJSONSchema fuzzes the schema as well as the text.
func FuzzValidateJSONSchema(f *testing.F) {
	f.Add([]byte(`{"type":"integer","minimum":1,"maximum":5,"multipleOf":0.5}`), []byte(`2.5`))
	f.Add([]byte(`{"enum":[1,"a",null,[{}]],"type":["array","number"]}`), []byte(`[{}]`))
	f.Add([]byte(`{"properties":{"a":{"format":"date-time"}},"required":["b"],"additionalProperties":{"pattern":"^x"}}`), []byte(`{"a":"2024-01-01T00:00:00Z","c":"y"}`))
	f.Add([]byte(`{"anyOf":[{"minLength":2,"maxLength":3},{"type":"null"}]}`), []byte(`"abcd"`))
	f.Add([]byte(`{"items":{"uniqueItems":true,"minItems":1},"maxItems":2}`), []byte(`[[1,1.0],[]]`))
	f.Add([]byte(`{"minProperties":1,"maxProperties":1,"additionalProperties":false}`), []byte(`{}`))
	f.Add([]byte(`{"anyOf":[{"type":"null"},{"properties":{"a":{"enum":[true,null]}}}]}`), []byte(`{"a":false}`))
	f.Fuzz(func(t *testing.T, schemaJSON, data []byte) {
		v, err := schema.Compile(schemaJSON)
		if err != nil {
			return
		}
		sameResult(t, v, "schema "+string(schemaJSON), data)
	})
}

// TestValidateJSONOfEncodedValues runs encoding/json output of the fuzz
// seed values through both paths.
func TestValidateJSONOfEncodedValues(t *testing.T) {
	docs := fuzzSchemas(t)
	yes := true
	values := []any{
		everyTag{ID: "ab_12", Kind: "é", Count: -5, Flag: &yes, Tags: []string{"<a>", "&"}, Meta: map[string]string{"k": "v\u2028"}},
		everyTag{ID: "x", Kind: "z", Count: 7, Lines: []*line{{SKU: "", Props: map[string][]float64{"w": {1e21, 1e-7}}}}},
		Transfer{Amount: 12.5, Currency: "EUR", To: Account{IBAN: "DE89370400", Name: "Ada"}},
		map[string]any{"a": []any{1, "1", []int{1}}, "x": 1, "y": nil},
	}
	for i, doc := range docs {
		v, _ := compileBoth(t, doc)
		for _, value := range values {
			data, err := json.Marshal(value)
			if err != nil {
				t.Fatal(err)
			}
			sameResult(t, v, "schema "+string(rune('0'+i)), data)
		}
	}
}

// outSample is an output type whose zero value is valid and whose
// generated values often are not.
type outSample struct {
	Status string         `json:"status,omitempty" enum:"ok,failed"`
	Count  int8           `json:"count" minimum:"0"`
	Ratio  float64        `json:"ratio,omitempty" maximum:"1"`
	Name   string         `json:"name" maxLength:"3"`
	Tags   []string       `json:"tags,omitempty" maxItems:"2" uniqueItems:"true"`
	Lines  []outLine      `json:"lines,omitempty"`
	Meta   map[string]int `json:"meta,omitempty" maxProperties:"2"`
	When   *time.Time     `json:"when,omitempty"`
	Level  Level          `json:"level"`
	Email  string         `json:"email,omitempty" format:"email"`
	Blob   []byte         `json:"blob,omitempty"`
}

type outLine struct {
	SKU string `json:"sku" pattern:"^[a-z]*$"`
	Qty uint8  `json:"qty" maximum:"100"`
}

// outTypes are the Go types whose encoded values FuzzValidateJSONOfValues
// checks, each with the schema For derives for it.
var outTypes = []reflect.Type{
	reflect.TypeFor[outSample](), reflect.TypeFor[everyTag](), reflect.TypeFor[invoice](), reflect.TypeFor[coreNestedIn](), reflect.TypeFor[Transfer](),
}

// FuzzValidateJSONOfValues checks ValidateJSON on what output validation
// sees: encoding/json's encoding of Go values, here values of the fuzz
// types filled from generated documents. The text path must give the same
// verdict and violations as parsing the encoding and validating the tree.
func FuzzValidateJSONOfValues(f *testing.F) {
	validators := make([]*schema.Validator, len(outTypes))
	for i, typ := range outTypes {
		validators[i] = mustValidator(f, typ)
	}
	for _, seed := range []string{"", "\x02\x05\x07\x03\x03\x03", "abcdefghijklmnopqrstuvwxyz0123456789", strings.Repeat("\x04\x02", 40)} {
		for i := range outTypes {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		i := int(which) % len(outTypes)
		checkEncodedValue(t, validators[i], outTypes[i], data)
	})
}

// checkEncodedValue fills a value of typ from a document generated from
// data, as far as encoding/json manages, encodes it and compares the two
// validation paths on the encoding.
func checkEncodedValue(t *testing.T, v *schema.Validator, typ reflect.Type, data []byte) (violations bool) {
	t.Helper()
	doc := jsonvalue.Append(nil, genValue(newGenSource(data), typ, 4))
	value := reflect.New(typ)
	_ = json.Unmarshal(doc, value.Interface())
	encoded, err := json.Marshal(value.Interface())
	if err != nil {
		return false
	}
	return sameResult(t, v, typ.String(), encoded)
}

// TestValidateJSONOfGeneratedValues runs checkEncodedValue over a fixed
// series of generated values, so that every test run compares the two
// paths on many encodings.
func TestValidateJSONOfGeneratedValues(t *testing.T) {
	validators := make([]*schema.Validator, len(outTypes))
	for i, typ := range outTypes {
		validators[i] = mustValidator(t, typ)
	}
	var state uint64 = 7
	data := make([]byte, 256)
	invalid := 0
	const total = 2000
	for n := range total {
		for k := range data {
			state ^= state << 13
			state ^= state >> 7
			state ^= state << 17
			data[k] = byte(state)
		}
		i := n % len(outTypes)
		if checkEncodedValue(t, validators[i], outTypes[i], data) {
			invalid++
		}
	}
	// Both verdicts must be common for the comparison to mean much.
	t.Logf("%d of %d generated values violate their schema", invalid, total)
	if invalid < total/10 || total-invalid < 50 {
		t.Errorf("%d of %d generated values violate their schema", invalid, total)
	}
}
