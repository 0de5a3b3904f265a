package idempotency_test

import (
	"testing"

	"github.com/agentcap/agentcap/idempotency"
)

func TestFingerprint(t *testing.T) {
	same := [][2]string{
		{`{"a":1,"b":[1,2]}`, ` { "b" : [1, 2.0], "a" : 1e0 } `},
		{``, `{}`},
		{`null`, `{}`},
		{`{"s":"\u00e9"}`, `{"s":"é"}`},
	}
	for _, p := range same {
		if idempotency.Fingerprint("c", []byte(p[0])) != idempotency.Fingerprint("c", []byte(p[1])) {
			t.Errorf("%s and %s differ", p[0], p[1])
		}
	}
	differ := [][2]string{
		{`{"a":1}`, `{"a":2}`},
		{`{"a":"1"}`, `{"a":1}`},
		{`{"a":[1,2]}`, `{"a":[2,1]}`},
		{`{"a":1}`, `{"a":1,"b":null}`},
		{`not json`, `{}`},
	}
	for _, p := range differ {
		if idempotency.Fingerprint("c", []byte(p[0])) == idempotency.Fingerprint("c", []byte(p[1])) {
			t.Errorf("%s and %s match", p[0], p[1])
		}
	}
	if idempotency.Fingerprint("a", []byte(`{}`)) == idempotency.Fingerprint("b", []byte(`{}`)) {
		t.Error("the capability does not count")
	}
}

func FuzzFingerprint(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,"x",{"b":null}]`, `1e400`, `{"a":`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		a := idempotency.Fingerprint("c", []byte(args))
		if a != idempotency.Fingerprint("c", []byte(" "+args+"\n")) {
			t.Errorf("white space around %q changes the fingerprint", args)
		}
		if len(a) != 64 {
			t.Errorf("fingerprint %q", a)
		}
	})
}
