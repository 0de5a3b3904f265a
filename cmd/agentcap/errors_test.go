package main

import (
	"context"
	"encoding/json"
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
		{"field errors", `{"error":"invalid_request","message":"m","errors":[{"path":"/a","message":"too big"},{"path":"","message":"not an object"}]}`,
			"  /a: too big\n  (the arguments): not an object\n"},
		{"field errors with more in them", `{"error":"invalid_request","message":"m","errors":[{"path":"/a","message":"x","keyword":"max"}]}`,
			"  errors: [{\"path\":\"/a\",\"message\":\"x\",\"keyword\":\"max\"}]\n"},
		{"members in name order", `{"error":"capability_not_granted","message":"m","missing_constraints":["to"],"hint":"ask\nagain","retry_after":2}`,
			"  hint: ask again\n  missing_constraints: [\"to\"]\n  retry_after: 2\n"},
		{"violations of another shape", `{"error":"constraint_violated","message":"m","violations":"a"}`,
			"  violations: a\n"},
		{"an error object that is not a code", `{"error":{"reason":"x"},"code":"c","message":"m"}`,
			"  error: {\"reason\":\"x\"}\n"},
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
