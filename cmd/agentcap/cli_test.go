package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// globalHelp is what every command's help says of the global flags.
var globalHelp = []string{"Global flags, before or after the command:", "--json", "--agent ID", "--state DIR", "--insecure-loopback", "--timeout DURATION"}

func TestCommandHelp(t *testing.T) {
	tests := []struct {
		command string
		usage   string
		flags   []string
	}{
		{"discover", "agentcap discover URL", nil},
		{"connect", "agentcap connect URL --capability NAME[:CONSTRAINTS]...", []string{"--capability NAME[:CONSTRAINTS]", "--mode MODE", "--name NAME", "--reason TEXT", "--preferred-method METHOD", "--login-hint HINT", "--binding-message TEXT"}},
		{"connections", "agentcap connections [--offline]", []string{"--offline"}},
		{"use", "agentcap use AGENT", nil},
		{"request", "agentcap request --capability NAME[:CONSTRAINTS]...", []string{"--capability NAME[:CONSTRAINTS]", "--reason TEXT", "--preferred-method METHOD", "--login-hint HINT", "--binding-message TEXT"}},
		{"status", "agentcap status", nil},
		{"capabilities", "agentcap capabilities [--query TEXT]", []string{"--query TEXT"}},
		{"describe", "agentcap describe NAME", nil},
		{"preview", "agentcap preview NAME [--args JSON]", []string{"--args JSON"}},
		{"execute", "agentcap execute NAME [--args JSON]", []string{"--args JSON", "--yes", "--confirmation-token TOKEN", "--idempotency-key KEY"}},
		{"sign", "agentcap sign [--aud URL] [--capability NAME]...", []string{"--aud URL", "--capability NAME"}},
		{"revoke", "agentcap revoke", nil},
		{"mcp", "agentcap mcp [--url URL]... [--refresh DURATION]", []string{"--url URL", "--refresh DURATION"}},
	}
	_, overview, _ := agentcap(t, t.TempDir(), "help")
	if !strings.Contains(overview, "exits with 0 when it succeeded, 1 when it failed and 2 for a\nmistake") {
		t.Errorf("the command list does not give the exit statuses:\n%s", overview)
	}
	for _, tt := range tests {
		if !strings.Contains(overview, "\n  "+tt.command+" ") {
			t.Errorf("the command list lacks %s:\n%s", tt.command, overview)
		}
		for _, form := range [][]string{{tt.command, "-h"}, {tt.command, "--help"}, {"help", tt.command}, {"--json", tt.command, "-h"}} {
			t.Run(strings.Join(form, " "), func(t *testing.T) {
				code, out, errOut := agentcap(t, t.TempDir(), form...)
				if code != 0 || errOut != "" {
					t.Fatalf("exit %d, stderr %q", code, errOut)
				}
				if !strings.HasPrefix(out, "Usage: "+tt.usage) {
					t.Errorf("help does not start with the usage line %q:\n%s", tt.usage, out)
				}
				own, global, _ := strings.Cut(out, "Global flags")
				for _, f := range tt.flags {
					if !strings.Contains(own, "\n  "+f+"\n") {
						t.Errorf("help lacks the flag %q:\n%s", f, out)
					}
				}
				if (len(tt.flags) > 0) != strings.Contains(own, "\nFlags:\n") {
					t.Errorf("the Flags section does not match the command's flags:\n%s", out)
				}
				for _, want := range globalHelp[1:] {
					if !strings.Contains(global, want) {
						t.Errorf("help lacks the global flag %q:\n%s", want, out)
					}
				}
			})
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"--state", "x", "-h"}} {
		code, out, _ := agentcap(t, t.TempDir(), args...)
		if code != 0 || out != overview {
			t.Errorf("%q: exit %d, not the command list:\n%s", args, code, out)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"execute", "echo", "--bogus"}, []string{"agentcap execute: unknown flag --bogus", "Usage: agentcap execute NAME [--args JSON]", "Run 'agentcap execute -h' for its flags"}},
		{[]string{"describe"}, []string{"agentcap describe: missing NAME", "Usage: agentcap describe NAME\n", "Run 'agentcap describe -h'"}},
		{[]string{"describe", "a", "b"}, []string{`agentcap describe: unexpected argument "b"`, "Usage: agentcap describe NAME\n"}},
		{[]string{"status", "--timeout"}, []string{"agentcap status: flag needs an argument: --timeout", "Usage: agentcap status\n"}},
		{[]string{"execute", "echo", "--timeout", "soon"}, []string{`agentcap execute: invalid value "soon" for flag --timeout: not a duration`}},
		{[]string{"execute", "echo", "--args", "{"}, []string{"agentcap execute: --args must be a JSON object", "Run 'agentcap execute -h'"}},
		{[]string{"connect", "http://127.0.0.1:1", "--mode", "robot"}, []string{`agentcap connect: --mode must be delegated or autonomous, not "robot"`, "Usage: agentcap connect URL"}},
		{[]string{"frobnicate"}, []string{`agentcap: unknown command "frobnicate"`, "Run 'agentcap help' for the commands."}},
		{nil, []string{"agentcap: no command given", "Usage: agentcap [global flags] <command>"}},
		{[]string{"--bogus", "status"}, []string{"agentcap: unknown flag --bogus", "Run 'agentcap help'"}},
		{[]string{"help", "status", "now"}, []string{`agentcap help: unexpected argument "now"`}},
		{[]string{"help", "frobnicate"}, []string{`agentcap: unknown command "frobnicate"`}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := agentcap(t, t.TempDir(), tt.args...)
			if code != 2 || out != "" {
				t.Errorf("exit %d, stdout %q", code, out)
			}
			for _, want := range tt.want {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			// The mistake and how to get help, not the whole help.
			if n := strings.Count(errOut, "\n"); n > 3 || strings.Contains(errOut, "Global flags") {
				t.Errorf("stderr has %d lines:\n%s", n, errOut)
			}
		})
	}
}

// The global flags work before the command as well as after it.
func TestGlobalFlagsBeforeOrAfterTheCommand(t *testing.T) {
	// No AGENTCAP_STATE: a --state the command does not take would put
	// the state in this configuration directory instead.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	p := newProvider(t)
	state := t.TempDir()
	steps := []struct {
		args []string
		out  string
	}{
		{[]string{"--state", state, "--insecure-loopback", "connect", p.URL, "--capability", "echo"}, "Connected agent agt_a"},
		{[]string{"--state", state, "execute", "echo", "--args", `{"message":"hi"}`, "--insecure-loopback"}, "{\n  \"message\": \"hi\"\n}\n"},
		{[]string{"execute", "echo", "--args", `{"message":"hi"}`, "--state", state, "--insecure-loopback", "--json"}, "{\"message\":\"hi\"}\n"},
		{[]string{"--json", "--state=" + state, "--insecure-loopback", "--agent", "agt_a", "--timeout", "30s", "execute", "echo", "--args", `{"message":"hi"}`}, "{\"message\":\"hi\"}\n"},
		{[]string{"--state", state, "--insecure-loopback", "describe", "--", "echo"}, "echo: Echo a message."},
	}
	for _, s := range steps {
		code, out, errOut := agentcap(t, "", s.args...)
		if code != 0 || !strings.Contains(out, s.out) {
			t.Errorf("%q: exit %d\n%s%s", s.args, code, out, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "connections", "agt_a.json")); err != nil {
		t.Errorf("the connection is not under --state: %v", err)
	}
}

// --timeout bounds the command whether it comes before the command or
// after it: a stream that never ends is cut at the timeout.
func TestTimeoutBeforeOrAfterTheCommand(t *testing.T) {
	l := newLongCLI(t)
	state := connectCLI(t, l.p, "ticks")
	call := []string{"execute", "ticks", "--args", `{"n":2}`, "--insecure-loopback"}
	for _, args := range [][]string{
		append([]string{"--timeout", "300ms"}, call...),
		append(append([]string{}, call...), "--timeout", "300ms"),
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			// Without the timeout the stream waits for the gate, which
			// never opens: the test gives up after 20 s, cancelling.
			ctx, cancel := context.WithCancel(context.Background())
			defer time.AfterFunc(20*time.Second, cancel).Stop()
			out := &notifyWriter{writes: make(chan string, 16)}
			var mu sync.Mutex
			var waits []time.Duration
			code, errOut := runCLI(ctx, state, out, &waits, &mu, args...)
			if code != 1 || !strings.Contains(errOut, "context deadline exceeded") {
				t.Errorf("exit %d: %s", code, errOut)
			}
		})
	}
}
