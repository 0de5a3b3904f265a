package schema_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/internal/jsonvalue"
	"github.com/agentcap/agentcap/internal/schema"
)

// everyTag uses every struct tag For reads, every format the native
// validator asserts, and the Go types whose schemas differ: pointers,
// slices, arrays, maps, []byte, time.Time, json.Number, text marshalers
// and self-described types, plain and nullable.
type everyTag struct {
	ID       string            `json:"id" description:"identifier" pattern:"^[a-z]{2}_[0-9]+$" minLength:"4" maxLength:"12" example:"ab_12"`
	Kind     string            `json:"kind" enum:"a,b,é" default:"a"`
	Priority int               `json:"priority,omitempty" enum:"1,2,3"`
	Count    int8              `json:"count" minimum:"-5" exclusiveMaximum:"100" multipleOf:"5"`
	Ratio    float32           `json:"ratio,omitempty" exclusiveMinimum:"0" maximum:"1"`
	Price    float64           `json:"price,omitempty" multipleOf:"0.01" minimum:"0.01"`
	Big      uint64            `json:"big,omitempty"`
	Exact    json.Number       `json:"exact,omitempty" minimum:"-1.5" exclusiveMaximum:"1e20"`
	Flag     *bool             `json:"flag"`
	Level    Level             `json:"level,omitempty" enum:"low,high"`
	When     time.Time         `json:"when"`
	Day      string            `json:"day,omitempty" format:"date"`
	Clock    string            `json:"clock,omitempty" format:"time"`
	Email    string            `json:"email,omitempty" format:"email"`
	Host     string            `json:"host,omitempty" format:"hostname"`
	UUID     string            `json:"uuid,omitempty" format:"uuid"`
	IPv4     string            `json:"ipv4,omitempty" format:"ipv4"`
	IPv6     string            `json:"ipv6,omitempty" format:"ipv6"`
	Site     string            `json:"site,omitempty" format:"uri"`
	Link     string            `json:"link,omitempty" format:"uri-reference"`
	Tags     []string          `json:"tags,omitempty" minItems:"1" maxItems:"3" uniqueItems:"true"`
	Grid     [2][2]int8        `json:"grid,omitempty"`
	Meta     map[string]string `json:"meta,omitempty" minProperties:"1" maxProperties:"2"`
	Blob     []byte            `json:"blob,omitempty"`
	Lines    []*line           `json:"lines,omitempty" uniqueItems:"true"`
	Code     upper             `json:"code,omitempty"`
	Alt      *upper            `json:"alt,omitempty"`
	Audit
}

type line struct {
	SKU   string  `json:"sku" minLength:"1"`
	Qty   uint16  `json:"qty" minimum:"1"`
	Note  *string `json:"note"`
	Props map[string][]float64
}

// fuzzSchemas are the schemas the differential fuzz target runs: derived
// ones and hand-written ones in the native vocabulary.
func fuzzSchemas(t testing.TB) []string {
	t.Helper()
	var docs []string
	for _, typ := range []reflect.Type{
		reflect.TypeFor[everyTag](),
		reflect.TypeFor[Transfer](),
		reflect.TypeFor[invoice](),
		reflect.TypeFor[coreNestedIn](),
	} {
		doc, err := schema.For(typ)
		if err != nil {
			t.Fatalf("For(%v): %v", typ, err)
		}
		docs = append(docs, string(doc))
	}
	return append(docs,
		`{"type":["array","object","null"],"items":{"anyOf":[{"type":"null"},{"items":{"type":"integer"},"uniqueItems":true}]},`+
			`"additionalProperties":{"enum":[1,"1",[1],{"a":null},true]},"properties":{"x":false,"y":true},"required":["z"]}`,
		`true`,
		`{"minProperties":1,"maxProperties":2,"items":{"multipleOf":0.001,"maximum":1e3},"minItems":2,"uniqueItems":true}`,
	)
}

// FuzzNativeMatchesReference runs fuzzed documents through the native
// validator and the validation library for each schema of fuzzSchemas:
// they must agree on validity, on the set of violation paths and, since
// the native validator words violations with the library's messages, on
// the violations themselves.
func FuzzNativeMatchesReference(f *testing.F) {
	docs := fuzzSchemas(f)
	natives := make([]*schema.Validator, len(docs))
	references := make([]*schema.Validator, len(docs))
	for i, doc := range docs {
		natives[i], references[i] = compileBoth(f, doc)
	}

	note := "n"
	yes := true
	seeds := []any{
		everyTag{
			ID: "ab_12", Kind: "é", Priority: 2, Count: -5, Ratio: 0.25, Price: 19.99, Big: 1<<64 - 1,
			Exact: "1.25", Flag: &yes, Level: 1, When: time.Date(2024, 7, 1, 12, 0, 0, 5, time.UTC),
			Day: "2024-02-29", Clock: "23:59:60Z", Email: "ada@example.com", Host: "example.com",
			UUID: "123e4567-e89b-12d3-a456-426614174000", IPv4: "10.0.0.1", IPv6: "::1",
			Site: "https://example.com/x", Link: "../y", Tags: []string{"a", "b"}, Grid: [2][2]int8{{1, 2}, {3, 4}},
			Meta: map[string]string{"k": "v"}, Blob: []byte{1, 2}, Code: "usd", Alt: new(upper("EUR")),
			Lines: []*line{{SKU: "s", Qty: 1, Note: &note, Props: map[string][]float64{"w": {1.5}}}, nil},
			Audit: Audit{By: "me"},
		},
		everyTag{},
		Transfer{Amount: 12.5, Currency: "EUR", To: Account{IBAN: "DE89370400", Name: "Ada"}},
	}
	for _, s := range seeds {
		data, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, in := range benchInputs {
		f.Add([]byte(in.doc))
	}
	f.Add([]byte(`{"id":"x","kind":"c","count":101,"ratio":0,"price":0.001,"exact":1e20,"flag":1,"level":"mid",` +
		`"when":"2024-07-01 12:00:00","day":"2023-02-29","clock":"24:00:00Z","email":"a..b@c","host":"-a",` +
		`"uuid":"x","ipv4":"1.2.3.04","ipv6":"1.2.3.4","site":"rel","link":"a\\b","tags":["a","a","b","c"],` +
		`"grid":[[1],[1,2,3]],"meta":{},"blob":1,"lines":[{"sku":"","qty":0},{"qty":0,"sku":""}],"code":"jpy",` +
		`"alt":"gbp","Props":null,"by":null,"extra":1}`))
	f.Add([]byte(`[[1,2,2],null,[1.0,1]]`))
	f.Add([]byte(`{"a":[1],"b":{"a":null},"x":0,"z":1}`))
	f.Add([]byte(`[0.001,1000,1000.0001,{}]`))

	f.Fuzz(func(t *testing.T, data []byte) {
		value, err := jsonvalue.Parse(data)
		if err != nil {
			return
		}
		for i := range docs {
			got := natives[i].Validate(value)
			want := references[i].Validate(value)
			if (got == nil) != (want == nil) {
				t.Fatalf("schema %d, %s: native valid=%v, library valid=%v\nnative: %v\nlibrary: %v", i, data, got == nil, want == nil, got, want)
			}
			if gp, wp := paths(got), paths(want); !slices.Equal(gp, wp) {
				t.Fatalf("schema %d, %s: paths differ\nnative: %q\nlibrary: %q", i, data, gp, wp)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("schema %d, %s: violations differ (-library +native):\n%s", i, data, diff)
			}
		}
	})
}

func paths(vs []schema.Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Path)
	}
	return slices.Compact(out)
}

// FuzzNativeSchemaMatchesReference fuzzes the schema as well: whenever
// Compile runs a document natively, the library must agree with it.
func FuzzNativeSchemaMatchesReference(f *testing.F) {
	for _, doc := range fuzzSchemas(f)[4:] {
		f.Add([]byte(doc), []byte(`[1,{"a":null},"x"]`))
	}
	f.Add([]byte(`{"type":"integer","minimum":1,"maximum":5,"multipleOf":0.5}`), []byte(`2.5`))
	f.Add([]byte(`{"enum":[1,"a",null,[{}]],"type":["array","number"]}`), []byte(`[{}]`))
	f.Add([]byte(`{"properties":{"a":{"format":"date-time"}},"required":["b"],"additionalProperties":{"pattern":"^x"}}`), []byte(`{"a":"2024-01-01T00:00:00Z","c":"y"}`))
	f.Add([]byte(`{"anyOf":[{"minLength":2,"maxLength":3},{"type":"null"}]}`), []byte(`"abcd"`))
	f.Add([]byte(`{"items":{"uniqueItems":true,"minItems":1},"maxItems":2}`), []byte(`[[1,1.0],[]]`))
	f.Add([]byte(`{"minProperties":1,"maxProperties":1,"additionalProperties":false}`), []byte(`{}`))
	f.Add([]byte(`{"format":"ipv4"}`), []byte(`"1.2.3.4"`))
	f.Fuzz(func(t *testing.T, schemaJSON, data []byte) {
		native, err := schema.Compile(schemaJSON)
		if err != nil || !schema.IsNative(native) {
			return
		}
		reference, err := schema.CompileReference(schemaJSON)
		if err != nil {
			t.Fatalf("Compile(%s) succeeded, the library alone fails: %v", schemaJSON, err)
		}
		value, err := jsonvalue.Parse(data)
		if err != nil {
			return
		}
		got, want := native.Validate(value), reference.Validate(value)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("schema %s, value %s: violations differ (-library +native):\n%s", schemaJSON, data, diff)
		}
	})
}

// FuzzNativeFormats checks each native format on fuzzed strings against
// the library: the same verdict and the same explanation.
func FuzzNativeFormats(f *testing.F) {
	formats := []string{"date-time", "date", "time", "email", "hostname", "uuid", "ipv4", "ipv6", "uri", "iri", "uri-reference", "iri-reference"}
	natives := make([]*schema.Validator, len(formats))
	references := make([]*schema.Validator, len(formats))
	for i, name := range formats {
		natives[i], references[i] = compileBoth(f, `{"format":"`+name+`"}`)
	}
	for _, s := range []string{
		"2024-07-01T12:00:00.5+02:00", "2016-12-31T23:59:60Z", "23:59:60-00:30", "2024-02-29", "+1:+2:+3Z",
		"ada@example.com", `"q"@[IPv6:::1]`, "a@[1.2.3.4]", "x.y-z.", "123e4567-e89b-12d3-a456-426614174000",
		"-0.1.2.3", "::ffff:1.2.3.4", "fe80::1%25eth0", "http://[::1]:8080/a?b#c", "mailto:a@b", `a\b`, "%zz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, name := range formats {
			got, want := natives[i].Validate(s), references[i].Validate(s)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("format %s, %q: differs from the library (-library +native):\n%s", name, s, diff)
			}
		}
	})
}
