package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

type fuzzLine struct {
	SKU  string  `json:"sku" maxLength:"8"`
	Qty  uint8   `json:"qty"`
	Note *string `json:"note,omitempty"`
}

type fuzzOrder struct {
	Name  string     `json:"name" minLength:"1"`
	Count int        `json:"count"`
	Big   int64      `json:"big,omitempty"`
	Ratio float64    `json:"ratio,omitempty" minimum:"0"`
	Flag  *bool      `json:"flag,omitempty"`
	Kind  string     `json:"kind,omitempty" enum:"a,b"`
	Tags  []string   `json:"tags,omitempty"`
	Lines []fuzzLine `json:"lines,omitempty"`
	When  *time.Time `json:"when,omitempty"`
}

// fuzzKeys are the only object keys a fuzzOrder document may hold.
var fuzzKeys = map[string]bool{
	"name": true, "count": true, "big": true, "ratio": true, "flag": true, "kind": true,
	"tags": true, "lines": true, "when": true, "sku": true, "qty": true, "note": true,
}

// FuzzExecuteDynamic sends arbitrary raw arguments through the input
// stage of Executor.Execute, for a derived schema and for a loose explicit
// one (which leaves the decoding to encoding/json). An accepted document
// must have no duplicate keys and only exact field names, and the handler
// must receive what encoding/json decodes from it; a refused one is
// invalid_request with at least one violation; an identity with an
// Authorizer (for which the arguments' raw members are parsed too) must
// not change the answer, and its Authorizer must see those members.
func FuzzExecuteDynamic(f *testing.F) {
	var got fuzzOrder
	handler := func(_ context.Context, _ app, in fuzzOrder) (struct{}, error) {
		got = in
		return struct{}{}, nil
	}
	reg, err := core.NewRegistry(
		core.MustDefine("derived", "Take an order.", handler),
		core.MustDefine("loose", "Take an order under a loose schema.", handler,
			core.WithInputSchema([]byte(`{"type":"object","properties":{"name":{"type":"string"},"count":{"type":"number"}},"additionalProperties":true}`))),
	)
	if err != nil {
		f.Fatal(err)
	}
	e, err := core.NewExecutor(reg, createContext, core.Config{})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"name":"a","count":1}`,
		`{"name":"a","count":-3,"big":9007199254740993,"ratio":0.5,"flag":true,"kind":"b","tags":["x",""],` +
			`"lines":[{"sku":"abc","qty":255,"note":"n"}],"when":"2024-07-01T12:00:00.5+02:00"}`,
		`{"name":"a","count":1.0}`, `{"name":"a","count":1e2}`, `{"Name":"a","count":1}`,
		`{"name":"a","count":1,"name":"b"}`, `{"name":"\ud800","count":1}`, `{"name":"a","count":1,"lines":[{"SKU":"x","qty":1}]}`,
		`null`, ` `, `[]`, `{"name":"a","count":1,"when":"2016-12-31T23:59:60Z"}`, `{"name":"a","count":1,"big":1e30}`,
	} {
		f.Add(false, []byte(s))
		f.Add(true, []byte(s))
	}
	var members map[string]json.RawMessage
	plainID := caller("u")
	authID := authorizedBy(plainID, func(_ context.Context, call *auth.Call) error {
		members = call.Arguments
		return nil
	})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, loose bool, args []byte) {
		name := "derived"
		if loose {
			name = "loose"
		}
		got = fuzzOrder{}
		_, errPlain := e.Execute(ctx, name, plainID, args)
		plain := got
		got = fuzzOrder{}
		members = nil
		_, errAuth := e.Execute(ctx, name, authID, args)
		if (errPlain == nil) != (errAuth == nil) {
			t.Fatalf("%s %q: without authorize %v, with authorize %v", name, args, errPlain, errAuth)
		}
		if errPlain != nil {
			a, b := fuzzInputError(t, errPlain), fuzzInputError(t, errAuth)
			if diff := cmp.Diff(a.Details, b.Details); diff != "" {
				t.Fatalf("%s %q: violations differ with an Authorizer (-without +with):\n%s", name, args, diff)
			}
			return
		}
		if diff := cmp.Diff(plain, got); diff != "" {
			t.Fatalf("%s %q: inputs differ with an Authorizer (-without +with):\n%s", name, args, diff)
		}
		doc := bytes.TrimSpace(args)
		if len(doc) == 0 || string(doc) == "null" {
			doc = []byte("{}")
		}
		// The Authorizer saw the document's members as they were sent.
		var sent map[string]json.RawMessage
		if err := json.Unmarshal(doc, &sent); err != nil {
			t.Fatalf("%s %q accepted, encoding/json cannot read its members: %v", name, args, err)
		}
		if len(sent) != len(members) {
			t.Fatalf("%s %q: the Authorizer saw %d members, the document has %d", name, args, len(members), len(sent))
		}
		for k, v := range sent {
			if !bytes.Equal(bytes.TrimSpace(members[k]), bytes.TrimSpace(v)) {
				t.Fatalf("%s %q: the Authorizer saw %s = %s, the document has %s", name, args, k, members[k], v)
			}
		}
		if err := strictKeys(doc); err != nil {
			t.Fatalf("%s %q accepted: %v", name, args, err)
		}
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.DisallowUnknownFields()
		var want fuzzOrder
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("%s %q accepted, encoding/json refuses it: %v", name, args, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s %q: the handler got another value than encoding/json decodes (-json +handler):\n%s", name, args, diff)
		}
		if name == "derived" {
			if got.Name == "" || got.Ratio < 0 || (got.Kind != "" && got.Kind != "a" && got.Kind != "b") {
				t.Fatalf("%q accepted against the schema: %+v", args, got)
			}
			for _, l := range got.Lines {
				if utf8.RuneCountInString(l.SKU) > 8 {
					t.Fatalf("%q accepted with a long sku %q", args, l.SKU)
				}
			}
		}
	})
}

// fuzzInputError checks that err is an input-stage invalid_request error
// with violations at JSON Pointers, and returns it.
func fuzzInputError(t *testing.T, err error) *agentcap.Error {
	t.Helper()
	ce, ok := err.(*agentcap.Error)
	if !ok {
		t.Fatalf("not an *agentcap.Error: %T %v", err, err)
	}
	if ce.Code != agentcap.CodeInvalidRequest || ce.Stage != agentcap.StageInput || len(ce.Details) == 0 {
		t.Fatalf("refusal %+v", ce)
	}
	for _, v := range ce.Details {
		if v.Path != "" && !strings.HasPrefix(v.Path, "/") {
			t.Fatalf("violation path %q is not a JSON Pointer", v.Path)
		}
	}
	return ce
}

// strictKeys reports a duplicate key or a key that is not exactly a
// field name, anywhere in the JSON document doc.
func strictKeys(doc []byte) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	type frame struct {
		object bool
		keys   map[string]bool
		atKey  bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.atKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					stack[len(stack)-1].atKey = true
				}
				continue
			}
			k := tok.(string)
			if top.keys[k] {
				return errors.New("duplicate key " + k)
			}
			if !fuzzKeys[k] {
				return errors.New("unknown key " + k)
			}
			top.keys[k] = true
			top.atKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, atKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].atKey = true
		}
	}
}
