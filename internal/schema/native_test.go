package schema_test

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/internal/schema"
)

// compileBoth compiles doc natively, failing unless Compile chose the
// native validator, and with the validation library alone.
func compileBoth(t testing.TB, doc string) (native, reference *schema.Validator) {
	t.Helper()
	native, err := schema.Compile([]byte(doc))
	if err != nil {
		t.Fatalf("Compile(%s): %v", doc, err)
	}
	if !schema.IsNative(native) {
		t.Fatalf("Compile(%s) did not choose the native validator", doc)
	}
	reference, err = schema.CompileReference([]byte(doc))
	if err != nil {
		t.Fatalf("CompileReference(%s): %v", doc, err)
	}
	return native, reference
}

type keywordCase struct {
	in   string
	want []schema.Violation // nil: valid
}

func at(path, message string) []schema.Violation {
	return []schema.Violation{{Path: path, Message: message}}
}

// TestNativeKeywords checks every keyword of the native vocabulary on
// values that pass and values that fail, and that the validation library
// reports exactly the same for each.
func TestNativeKeywords(t *testing.T) {
	long := strings.Repeat("z", 100)
	tests := []struct {
		name   string
		schema string
		cases  []keywordCase
	}{
		{"type string", `{"type":"string"}`, []keywordCase{
			{in: `"a"`},
			{in: `""`},
			{`1`, at("", "got number, want string")},
			{`null`, at("", "got null, want string")},
		}},
		{"type list", `{"type":["integer","null"]}`, []keywordCase{
			{in: `null`},
			{in: `5`},
			{in: `5.0`},
			{in: `-0`},
			{in: `1.5e1`},
			{in: `1e400`},
			{in: `123456789012345678901234567890`},
			{`5.5`, at("", "got number, want null or integer")},
			{`1e-1`, at("", "got number, want null or integer")},
			{`"5"`, at("", "got string, want null or integer")},
		}},
		{"type boolean, number, array, object", `{"type":["boolean","number","array","object"]}`, []keywordCase{
			{in: `true`},
			{in: `-1.5e-300`},
			{in: `[]`},
			{in: `{}`},
			{`"x"`, at("", "got string, want boolean or number or array or object")},
		}},
		{"type stops other keywords", `{"type":"string","minLength":5,"enum":["a"]}`, []keywordCase{
			{`1`, at("", "got number, want string")},
		}},
		{"properties and required", `{"type":"object","properties":{"a":{"type":"string"},"c":{}},"required":["a","b"]}`, []keywordCase{
			{in: `{"a":"x","b":1}`},
			{in: `{"a":"x","b":null,"c":[],"d":{}}`},
			{`{}`, []schema.Violation{{"/a", "missing required field"}, {"/b", "missing required field"}}},
			{`{"a":1,"b":2}`, at("/a", "got number, want string")},
		}},
		{"additionalProperties false", `{"properties":{"a":{}},"additionalProperties":false}`, []keywordCase{
			{in: `{"a":1}`},
			{in: `{}`},
			{in: `[1]`},
			{`{"a":1,"x/y":2,"~":3,"A":4}`, []schema.Violation{
				{"/A", "unknown field"}, {"/x~1y", "unknown field"}, {"/~0", "unknown field"},
			}},
		}},
		{"additionalProperties schema", `{"properties":{"a":{"type":"string"}},"additionalProperties":{"type":"integer"}}`, []keywordCase{
			{in: `{"a":"x","b":1,"c":2.0}`},
			{`{"a":1,"b":"x","c":1.5}`, []schema.Violation{
				{"/a", "got number, want string"}, {"/b", "got string, want integer"}, {"/c", "got number, want integer"},
			}},
		}},
		{"additionalProperties true", `{"properties":{"a":false},"additionalProperties":true}`, []keywordCase{
			{in: `{"b":1}`},
			{`{"a":1}`, at("/a", "value not allowed")},
		}},
		{"items", `{"items":{"type":"integer","minimum":0}}`, []keywordCase{
			{in: `[]`},
			{in: `[0,1,2e3]`},
			{in: `{"not":"an array"}`},
			{`[1,-1,"a"]`, []schema.Violation{{"/1", "minimum: got -1, want 0"}, {"/2", "got string, want integer"}}},
		}},
		{"items false", `{"items":false}`, []keywordCase{
			{in: `[]`},
			{`[1,2]`, []schema.Violation{{"/0", "value not allowed"}, {"/1", "value not allowed"}}},
		}},
		{"enum of scalars", `{"enum":["EUR","USD"]}`, []keywordCase{
			{in: `"EUR"`},
			{`"eur"`, at("", "value must be one of 'EUR', 'USD'")},
			{`1`, at("", "value must be one of 'EUR', 'USD'")},
		}},
		{"enum of one number", `{"enum":[2.5]}`, []keywordCase{
			{in: `2.50`},
			{in: `25e-1`},
			{`2`, at("", "value must be 2.5")},
		}},
		{"enum of composite values", `{"enum":["a",1,null,true,{"k":[1,2]},[1,{"x":null}]]}`, []keywordCase{
			{in: `"a"`},
			{in: `1.0`},
			{in: `1e0`},
			{in: `null`},
			{in: `true`},
			{in: `{"k":[1.0,2]}`},
			{in: `[1,{"x":null}]`},
			{`false`, at("", "'enum' failed")},
			{`{"k":[2,1]}`, at("", "'enum' failed")},
			{`{"k":[1,2],"l":1}`, at("", "'enum' failed")},
			{`[1]`, at("", "'enum' failed")},
		}},
		{"enum stops other keywords", `{"type":"integer","enum":[1,2],"minimum":2}`, []keywordCase{
			{in: `2`},
			{`1`, at("", "minimum: got 1, want 2")},
			{`3`, at("", "value must be one of 1, 2")},
		}},
		{"empty enum", `{"enum":[]}`, []keywordCase{
			{`1`, at("", "value must be one of ")},
		}},
		{"minimum", `{"minimum":0}`, []keywordCase{
			{in: `0`},
			{in: `-0`},
			{in: `"strings are not numbers"`},
			{`-0.0001`, at("", "minimum: got -0.0001, want 0")},
		}},
		{"maximum, exactly", `{"maximum":10}`, []keywordCase{
			{in: `10`},
			{in: `1e1`},
			{in: `9.999999999999999999999`},
			{`10.000000000000000001`, at("", "maximum: got 10, want 10")},
		}},
		{"maximum beyond 64 bits", `{"type":"integer","minimum":0,"maximum":18446744073709551615}`, []keywordCase{
			{in: `18446744073709551615`},
			// The library's message rounds both to float64; the verdict is exact.
			{`18446744073709551616`, at("", "maximum: got 1.8446744073709552×10¹⁹, want 1.8446744073709552×10¹⁹")},
		}},
		{"exclusiveMinimum", `{"exclusiveMinimum":0}`, []keywordCase{
			{in: `1e-300`},
			{`0`, at("", "exclusiveMinimum: got 0, want 0")},
			{`-1`, at("", "exclusiveMinimum: got -1, want 0")},
		}},
		{"exclusiveMaximum", `{"exclusiveMaximum":1}`, []keywordCase{
			{in: `0.999`},
			{`1.0`, at("", "exclusiveMaximum: got 1, want 1")},
		}},
		{"multipleOf a decimal", `{"multipleOf":0.01}`, []keywordCase{
			{in: `19.99`},
			{in: `-0`},
			{in: `1e20`},
			{in: `0.3`},
			{`19.999`, at("", "multipleOf: got 19.999, want 0.01")},
		}},
		{"multipleOf an integer", `{"multipleOf":3}`, []keywordCase{
			{in: `9e0`},
			{in: `3000000000000000000000000000000`},
			{`10`, at("", "multipleOf: got 10, want 3")},
			{`1.5`, at("", "multipleOf: got 1.5, want 3")},
			{`1e400`, at("", "multipleOf: got ∞, want 3")},
		}},
		{"multipleOf with a long mantissa", `{"multipleOf":0.000000000000000000011}`, []keywordCase{
			{in: `0.000000000000000000022`},
			{in: `11000000000000000000000000`},
			{`0.00000000000000000002`, at("", "multipleOf: got 2×10⁻²⁰, want 1.1×10⁻²⁰")},
		}},
		{"lengths count code points", `{"minLength":2,"maxLength":3}`, []keywordCase{
			{in: `"é!"`},
			{in: `"😀😀😀"`},
			{in: `7`},
			{`"a"`, at("", "minLength: got 1, want 2")},
			{`"abcd"`, at("", "maxLength: got 4, want 3")},
		}},
		{"pattern", `{"pattern":"^(?i:usd|eur|gbp)$"}`, []keywordCase{
			{in: `"Usd"`},
			{in: `5`},
			{`"jpy"`, at("", "'jpy' does not match pattern '^(?i:usd|eur|gbp)$'")},
			{`"` + long + `"`, at("", "'"+long[:40]+"...' does not match pattern '^(?i:usd|eur|gbp)$'")},
		}},
		{"pattern is a search", `{"pattern":"[0-9]"}`, []keywordCase{
			{in: `"a1b"`},
			{`"ab"`, at("", "'ab' does not match pattern '[0-9]'")},
		}},
		{"minItems and maxItems", `{"minItems":1,"maxItems":2}`, []keywordCase{
			{in: `[1]`},
			{in: `"x"`},
			{`[]`, at("", "minItems: got 0, want 1")},
			{`[1,2,3]`, at("", "maxItems: got 3, want 2")},
		}},
		{"uniqueItems", `{"uniqueItems":true}`, []keywordCase{
			{in: `[]`},
			{in: `[1,"1",[1],{"1":1},true,null]`},
			{in: `[[1],[1,2],{"a":1},{"a":1,"b":2}]`},
			{`[1,"1",1.0]`, at("", "items at 0 and 2 are equal")},
			{`[{"a":1,"b":[2]},{"b":[2.0],"a":1e0}]`, at("", "items at 0 and 1 are equal")},
			{`[0,1,2,1,0]`, at("", "items at 1 and 3 are equal")},
			{`[null,null]`, at("", "items at 0 and 1 are equal")},
		}},
		{"uniqueItems false", `{"uniqueItems":false}`, []keywordCase{
			{in: `[1,1]`},
		}},
		{"minProperties and maxProperties", `{"minProperties":1,"maxProperties":2}`, []keywordCase{
			{in: `{"a":1}`},
			{in: `[]`},
			{`{}`, at("", "minProperties: got 0, want 1")},
			{`{"a":1,"b":2,"c":3}`, at("", "maxProperties: got 3, want 2")},
		}},
		{"anyOf with null", `{"anyOf":[{"type":"string","pattern":"^a"},{"type":"null"}],"description":"d"}`, []keywordCase{
			{in: `null`},
			{in: `"ab"`},
			{`"b"`, []schema.Violation{{"", "'b' does not match pattern '^a'"}, {"", "got string, want null"}}},
			{`1`, []schema.Violation{{"", "got number, want null"}, {"", "got number, want string"}}},
		}},
		{"anyOf with null first", `{"anyOf":[{"type":"null"},{"properties":{"a":{"type":"integer"}}}]}`, []keywordCase{
			{in: `{"a":1}`},
			{`{"a":"1"}`, []schema.Violation{{"", "got object, want null"}, {"/a", "got string, want integer"}}},
		}},
		{"true", `true`, []keywordCase{
			{in: `{"anything":[1,"goes"]}`},
		}},
		{"false", `false`, []keywordCase{
			{`null`, at("", "value not allowed")},
		}},
		{"empty schema", `{}`, []keywordCase{
			{in: `[{"a":null}]`},
		}},
		{"annotations", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"t","description":"d","default":1,` +
			`"examples":[1],"contentEncoding":"base64","contentMediaType":"application/json","deprecated":true,` +
			`"readOnly":true,"writeOnly":false,"$comment":"c","type":"string"}`, []keywordCase{
			{in: `"not base64, not JSON"`},
			{`1`, at("", "got number, want string")},
		}},
		{"escaped paths", `{"properties":{"a/b":{"items":{"properties":{"~c":{"type":"string"}}}}}}`, []keywordCase{
			{in: `{"a/b":[{"~c":"x"}]}`},
			{`{"a/b":[{"~c":"x"},{"~c":1}]}`, at("/a~1b/1/~0c", "got number, want string")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			native, reference := compileBoth(t, tt.schema)
			for _, c := range tt.cases {
				value := mustParse(t, c.in)
				got := native.Validate(value)
				if diff := cmp.Diff(c.want, got); diff != "" {
					t.Errorf("Validate(%s) mismatch (-want +got):\n%s", c.in, diff)
				}
				if diff := cmp.Diff(reference.Validate(value), got); diff != "" {
					t.Errorf("Validate(%s) differs from the library (-library +native):\n%s", c.in, diff)
				}
				fromText, err := native.ValidateJSON([]byte(c.in))
				if err != nil {
					t.Errorf("ValidateJSON(%s): %v", c.in, err)
				}
				if diff := cmp.Diff(got, fromText); diff != "" {
					t.Errorf("ValidateJSON(%s) differs from Validate (-Validate +ValidateJSON):\n%s", c.in, diff)
				}
			}
		})
	}
}

// TestNativeFormats checks each format the native validator asserts, and
// that it accepts and explains exactly as the library does.
func TestNativeFormats(t *testing.T) {
	tests := []struct {
		format  string
		valid   []string
		invalid map[string]string // value: message
	}{
		{"date-time", []string{"2024-07-01T12:00:00Z", "2024-07-01t12:00:00.123456789+02:00", "2016-12-31T23:59:60Z", "2017-01-01T01:29:60+01:30"},
			map[string]string{
				"yesterday":                   "'yesterday' is not valid date-time: less than 20 characters long",
				"2024-07-01 12:00:00Z":        "'2024-07-01 12:00:00Z' is not valid date-time: 11th character must be t or T",
				"2024-07-01T12:00:60Z":        "'2024-07-01T12:00:60Z' is not valid date-time: invalid time element: invalid leap second",
				"2024-13-01T12:00:00Z":        `'2024-13-01T12:00:00Z' is not valid date-time: invalid date element: parsing time "2024-13-01": month out of range`,
				"2024-07-01T12:00:00+0200":    "'2024-07-01T12:00:00+0200' is not valid date-time: invalid time element: offset must be 6 characters long",
				"2024-07-01T12:00:00.+02:00":  "'2024-07-01T12:00:00.+02:00' is not valid date-time: invalid time element: no digits in second fraction",
				"2024-07-01T24:00:00Z":        "'2024-07-01T24:00:00Z' is not valid date-time: invalid time element: hour/min/sec out of range",
				"2024-07-01T12:00:00*02:00":   "'2024-07-01T12:00:00*02:00' is not valid date-time: invalid time element: offset must begin with plus/minus",
				"2024-07-01T12:00:00+24:00":   "'2024-07-01T12:00:00+24:00' is not valid date-time: invalid time element: hour/min in offset out of range",
				"2024-07-01T1a:00:00Z":        "'2024-07-01T1a:00:00Z' is not valid date-time: invalid time element: invalid hour/min/sec",
				"2024-07-01T-1:00:00Z":        "'2024-07-01T-1:00:00Z' is not valid date-time: invalid time element: non-positive hour/min/sec",
				"2024-07-01T12:00:00+02-00":   "'2024-07-01T12:00:00+02-00' is not valid date-time: invalid time element: missing colon in offset in correct place",
				"2024-07-01T12:00:00+-1:00":   "'2024-07-01T12:00:00+-1:00' is not valid date-time: invalid time element: non-positive hour/min in offset",
				"2024-07-01T12:00:00+0x:00":   "'2024-07-01T12:00:00+0x:00' is not valid date-time: invalid time element: invalid hour/min in offset",
				"2024-07-01T12-00:00Zxxxxxxx": "'2024-07-01T12-00:00Zxxxxxxx' is not valid date-time: invalid time element: missing colon in correct place",
			}},
		{"date", []string{"2024-02-29", "0000-01-01"},
			map[string]string{
				"2023-02-29": `'2023-02-29' is not valid date: parsing time "2023-02-29": day out of range`,
				"2024-7-1":   `'2024-7-1' is not valid date: parsing time "2024-7-1" as "2006-01-02": cannot parse "7-1" as "01"`,
			}},
		{"time", []string{"23:59:60Z", "00:00:00z", "12:30:00.5-01:00"},
			map[string]string{
				"12:00": "'12:00' is not valid time: less than 9 characters long",
			}},
		{"email", []string{"ada@example.com", `"a b"@example.com`, "a@[127.0.0.1]", "a@[IPv6:::1]", "x+y@a-b.c"},
			map[string]string{
				"nope":                                "'nope' is not valid email: missing @",
				"a..b@x.y":                            "'a..b@x.y' is not valid email: consecutive dots",
				".a@x.y":                              "'.a@x.y' is not valid email: starts with dot",
				"a.@x.y":                              "'a.@x.y' is not valid email: ends with dot",
				"a b@x.y":                             "'a b@x.y' is not valid email: invalid character ' '",
				`"a"b"@x.y`:                           `'"a"b"@x.y' is not valid email: backslash and quote are not allowed within quoted local part`,
				"a@-x.y":                              "'a@-x.y' is not valid email: invalid domain: label starts with hyphen",
				"a@x-.y":                              "'a@x-.y' is not valid email: invalid domain: label ends with hyphen",
				"a@x..y":                              "'a@x..y' is not valid email: invalid domain: label must be 1 to 63 characters long",
				"a@[300.1.1.1]":                       "'a@[300.1.1.1]' is not valid email: invalid ipv4 address: decimal must be between 0 and 255",
				"a@[IPv6:1.2.3.4]":                    "'a@[IPv6:1.2.3.4]' is not valid email: invalid ipv6 address: missing colon",
				strings.Repeat("l", 65) + "@x.y":      "'" + strings.Repeat("l", 40) + "...' is not valid email: local part more than 64 characters long",
				"a@" + strings.Repeat("d.", 130):      "'a@" + strings.Repeat("d.", 19) + "...' is not valid email: more than 255 characters long",
				"a@" + strings.Repeat("d", 64) + ".y": "'a@" + strings.Repeat("d", 38) + "...' is not valid email: invalid domain: label must be 1 to 63 characters long",
			}},
		{"hostname", []string{"example.com", "example.com.", "a-1"},
			map[string]string{
				"a_b":                     "'a_b' is not valid hostname: invalid character '_'",
				strings.Repeat("d.", 128): "'" + strings.Repeat("d.", 20) + "...' is not valid hostname: more than 253 characters long",
				"":                        "'' is not valid hostname: label must be 1 to 63 characters long",
			}},
		{"uuid", []string{"123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000"},
			map[string]string{
				"123e4567e89b12d3a456426614174000":     "'123e4567e89b12d3a456426614174000' is not valid uuid: must have 5 elements",
				"123e4567-e89b-12d3-a456-42661417400":  "'123e4567-e89b-12d3-a456-42661417400' is not valid uuid: element 5 must be 12 characters long",
				"123e4567-e89b-12d3-a456-42661417400g": "'123e4567-e89b-12d3-a456-42661417400g' is not valid uuid: non-hex character 'g'",
			}},
		{"ipv4", []string{"192.168.0.1", "0.0.0.0", "255.255.255.255"},
			map[string]string{
				"01.2.3.4":  "'01.2.3.4' is not valid ipv4: leading zeros",
				"256.1.1.1": "'256.1.1.1' is not valid ipv4: decimal must be between 0 and 255",
				"1.2.3":     "'1.2.3' is not valid ipv4: expected four decimals",
				"a.2.3.4":   `'a.2.3.4' is not valid ipv4: strconv.Atoi: parsing "a": invalid syntax`,
			}},
		{"ipv6", []string{"::1", "2001:db8::8a2e:370:7334", "::ffff:192.0.2.1"},
			map[string]string{
				"1.2.3.4":      "'1.2.3.4' is not valid ipv6: missing colon",
				"fe80::1%eth0": "'fe80::1%eth0' is not valid ipv6: zone id is not a part of ipv6 address",
				"1:::2":        `'1:::2' is not valid ipv6: ParseAddr("1:::2"): each colon-separated field must have at least one digit (at ":2")`,
			}},
		{"uri", []string{"https://example.com/a?b#c", "urn:isbn:0451450523", "http://[::1]:80/"},
			map[string]string{
				"/relative":        "'/relative' is not valid uri: relative url",
				"http://[::1":      `'http://[::1' is not valid uri: parse "http://[::1": missing ']' in host`,
				"http://[1::2::3]": `'http://[1::2::3]' is not valid uri: parse "http://[1::2::3]": invalid host: ParseAddr("1::2::3"): multiple :: in address (at ":3")`,
			}},
		{"uri-reference", []string{"/relative", "https://example.com", "#frag"},
			map[string]string{
				`a\b`: `'a\\b' is not valid uri-reference: contains \`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			native, reference := compileBoth(t, `{"format":"`+tt.format+`"}`)
			check := func(value any, want []schema.Violation) {
				t.Helper()
				got := native.Validate(value)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Validate(%q) mismatch (-want +got):\n%s", value, diff)
				}
				if diff := cmp.Diff(reference.Validate(value), got); diff != "" {
					t.Errorf("Validate(%q) differs from the library (-library +native):\n%s", value, diff)
				}
			}
			for _, s := range tt.valid {
				check(s, nil)
			}
			for s, msg := range tt.invalid {
				check(s, at("", msg))
			}
			// Formats assert strings only.
			check(json.Number("1"), nil)
		})
	}
}

// TestNativeFormatStopsOtherKeywords: like the library, a string that is
// not in its format is not checked further.
func TestNativeFormatStopsOtherKeywords(t *testing.T) {
	native, reference := compileBoth(t, `{"type":"string","format":"email","maxLength":2}`)
	got := native.Validate("nope")
	want := at("", "'nope' is not valid email: missing @")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(reference.Validate("nope"), got); diff != "" {
		t.Errorf("differs from the library (-library +native):\n%s", diff)
	}
}

// TestNativeGoValues checks trees that callers build themselves, with Go
// numbers and values that are not JSON.
func TestNativeGoValues(t *testing.T) {
	native, reference := compileBoth(t, `{"type":"object","properties":{"n":{"type":"number","maximum":10}},`+
		`"additionalProperties":{"type":"number","multipleOf":0.5}}`)
	tests := []struct {
		name  string
		value any
		want  []schema.Violation
	}{
		{"Go numbers", map[string]any{
			"n": 7.0, "i": 5, "i8": int8(-4), "i16": int16(2), "i32": int32(3), "i64": int64(-1 << 62),
			"u": uint(1), "u8": uint8(2), "u16": uint16(3), "u32": uint32(4), "u64": uint64(math.MaxUint64),
			"f32": float32(0.5), "f64": 1e300,
		}, nil},
		{"float values keep their shortest decimal", map[string]any{"n": 10.000000000000002, "f": 0.1}, []schema.Violation{
			{"/f", "multipleOf: got 0.1, want 0.5"},
			{"/n", "maximum: got 10.000000000000002, want 10"},
		}},
		{"not JSON", map[string]any{"n": math.NaN(), "inf": math.Inf(1), "s": struct{}{}, "m": map[string]string{}, "f32": float32(math.Inf(-1))}, []schema.Violation{
			{"/f32", "invalid jsonType float32"},
			{"/inf", "invalid jsonType float64"},
			{"/m", "invalid jsonType map[string]string"},
			{"/n", "invalid jsonType float64"},
			{"/s", "invalid jsonType struct {}"},
		}},
		{"invalid number text", map[string]any{"n": json.Number("0x10")}, at("/n", "invalid jsonType json.Number")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := native.Validate(tt.value)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate mismatch (-want +got):\n%s", diff)
			}
			if tt.name == "invalid number text" {
				return // the library reads hexadecimal; JSON has none
			}
			if diff := cmp.Diff(reference.Validate(tt.value), got); diff != "" {
				t.Errorf("differs from the library (-library +native):\n%s", diff)
			}
		})
	}
}

// TestNativeDeepAndLarge checks paths deeper than the steps run keeps
// inline, and uniqueItems on arrays long enough to be hashed.
func TestNativeDeepAndLarge(t *testing.T) {
	const depth = 40
	doc := `{"type":"string"}`
	value := `1`
	for i := range depth {
		if i%2 == 0 {
			doc = `{"items":` + doc + `}`
			value = `[0,` + value + `]`
		} else {
			doc = `{"properties":{"k/` + string(rune('a'+i%26)) + `":` + doc + `},"required":["r"]}`
			value = `{"k/` + string(rune('a'+i%26)) + `":` + value + `,"r":0}`
		}
	}
	native, reference := compileBoth(t, doc)
	got := native.Validate(mustParse(t, value))
	if len(got) != 2 || strings.Count(got[1].Path, "/") != depth || !strings.HasSuffix(got[1].Path, "/1") {
		t.Fatalf("Validate = %v, want two violations %d levels down", got, depth)
	}
	if diff := cmp.Diff(reference.Validate(mustParse(t, value)), got); diff != "" {
		t.Errorf("differs from the library (-library +native):\n%s", diff)
	}

	native, reference = compileBoth(t, `{"uniqueItems":true}`)
	for _, tt := range []struct {
		tail  string
		valid bool
	}{
		{``, true},
		{`,"x"`, true},
		{`,{"b":[1],"a":5e-1}`, false},
		{`,"s29"`, false},
		{`,{"a":3.0}`, false},
	} {
		items := make([]string, 0, 61)
		for i := range 30 {
			items = append(items, `{"a":`+jsonInt(i)+`}`, `"s`+jsonInt(i)+`"`)
		}
		items = append(items, `{"a":0.5,"b":[1.0]}`)
		value := mustParse(t, `[`+strings.Join(items, ",")+tt.tail+`]`)
		got := native.Validate(value)
		if (got == nil) != tt.valid {
			t.Errorf("tail %q: Validate = %v, want valid %v", tt.tail, got, tt.valid)
		}
		if diff := cmp.Diff(reference.Validate(value), got); diff != "" {
			t.Errorf("tail %q: differs from the library (-library +native):\n%s", tt.tail, diff)
		}
	}
}

func jsonInt(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// TestCompileFallsBack lists documents outside the native vocabulary: they
// compile for the library and validate as before.
func TestCompileFallsBack(t *testing.T) {
	tests := []struct {
		schema  string
		invalid string // a value the schema rejects
	}{
		{`{"$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a"}`, `1`},
		{`{"$defs":{}}`, ``},
		{`{"$id":"urn:example:x","type":"string"}`, `1`},
		{`{"allOf":[{"type":"string"}]}`, `1`},
		{`{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `1.5`},
		{`{"anyOf":[{"type":"string"},{"type":"null"}],"maxLength":3}`, `"abcd"`},
		{`{"anyOf":[{"type":"string"},{"type":["null"]}]}`, `1`},
		{`{"anyOf":[{"type":"string"},{"type":"null","description":"n"}]}`, `1`},
		{`{"oneOf":[{"type":"string"}]}`, `1`},
		{`{"not":{"type":"string"}}`, `"a"`},
		{`{"if":{"type":"string"},"then":{"minLength":2}}`, `"a"`},
		{`{"patternProperties":{"^a":{"type":"string"}}}`, `{"ab":1}`},
		{`{"dependentRequired":{"a":["b"]}}`, `{"a":1}`},
		{`{"const":1}`, `2`},
		{`{"prefixItems":[{"type":"string"}]}`, `[1]`},
		{`{"contains":{"type":"string"}}`, `[1]`},
		{`{"unevaluatedProperties":false}`, `{"a":1}`},
		{`{"propertyNames":{"maxLength":1}}`, `{"ab":1}`},
		{`{"format":"duration"}`, `"P"`},
		{`{"format":"no-such-format"}`, ``},
		{`{"minLength":2.0}`, `"a"`},
		{`{"x-vendor":true}`, ``},
		{`{"properties":{"a":{"const":1}}}`, `{"a":2}`},
		{`{"items":{"not":{}}}`, `[1]`},
		{`{"additionalProperties":{"enum":[1],"minContains":1}}`, `{"a":2}`},
		{`{"properties":{"a":{"$schema":"https://json-schema.org/draft/2020-12/schema"}}}`, ``},
	}
	for _, tt := range tests {
		v, err := schema.Compile([]byte(tt.schema))
		if err != nil {
			t.Errorf("Compile(%s): %v", tt.schema, err)
			continue
		}
		if schema.IsNative(v) {
			t.Errorf("Compile(%s) chose the native validator", tt.schema)
		}
		if tt.invalid != "" && v.Validate(mustParse(t, tt.invalid)) == nil {
			t.Errorf("%s accepts %s", tt.schema, tt.invalid)
		}
	}
}

// TestDerivedSchemasAreNative: whatever For derives runs natively,
// self-described and nullable self-described types included.
func TestDerivedSchemasAreNative(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[Transfer](),
		reflect.TypeFor[smallInput](),
		reflect.TypeFor[invoice](),
		reflect.TypeFor[coreSmallIn](),
		reflect.TypeFor[coreNestedIn](),
		reflect.TypeFor[everyTag](),
		reflect.TypeFor[struct {
			Currency upper  `json:"currency"`
			Optional *upper `json:"optional,omitempty"`
		}](),
	} {
		if v := mustValidator(t, typ); !schema.IsNative(v) {
			t.Errorf("the schema of %v does not run natively", typ)
		}
	}
}

// TestNativeValidAllocatesNothing holds the hot path to its promise.
func TestNativeValidAllocatesNothing(t *testing.T) {
	for _, in := range benchInputs {
		v := mustValidator(t, in.typ)
		value := mustParse(t, in.doc)
		if got := v.Validate(value); got != nil {
			t.Fatalf("%s: Validate = %v", in.name, got)
		}
		if allocs := testing.AllocsPerRun(100, func() { _ = v.Validate(value) }); allocs != 0 {
			t.Errorf("%s: Validate allocates %v times per valid value", in.name, allocs)
		}
	}
}
