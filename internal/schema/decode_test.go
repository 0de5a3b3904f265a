package schema_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/internal/jsonvalue"
	"github.com/agentcap/agentcap/internal/schema"
)

// point decodes itself from an object and normalises it, as a type with
// its own UnmarshalJSON might.
type point struct{ X, Y int }

func (p *point) UnmarshalJSON(b []byte) error {
	type plain point
	var q plain
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	if err := d.Decode(&q); err != nil {
		return err
	}
	*p = point{X: q.X * 10, Y: q.Y * 10}
	return nil
}

// colour is a map key with a text form, lower-cased when decoded.
type colour string

func (c *colour) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		return errors.New("empty colour")
	}
	*c = colour(strings.ToLower(string(b)))
	return nil
}

// names is a slice with a text form: comma-separated.
type names []string

func (n *names) UnmarshalText(b []byte) error {
	*n = strings.Split(string(b), ",")
	return nil
}

type Embedded1 struct {
	Inner  string `json:"inner"`
	Shared int    `json:"shared"`
}

type PtrBase struct {
	Deep   *int   `json:"deep"`
	Shared string `json:"shared"`
	Over   string `json:"over"`
}

type item struct {
	Name string   `json:"name"`
	Qty  uint8    `json:"qty"`
	Tags []string `json:"tags,omitempty"`
}

// decAll has a field of every kind the decoder fills.
type decAll struct {
	Embedded1
	*PtrBase
	Over   int         `json:"over"`
	B      bool        `json:"b"`
	I      int         `json:"i"`
	I8     int8        `json:"i8"`
	I16    int16       `json:"i16"`
	I32    int32       `json:"i32"`
	I64    int64       `json:"i64"`
	U      uint        `json:"u"`
	U8     uint8       `json:"u8"`
	U16    uint16      `json:"u16"`
	U32    uint32      `json:"u32"`
	U64    uint64      `json:"u64"`
	UP     uintptr     `json:"up"`
	F32    float32     `json:"f32"`
	F64    float64     `json:"f64"`
	S      string      `json:"s"`
	K      Key         `json:"k"`
	N      json.Number `json:"n"`
	Bytes  []byte      `json:"bytes"`
	When   time.Time   `json:"when"`
	WhenP  *time.Time  `json:"when_p"`
	Lvl    Level       `json:"lvl"`
	LvlP   *Level      `json:"lvl_p"`
	Up     upper       `json:"up_"`
	UpP    *upper      `json:"up_p"`
	Pt     point       `json:"pt"`
	PtP    *point      `json:"pt_p"`
	Names  names       `json:"names"`
	P      *int        `json:"p"`
	PP     **string    `json:"pp"`
	Items  []item      `json:"items"`
	ItemPs []*item     `json:"item_ps"`
	Arr    [2]int8     `json:"arr"`
	Grid   [2][]uint16 `json:"grid"`
	M      map[string]float64
	MI     map[string]item `json:"mi"`
	MK     map[Key]string  `json:"mk"`
	MT     map[colour]int  `json:"mt"`
	Levels []Level         `json:"levels"`
	Nested struct {
		A string `json:"a"`
		B *bool  `json:"b"`
	} `json:"nested"`
	Skipped string `json:"-"`
	hidden  string
}

func mustDecoder(t testing.TB, typ reflect.Type) *schema.Decoder {
	t.Helper()
	d, err := schema.NewDecoder(typ)
	if err != nil {
		t.Fatalf("NewDecoder(%v): %v", typ, err)
	}
	return d
}

// decodeBoth decodes doc with the decoder and with encoding/json, into
// fresh values.
func decodeBoth[T any](t testing.TB, d *schema.Decoder, doc string) (got, want T, vs []schema.Violation, stdErr error) {
	t.Helper()
	tree, err := jsonvalue.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse(%s): %v", doc, err)
	}
	vs, _ = d.Decode(tree, &got)
	stdErr = json.Unmarshal([]byte(doc), &want)
	return got, want, vs, stdErr
}

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	d := mustDecoder(t, reflect.TypeFor[decAll]())
	for _, doc := range []string{
		`{}`,
		`{"inner":"i","deep":7,"over":3,"b":true,"i":-9223372036854775808,"i8":-128,"i16":32767,"i32":-2147483648,` +
			`"i64":9223372036854775807,"u":18446744073709551615,"u8":255,"u16":65535,"u32":4294967295,"u64":0,"up":12,` +
			`"f32":3.4028234e38,"f64":-1.5e-300,"s":"a\"\\\u00e9\ud83d\ude00","k":"key","n":-1.50e+3,"bytes":"aGVsbG8=",` +
			`"when":"2024-07-01T12:00:00.123456789+02:00","when_p":"2024-02-29T00:00:00Z","lvl":"high","lvl_p":"low",` +
			`"up_":"eur","up_p":"usd","pt":{"Y":2,"X":1},"pt_p":{"X":3},"names":"a,b","p":0,"pp":"x",` +
			`"items":[{"name":"n","qty":2,"tags":["t"]},{"name":"m","qty":0,"tags":[]}],"item_ps":[null,{"name":"z"}],` +
			`"arr":[1],"grid":[[1,2],null],"M":{"a":1.5,"":0},"mi":{"k":{"name":"v"}},"mk":{"x":"y"},"mt":{"RED":1,"Blue":2},` +
			`"levels":["low","high"],"nested":{"a":"x","b":false}}`,
		`{"p":null,"pp":null,"when_p":null,"lvl_p":null,"up_p":null,"pt_p":null,"items":null,"M":null,"bytes":null,` +
			`"b":null,"i":null,"s":null,"when":null,"lvl":null,"arr":null,"nested":null,"names":null,"up_":null}`,
		`{"items":[],"item_ps":[],"M":{},"mi":{},"bytes":"","arr":[1,2,3],"grid":[[],[3]],"names":""}`,
		`{"n":"12.5e-3","bytes":[1,2,255],"f32":1e-50,"f64":-0,"i":-0,"up_":null,"deep":null}`,
	} {
		got, want, vs, stdErr := decodeBoth[decAll](t, d, doc)
		if vs != nil || stdErr != nil {
			t.Fatalf("%s: decoder %v, encoding/json %v", doc, vs, stdErr)
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(decAll{})); diff != "" {
			t.Errorf("%s: decoded value differs from encoding/json (-want +got):\n%s", doc, diff)
		}
	}
}

func TestDecodeNull(t *testing.T) {
	d := mustDecoder(t, reflect.TypeFor[decAll]())
	tree := mustParse(t, `{"i":null,"s":null,"p":null,"items":null,"M":null,"names":null,"arr":null,"lvl":null,"up_":null}`)
	// Null leaves a value that is not a pointer, slice or map alone, and
	// empties those: start from a filled value to see which is which.
	one := 1
	var got decAll
	got.I, got.S, got.P, got.Items, got.M = 5, "kept", &one, []item{{}}, map[string]float64{"a": 1}
	got.Names, got.Arr, got.Lvl, got.Up = names{"x"}, [2]int8{1, 2}, 1, "KEPT"
	if vs, err := d.Decode(tree, &got); vs != nil || err != nil {
		t.Fatal(vs, err)
	}
	want := decAll{I: 5, S: "kept", Arr: [2]int8{1, 2}, Lvl: 1}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(decAll{})); diff != "" {
		t.Errorf("after null (-want +got):\n%s", diff)
	}
	if got.Up != "" {
		// upper's UnmarshalJSON is given null, and json.Unmarshal of null
		// into its string leaves it empty.
		t.Errorf("UnmarshalJSON was not given the null: Up = %q", got.Up)
	}
}

func TestDecodeViolations(t *testing.T) {
	d := mustDecoder(t, reflect.TypeFor[decAll]())
	cannot := func(path, typ string) schema.Violation {
		return schema.Violation{Path: path, Message: "cannot be decoded as " + typ}
	}
	tests := []struct {
		doc  string
		want []schema.Violation
	}{
		{`{"i8":128}`, []schema.Violation{cannot("/i8", "int8")}},
		{`{"i8":-129,"i16":32768,"i32":2147483648,"i64":9223372036854775808}`, []schema.Violation{
			cannot("/i16", "int16"), cannot("/i32", "int32"), cannot("/i64", "int64"), cannot("/i8", "int8")}},
		{`{"u8":256,"u16":-1,"u32":4294967296,"u64":18446744073709551616,"u":-0}`, []schema.Violation{
			cannot("/u", "uint"), cannot("/u16", "uint16"), cannot("/u32", "uint32"), cannot("/u64", "uint64"), cannot("/u8", "uint8")}},
		{`{"i":1.0,"i8":1e2,"u":2.5}`, []schema.Violation{cannot("/i", "int"), cannot("/i8", "int8"), cannot("/u", "uint")}},
		{`{"f32":1e39,"f64":1e400}`, []schema.Violation{cannot("/f32", "float32"), cannot("/f64", "float64")}},
		{`{"b":1,"s":2,"i":"3","arr":"x","M":[],"items":{},"nested":[],"k":true}`, []schema.Violation{
			cannot("/M", "map[string]float64"), cannot("/arr", "[2]int8"), cannot("/b", "bool"), cannot("/i", "int"),
			cannot("/items", "[]schema_test.item"), cannot("/k", "schema_test.Key"), cannot("/nested", "struct { A string \"json:\\\"a\\\"\"; B *bool \"json:\\\"b\\\"\" }"),
			cannot("/s", "string")}},
		{`{"n":"x","bytes":"not base64!","when":"2024-07-01 12:00:00","when_p":5}`, []schema.Violation{
			cannot("/bytes", "[]uint8"), cannot("/n", "json.Number"), cannot("/when", "time.Time"), cannot("/when_p", "time.Time")}},
		{`{"lvl":"mid","lvl_p":1,"pt":{"Z":1},"up_":5,"names":[1]}`, []schema.Violation{
			cannot("/lvl", "schema_test.Level"), cannot("/lvl_p", "schema_test.Level"), cannot("/names", "schema_test.names"),
			cannot("/pt", "schema_test.point"), cannot("/up_", "schema_test.upper")}},
		{`{"items":[{"qty":1},{"qty":300}],"grid":[[1],[2,-3]],"mi":{"a/b":{"qty":-1}},"mt":{"":1}}`, []schema.Violation{
			cannot("/grid/1/1", "uint16"), cannot("/items/1/qty", "uint8"), cannot("/mi/a~1b/qty", "uint8"),
			{Path: "/mt/", Message: "cannot be decoded as a key of type schema_test.colour"}}},
	}
	for _, tt := range tests {
		_, _, vs, stdErr := decodeBoth[decAll](t, d, tt.doc)
		if diff := cmp.Diff(tt.want, vs); diff != "" {
			t.Errorf("%s: violations (-want +got):\n%s", tt.doc, diff)
		}
		if stdErr == nil {
			t.Errorf("%s: encoding/json accepts what the decoder refuses", tt.doc)
		}
	}
}

func TestDecodeCause(t *testing.T) {
	d := mustDecoder(t, reflect.TypeFor[decAll]())
	var v decAll
	vs, err := d.Decode(mustParse(t, `{"lvl":"mid"}`), &v)
	if len(vs) != 1 || err == nil || !strings.Contains(err.Error(), `unknown level "mid"`) {
		t.Errorf("Decode = %v, %v; want the UnmarshalText error as the cause", vs, err)
	}
	vs, err = d.Decode(mustParse(t, `{"i8":300}`), &v)
	var ne *strconv.NumError
	if len(vs) != 1 || err != nil && !errors.As(err, &ne) {
		t.Errorf("Decode = %v, %v", vs, err)
	}
}

func TestDecodeKeys(t *testing.T) {
	d := mustDecoder(t, reflect.TypeFor[decAll]())
	tests := []struct {
		doc  string
		want []schema.Violation
	}{
		// Key violations come alone, even next to values that cannot be
		// decoded.
		{`{"I":1,"i8":300,"items":[{"Name":"x"}],"mi":{"K":{"QTY":1}},"nested":{"a":"x","c":1},"shared":1,"hidden":"h","Skipped":"s"}`,
			[]schema.Violation{
				{Path: "/I", Message: `unknown field; field names are case-sensitive, did you mean "i"?`},
				{Path: "/Skipped", Message: "unknown field"},
				{Path: "/hidden", Message: "unknown field"},
				{Path: "/items/0/Name", Message: `unknown field; field names are case-sensitive, did you mean "name"?`},
				{Path: "/mi/K/QTY", Message: `unknown field; field names are case-sensitive, did you mean "qty"?`},
				{Path: "/nested/c", Message: "unknown field"},
				{Path: "/shared", Message: "unknown field"},
			}},
		// Keys inside a value that decodes itself are its own business.
		{`{"pt":{"X":1},"up_":"x"}`, nil},
	}
	k := schema.NewKeyChecker(reflect.TypeFor[decAll]())
	for _, tt := range tests {
		tree := mustParse(t, tt.doc)
		var v decAll
		vs, _ := d.Decode(tree, &v)
		if diff := cmp.Diff(tt.want, vs); diff != "" {
			t.Errorf("%s: violations (-want +got):\n%s", tt.doc, diff)
		}
		if v.hidden != "" || v.Skipped != "" {
			t.Errorf("%s: a field that is not a JSON field was set: %+v", tt.doc, v)
		}
		if diff := cmp.Diff(k.Check(tree), vs); diff != "" {
			t.Errorf("%s: Decode and KeyChecker disagree (-KeyChecker +Decode):\n%s", tt.doc, diff)
		}
	}
}

func TestDecodeEmbeddedPointer(t *testing.T) {
	d := mustDecoder(t, reflect.TypeFor[decAll]())
	var v decAll
	if vs, err := d.Decode(mustParse(t, `{"inner":"x"}`), &v); vs != nil || err != nil {
		t.Fatal(vs, err)
	}
	if v.PtrBase != nil {
		t.Errorf("the embedded pointer was allocated though none of its fields was set")
	}
	if vs, err := d.Decode(mustParse(t, `{"deep":null}`), &v); vs != nil || err != nil {
		t.Fatal(vs, err)
	}
	if v.PtrBase == nil || v.Deep != nil {
		t.Errorf("a promoted field set to null should allocate its embedded pointer: %+v", v.PtrBase)
	}
}

func TestDecodeRecursiveAndTopLevel(t *testing.T) {
	folders := mustDecoder(t, reflect.TypeFor[Folder]())
	doc := `{"name":"a","children":[{"name":"b","children":[{"name":"c","children":null}]},null],"parent":{"name":"p"}}`
	got, want, vs, stdErr := decodeBoth[Folder](t, folders, doc)
	if vs != nil || stdErr != nil {
		t.Fatal(vs, stdErr)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	ptr := mustDecoder(t, reflect.TypeFor[*item]())
	gotP, wantP, vs, stdErr := decodeBoth[*item](t, ptr, `{"name":"x","qty":3}`)
	if vs != nil || stdErr != nil || gotP == nil {
		t.Fatal(vs, stdErr, gotP)
	}
	if diff := cmp.Diff(wantP, gotP); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	self := mustDecoder(t, reflect.TypeFor[point]())
	gotPt, wantPt, vs, stdErr := decodeBoth[point](t, self, `{"X":1,"Y":2}`)
	if vs != nil || stdErr != nil || gotPt != wantPt || gotPt.X != 10 {
		t.Errorf("top-level UnmarshalJSON: %+v, %+v, %v, %v", gotPt, wantPt, vs, stdErr)
	}

	tree := mustDecoder(t, reflect.TypeFor[Tree]())
	gotT, wantT, vs, stdErr := decodeBoth[Tree](t, tree, `{"a":{"b":{}},"c":null}`)
	if vs != nil || stdErr != nil {
		t.Fatal(vs, stdErr)
	}
	if diff := cmp.Diff(wantT, gotT); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestNewDecoderRefuses(t *testing.T) {
	type withString struct {
		N int `json:"n,string"`
	}
	type unexported struct{ X int }
	type embedsUnexported struct {
		*unexported
	}
	tests := []struct {
		typ   reflect.Type
		field string
	}{
		{reflect.TypeFor[struct{ V any }](), "V"},
		{reflect.TypeFor[struct{ R json.RawMessage }](), "R"},
		{reflect.TypeFor[struct{ C chan int }](), "C"},
		{reflect.TypeFor[struct{ F func() }](), "F"},
		{reflect.TypeFor[struct{ Z complex128 }](), "Z"},
		{reflect.TypeFor[struct{ M map[int]string }](), "M"},
		{reflect.TypeFor[struct{ L []map[float64]int }](), "L[]"},
		{reflect.TypeFor[withString](), "N"},
		{reflect.TypeFor[embedsUnexported](), "unexported"},
	}
	for _, tt := range tests {
		_, err := schema.NewDecoder(tt.typ)
		var de *schema.DeriveError
		if !errors.As(err, &de) || de.Field != tt.field {
			t.Errorf("NewDecoder(%v) = %v, want a *DeriveError at field %q", tt.typ, err, tt.field)
		}
	}
	if _, err := schema.NewDecoder(nil); err == nil {
		t.Error("NewDecoder(nil) succeeded")
	}
}

func TestDecodeTarget(t *testing.T) {
	d := mustDecoder(t, reflect.TypeFor[item]())
	for _, target := range []any{nil, item{}, (*item)(nil), new(Line)} {
		if _, err := d.Decode(map[string]any{}, target); err == nil {
			t.Errorf("Decode into %T succeeded", target)
		}
	}
}

// TestDecodeAllocations holds the decoder to what it must allocate: the
// slices and maps of the value, nothing per string or number.
func TestDecodeAllocations(t *testing.T) {
	type flat struct {
		A string  `json:"a"`
		B float64 `json:"b"`
		C int     `json:"c"`
		D bool    `json:"d"`
		E struct {
			F string `json:"f"`
		} `json:"e"`
	}
	d := mustDecoder(t, reflect.TypeFor[flat]())
	tree := mustParse(t, `{"a":"x","b":1.5,"c":3,"d":true,"e":{"f":"y"}}`)
	var v flat
	if allocs := testing.AllocsPerRun(100, func() {
		if vs, err := d.Decode(tree, &v); vs != nil || err != nil {
			t.Fatal(vs, err)
		}
	}); allocs != 0 {
		t.Errorf("decoding a flat struct allocates %v times", allocs)
	}
}

// genSource feeds a document generator from fuzz input; past its end it
// yields zeros. A clean source makes documents that should decode: right
// types, exact keys and values every type accepts.
type genSource struct {
	data  []byte
	i     int
	clean bool
}

func newGenSource(data []byte) *genSource {
	g := &genSource{data: data}
	g.clean = g.next()%2 == 0
	return g
}

func (g *genSource) next() byte {
	if g.i >= len(g.data) {
		return 0
	}
	g.i++
	return g.data[g.i-1]
}

func (g *genSource) pick(n int) int { return int(g.next()) % n }

func (g *genSource) from(choices []any) any { return choices[g.pick(len(choices))] }

var (
	genNumbers = []any{
		json.Number("0"), json.Number("-0"), json.Number("1"), json.Number("-1"), json.Number("127"), json.Number("128"),
		json.Number("-129"), json.Number("255"), json.Number("256"), json.Number("65535"), json.Number("65536"),
		json.Number("2147483648"), json.Number("4294967296"), json.Number("9223372036854775807"),
		json.Number("9223372036854775808"), json.Number("-9223372036854775808"), json.Number("18446744073709551615"),
		json.Number("18446744073709551616"), json.Number("1.5"), json.Number("1.0"), json.Number("1e2"), json.Number("-2.5E-3"),
		json.Number("3.4028235e38"), json.Number("3.5e38"), json.Number("1e-50"), json.Number("1e400"), json.Number("123456789.125"),
	}
	genStrings = []any{
		"", "a", "low", "high", "Mid", "usd", "eur", "x\"y\\z\n", "é😀", "aGVsbG8=", "aGVsbG8", "AQID", "12", "-1.5e3", "1.", "01",
		"red,Green", "2024-07-01T12:00:00Z", "2024-07-01T12:00:00.5+02:00", "2016-12-31T23:59:60Z", "2024-02-30T00:00:00Z", "2024-07-01",
	}
	genKeys = []string{"", "a", "A", "k", "RED", "red", "name", "Name", "qty", "x/y", "~0"}

	// Values that every type of their kind accepts, for clean documents.
	cleanNumbers   = []any{json.Number("0"), json.Number("1"), json.Number("42"), json.Number("127")}
	cleanStrings   = []any{"", "a", "x\"y\\z\n", "é😀", "12"}
	cleanTimes     = []any{"2024-07-01T12:00:00Z", "2024-07-01T12:00:00.5+02:00", "0001-01-01T00:00:00Z"}
	cleanLevels    = []any{"low", "high"}
	cleanBase64    = []any{"", "aGVsbG8=", "AQID"}
	cleanNumerics  = []any{json.Number("-1.5e3"), "12", "0.25"}
	cleanMapKeys   = []string{"a", "k", "red", "x/y", "~0"}
	cleanPointObjs = []string{"X", "Y"}
)

// genValue builds a JSON tree for a value of type t: of the right type
// most of the time, and of some other type or null now and then, with
// struct keys that are exact, case variants or unknown.
func genValue(g *genSource, t reflect.Type, depth int) any {
	switch g.pick(16) {
	case 0:
		return nil
	case 1:
		if !g.clean {
			return genAny(g, depth)
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if g.clean {
		switch t {
		case reflect.TypeFor[time.Time]():
			return g.from(cleanTimes)
		case reflect.TypeFor[Level]():
			return g.from(cleanLevels)
		case reflect.TypeFor[json.Number]():
			return g.from(cleanNumerics)
		case reflect.TypeFor[upper](), reflect.TypeFor[names]():
			return g.from(cleanStrings)
		}
	}
	switch t {
	case reflect.TypeFor[time.Time](), reflect.TypeFor[Level](), reflect.TypeFor[upper](), reflect.TypeFor[names](), reflect.TypeFor[json.Number]():
		if g.pick(3) == 0 {
			return g.from(genNumbers)
		}
		return g.from(genStrings)
	case reflect.TypeFor[point]():
		obj := map[string]any{}
		for range g.pick(3) {
			if g.clean {
				obj[cleanPointObjs[g.pick(2)]] = g.from(cleanNumbers)
			} else {
				obj[[]string{"X", "Y", "x", "Z"}[g.pick(4)]] = g.from(genNumbers)
			}
		}
		return obj
	}
	switch t.Kind() {
	case reflect.Bool:
		return g.pick(2) == 0
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		if g.clean {
			return g.from(cleanNumbers)
		}
		return g.from(genNumbers)
	case reflect.String:
		if g.clean {
			return g.from(cleanStrings)
		}
		return g.from(genStrings)
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 && g.pick(2) == 0 {
			if g.clean {
				return g.from(cleanBase64)
			}
			return g.from(genStrings)
		}
		items := []any{}
		if depth > 0 {
			for range g.pick(4) {
				items = append(items, genValue(g, t.Elem(), depth-1))
			}
		}
		return items
	case reflect.Map:
		obj := map[string]any{}
		if depth > 0 {
			for range g.pick(4) {
				key := genKeys[g.pick(len(genKeys))]
				if g.clean {
					key = cleanMapKeys[g.pick(len(cleanMapKeys))]
				}
				obj[key] = genValue(g, t.Elem(), depth-1)
			}
		}
		return obj
	case reflect.Struct:
		obj := map[string]any{}
		if depth > 0 {
			genFields(g, t, obj, depth)
		}
		return obj
	}
	return genAny(g, depth)
}

// genFields adds members for the fields of struct type t, promoted ones
// included.
func genFields(g *genSource, t reflect.Type, obj map[string]any, depth int) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			genFields(g, ft, obj, depth)
			continue
		}
		if !f.IsExported() || name == "-" || (g.clean && name == "shared") {
			continue
		}
		if name == "" {
			name = f.Name
		}
		switch g.pick(8) {
		case 0, 1, 2:
			continue
		case 3:
			if !g.clean {
				name = strings.ToUpper(name)
			}
		case 4:
			if !g.clean && g.pick(4) == 0 {
				name = "unknown"
			}
		}
		obj[name] = genValue(g, f.Type, depth-1)
	}
}

// genAny builds a small tree of any shape.
func genAny(g *genSource, depth int) any {
	switch g.pick(6) {
	case 0:
		return nil
	case 1:
		return g.pick(2) == 0
	case 2:
		return g.from(genNumbers)
	case 3:
		return g.from(genStrings)
	case 4:
		if depth <= 0 {
			return []any{}
		}
		return []any{genAny(g, depth-1)}
	}
	if depth <= 0 {
		return map[string]any{}
	}
	return map[string]any{genKeys[g.pick(len(genKeys))]: genAny(g, depth-1)}
}

var decodeFuzzTypes = []reflect.Type{
	reflect.TypeFor[decAll](), reflect.TypeFor[Folder](), reflect.TypeFor[Order](), reflect.TypeFor[map[string][]*item](),
}

// decodeOutcome is how one generated document went.
type decodeOutcome int

const (
	outcomeKeys decodeOutcome = iota
	outcomeRefused
	outcomeDecoded
)

// checkGenerated decodes a document generated from data for type i with the
// decoder and with encoding/json. Whenever the decoder accepts a document,
// encoding/json must accept it and build the same value; whenever it
// refuses one for its values, encoding/json must refuse it too; and
// whenever it refuses keys, KeyChecker must report the very same
// violations.
func checkGenerated(t *testing.T, decoders []*schema.Decoder, checkers []*schema.KeyChecker, i int, data []byte) decodeOutcome {
	t.Helper()
	typ := decodeFuzzTypes[i]
	tree := genValue(newGenSource(data), typ, 4)
	if _, ok := tree.(map[string]any); !ok {
		tree = map[string]any{}
	}
	text := jsonvalue.Append(nil, tree)
	got := reflect.New(typ)
	vs, _ := decoders[i].Decode(tree, got.Interface())
	want := reflect.New(typ)
	stdErr := json.Unmarshal(text, want.Interface())
	if keys := checkers[i].Check(tree); len(keys) > 0 {
		if diff := cmp.Diff(keys, vs); diff != "" {
			t.Fatalf("%s: key violations differ from KeyChecker (-KeyChecker +Decode):\n%s", text, diff)
		}
		return outcomeKeys
	}
	if vs != nil {
		if stdErr == nil {
			t.Fatalf("%s: the decoder refuses (%v), encoding/json accepts", text, vs)
		}
		return outcomeRefused
	}
	if stdErr != nil {
		t.Fatalf("%s: the decoder accepts, encoding/json refuses: %v", text, stdErr)
	}
	if diff := cmp.Diff(want.Interface(), got.Interface(), cmp.AllowUnexported(decAll{})); diff != "" {
		t.Fatalf("%s: decoded value differs from encoding/json (-want +got):\n%s", text, diff)
	}
	return outcomeDecoded
}

func decodeFixtures(t testing.TB) ([]*schema.Decoder, []*schema.KeyChecker) {
	decoders := make([]*schema.Decoder, len(decodeFuzzTypes))
	checkers := make([]*schema.KeyChecker, len(decodeFuzzTypes))
	for i, typ := range decodeFuzzTypes {
		decoders[i] = mustDecoder(t, typ)
		checkers[i] = schema.NewKeyChecker(typ)
	}
	return decoders, checkers
}

// TestDecodeGenerated runs the differential check of FuzzDecode over a
// fixed series of generated documents, and makes sure the series reaches
// every outcome often: decoded values compared, refusals and key
// violations.
func TestDecodeGenerated(t *testing.T) {
	decoders, checkers := decodeFixtures(t)
	counts := map[decodeOutcome]int{}
	var state uint64 = 1
	data := make([]byte, 256)
	for n := range 4000 {
		for k := range data {
			// xorshift: a fixed, well-spread series.
			state ^= state << 13
			state ^= state >> 7
			state ^= state << 17
			data[k] = byte(state)
		}
		counts[checkGenerated(t, decoders, checkers, n%len(decodeFuzzTypes), data)]++
	}
	t.Logf("outcomes: %v", counts)
	for _, o := range []decodeOutcome{outcomeKeys, outcomeRefused, outcomeDecoded} {
		if counts[o] < 200 {
			t.Errorf("outcome %d reached %d times in 4000 documents, too few to mean much: %v", o, counts[o], counts)
		}
	}
}

// FuzzDecode compares the decoder with encoding/json on documents that
// the fuzz input generates for decAll, Folder, Order and a map type: see
// checkGenerated.
func FuzzDecode(f *testing.F) {
	decoders, checkers := decodeFixtures(f)
	for _, seed := range []string{"", "\x02\x05\x07\x03\x03\x03", "abcdefghijklmnopqrstuvwxyz0123456789", strings.Repeat("\x04\x02", 40)} {
		for i := range decodeFuzzTypes {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		checkGenerated(t, decoders, checkers, int(which)%len(decodeFuzzTypes), data)
	})
}

func ExampleDecoder() {
	type transfer struct {
		Amount   int64  `json:"amount"`
		Currency string `json:"currency"`
	}
	d, err := schema.NewDecoder(reflect.TypeFor[transfer]())
	if err != nil {
		panic(err)
	}
	tree, _ := jsonvalue.Parse([]byte(`{"amount":1250,"currency":"EUR"}`))
	var in transfer
	violations, _ := d.Decode(tree, &in)
	fmt.Println(in, violations)

	tree, _ = jsonvalue.Parse([]byte(`{"Amount":1e30,"currency":"EUR"}`))
	violations, _ = d.Decode(tree, &in)
	fmt.Println(violations)
	// Output:
	// {1250 EUR} []
	// [{/Amount unknown field; field names are case-sensitive, did you mean "amount"?}]
}
