package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/core"
)

type payIn struct {
	To     string `json:"to"`
	Amount int    `json:"amount"`
}

// The whole error envelope reaches the user: the field errors of
// invalid_request, members such as missing_constraints, and the
// constraint violations, in text and with --json.
func TestServerErrorsArePrintedWhole(t *testing.T) {
	payTo := core.MustDefine("pay_to", "Pay someone.",
		func(_ context.Context, _ struct{}, in payIn) (payIn, error) { return in, nil },
		core.WithRequiredConstraints("to"))
	p := newProviderWith(t, []core.Definer{echoCap, payTo})
	state := t.TempDir()
	if code, out, errOut := agentcap(t, state, "connect", p.URL, "--insecure-loopback",
		"--capability", `echo:{"message":{"in":["hi"]}}`, "--capability", "pay_to"); code != 0 {
		t.Fatalf("connect: exit %d\n%s%s", code, out, errOut)
	}
	tests := []struct {
		name string
		call []string
		text []string
		// notText must not be printed: the violations are printed once,
		// as violations.
		notText []string
		json    map[string]any // members of the --json error object
	}{
		{
			"invalid arguments",
			[]string{"execute", "echo", "--args", `{"message":5,"extra":true}`},
			[]string{"400 invalid_request", "\n  /message: ", "\n  /extra: "}, nil,
			map[string]any{"error": "invalid_request", "status": 400.0},
		},
		{
			"missing constraints",
			[]string{"execute", "pay_to", "--args", `{"to":"bob","amount":1}`},
			[]string{"403 capability_not_granted", "\n  missing_constraints: [\"to\"]\n"}, nil,
			map[string]any{"error": "capability_not_granted", "missing_constraints": []any{"to"}},
		},
		{
			"constraint violated",
			[]string{"execute", "echo", "--args", `{"message":"bye"}`},
			[]string{"403 constraint_violated", "\n  violation: message must satisfy"}, []string{"violations:"},
			map[string]any{"error": "constraint_violated"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(tt.call, "--insecure-loopback")
			code, out, errOut := agentcap(t, state, args...)
			if code != 1 || out != "" {
				t.Fatalf("exit %d, stdout %q", code, out)
			}
			for _, want := range tt.text {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			for _, unwanted := range tt.notText {
				if strings.Contains(errOut, unwanted) {
					t.Errorf("stderr has %q:\n%s", unwanted, errOut)
				}
			}
			code, _, errOut = agentcap(t, state, append(args, "--json")...)
			var got map[string]any
			if code != 1 || json.Unmarshal([]byte(errOut), &got) != nil {
				t.Fatalf("--json: exit %d\n%s", code, errOut)
			}
			for k, v := range tt.json {
				if diff := cmp.Diff(v, got[k]); diff != "" {
					t.Errorf("--json %s (-want +got):\n%s\n%s", k, diff, errOut)
				}
			}
			if tt.name == "invalid arguments" {
				var env struct {
					Errors []struct {
						Path string `json:"path"`
					} `json:"errors"`
				}
				_ = json.Unmarshal([]byte(errOut), &env)
				var paths []string
				for _, e := range env.Errors {
					paths = append(paths, e.Path)
				}
				if !strings.Contains(strings.Join(paths, " "), "/message") || !strings.Contains(strings.Join(paths, " "), "/extra") {
					t.Errorf("--json errors: %v\n%s", paths, errOut)
				}
			}
		})
	}
}

func TestErrorMembers(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string // the lines printed after the error
	}{
		{"field errors", `{"error":"c","message":"m","errors":[{"path":"/a","message":"too big"},{"path":"","message":"not an object"}]}`,
			"  /a: too big\n  (the arguments): not an object\n"},
		{"field errors with more in them", `{"error":"c","message":"m","errors":[{"path":"/a","message":"x","keyword":"max"}]}`,
			"  errors: [{\"path\":\"/a\",\"message\":\"x\",\"keyword\":\"max\"}]\n"},
		{"members in name order", `{"error":"c","message":"m","missing_constraints":["to"],"hint":"ask\nagain","retry_after":2}`,
			"  hint: ask again\n  missing_constraints: [\"to\"]\n  retry_after: 2\n"},
		{"violations of another shape", `{"error":"c","message":"m","violations":"a"}`,
			"  violations: a\n"},
		{"an error object that is not a code", `{"error":{"reason":"x"},"code":"c","message":"m"}`,
			"  error: {\"reason\":\"x\"}\n"},
		{"a code and a message of their own", `{"error":"other","message":"more"}`, "  error: other\n  message: more\n"},
		{"not an object", `oops`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &client.Error{Status: 400, Code: "c", Message: "m", Body: json.RawMessage(tt.body)}
			var out strings.Builder
			c := &cli{stderr: &out}
			c.printError(e)
			got := strings.TrimPrefix(out.String(), "agentcap: "+e.Error()+"\n")
			if got != tt.want {
				t.Errorf("printed after the error:\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// FuzzErrorMembers prints error envelopes of any shape: every line after
// the error is indented and holds no character a terminal acts on, and
// with --json every member of the envelope is in the one JSON object
// printed.
func FuzzErrorMembers(f *testing.F) {
	f.Add([]byte(`{"error":"invalid_request","message":"m","errors":[{"path":"/a","message":"bad\u001b[2J"}]}`))
	f.Add([]byte(`{"error":"capability_not_granted","message":"m","missing_constraints":["to"],"x\u0085y":"\u009b31m"}`))
	f.Add([]byte(`{"error":{"code":1},"code":"c","violations":"v","errors":[1],"retry_after":2}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		e := &client.Error{Status: 400, Code: "c", Message: "m", Body: body}
		var text strings.Builder
		(&cli{stderr: &text}).printError(e)
		rest, ok := strings.CutPrefix(text.String(), "agentcap: "+e.Error()+"\n")
		if !ok {
			t.Fatalf("the error is not first:\n%s", text.String())
		}
		for line := range strings.Lines(rest) {
			if !strings.HasPrefix(line, "  ") || !strings.HasSuffix(line, "\n") {
				t.Fatalf("line %q is not indented", line)
			}
			for _, r := range strings.TrimSuffix(line, "\n") {
				if isControl(r) {
					t.Fatalf("line %q holds the control character %U", line, r)
				}
			}
		}
		var out strings.Builder
		(&cli{stderr: &out, json: true}).printError(e)
		var printed map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out.String()), &printed); err != nil {
			t.Fatalf("--json printed %q: %v", out.String(), err)
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(body, &members) != nil {
			return
		}
		for name, v := range members {
			var s string
			isString := json.Unmarshal(v, &s) == nil
			switch {
			case (name == "error" || name == "code") && isString && s == string(e.Code):
			case name == "message" && isString && s == e.Message:
			case sameMember(printed, name, v) || sameMember(printed, "envelope_"+name, v):
			default:
				t.Fatalf("--json lost the member %q of %s:\n%s", name, body, out.String())
			}
		}
	})
}

// sameMember reports whether the JSON object m has the member name with
// the value v.
func sameMember(m map[string]json.RawMessage, name string, v json.RawMessage) bool {
	got, ok := m[name]
	if !ok {
		return false
	}
	var a, b any
	return json.Unmarshal(got, &a) == nil && json.Unmarshal(v, &b) == nil && reflect.DeepEqual(a, b)
}
