package main_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readmeAgentsSection is the root README's walk-through of two agents.
const readmeAgentsSection = "### Two agents, one current"

// readmeOutputStep is an agentcap command of the README and the text it
// is shown printing.
type readmeOutputStep struct {
	line, output string
}

// readmeAgentsSteps returns the commands of the README's section on two
// agents, each with the text block that follows it.
func readmeAgentsSteps(t *testing.T) []readmeOutputStep {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := readmeSubsection(t, string(src), readmeAgentsSection)
	var steps []readmeOutputStep
	for _, block := range strings.Split(text, "```")[1:] {
		switch {
		case strings.HasPrefix(block, "sh\n"):
			line := strings.TrimSpace(strings.TrimPrefix(block, "sh\n"))
			if !strings.HasPrefix(line, "go run ./cmd/agentcap ") || strings.Contains(line, "\n") {
				t.Fatalf("the README's section on two agents runs one agentcap command a block, not %q", line)
			}
			steps = append(steps, readmeOutputStep{line: line})
		case strings.HasPrefix(block, "text\n"):
			if len(steps) == 0 || steps[len(steps)-1].output != "" {
				t.Fatal("a text block of the README's section on two agents follows no command")
			}
			steps[len(steps)-1].output = strings.TrimPrefix(block, "text\n")
		}
	}
	for _, s := range steps {
		if s.output == "" {
			t.Fatalf("the README does not show what %q prints", s.line)
		}
	}
	if len(steps) != 4 {
		t.Fatalf("the README's section on two agents has %d commands, want connections, execute, use and request", len(steps))
	}
	return steps
}

// TestReadmeAgents runs the root README's walk-through up to its section
// on two agents: the first agent and the rent payer connect, and the
// section's commands print what the README shows: the saved agents, the
// refusal naming the agent that holds the capability, the switch to it,
// and a request for more that Alice approves.
func TestReadmeAgents(t *testing.T) {
	steps := readmeAgentsSteps(t)
	firstConnect, _, _ := readmeCommands(t)
	transfers := readmeTransferSteps(t)
	bin := buildBank(t)
	agentcap := buildCommand(t, "../../cmd/agentcap", "agentcap")
	p := startProviderBank(t, bin, filepath.Join(t.TempDir(), "bank.db"))
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	approvalURL := regexp.MustCompile(`Open ` + regexp.QuoteMeta(p.url) + `/approve\?code=([A-Z0-9-]+)`)

	// run runs a README command line against the bank and returns its
	// exit status and output; decide, when not nil, answers the approval
	// page once the command prints its link.
	run := func(line string, decide func(code string) (string, error)) (int, string, string) {
		t.Helper()
		args, err := shellWords(strings.TrimPrefix(line, "go run ./cmd/agentcap "), nil)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		for j := range args {
			args[j] = strings.ReplaceAll(args[j], "http://localhost:8080", p.url)
		}
		cmd := exec.CommandContext(ctx, agentcap, args...)
		cmd.Env = append(os.Environ(), "AGENTCAP_STATE="+state)
		stdout, stderr := &syncBuffer{}, &syncBuffer{}
		cmd.Stdout, cmd.Stderr = stdout, stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if decide != nil {
			var m []string
			for deadline := time.Now().Add(30 * time.Second); m == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				m = approvalURL.FindStringSubmatch(stderr.String())
			}
			if m == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("%s printed no approval link:\n%s", line, stderr)
			}
			if page, err := decide(m[1]); err != nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("deciding on the page: %v\n%s", err, page)
			}
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%s: %v", line, err)
		}
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
	mustRun := func(line string, decide func(code string) (string, error)) {
		t.Helper()
		if code, stdout, stderr := run(line, decide); code != 0 {
			t.Fatalf("%s: exit %d\n%s%s\n%s", line, code, stdout, stderr, p.logs)
		}
	}

	mustRun(firstConnect, func(code string) (string, error) {
		return "", approve(p.url, "user_alice", code, "check_balance")
	})
	mustRun(transfers[0].line, func(code string) (string, error) {
		return decideOnPage(p.url, "user_alice", code, false, "transfer_money")
	})
	for _, s := range steps {
		var decide func(string) (string, error)
		if strings.HasPrefix(s.line, "go run ./cmd/agentcap request ") {
			decide = func(code string) (string, error) {
				page, err := decideOnPage(p.url, "user_alice", code, false, "check_balance")
				if err == nil && !strings.Contains(page, "You allowed") {
					err = fmt.Errorf("not allowed")
				}
				return page, err
			}
		}
		code, stdout, stderr := run(s.line, decide)
		// A command that fails shows its error; one that succeeds, its
		// output.
		got, fails := stdout, strings.HasPrefix(s.output, "agentcap: ")
		if fails {
			got = stderr
		}
		if (code != 0) != fails {
			t.Errorf("%s: exit %d\n%s%s", s.line, code, stdout, stderr)
		}
		got = strings.ReplaceAll(got, p.url, "http://localhost:8080")
		if sameText(got) != sameText(s.output) {
			t.Errorf("%s printed\n%s\nthe README shows\n%s", s.line, got, s.output)
		}
	}
}

var (
	// agentID matches the bank's agent ids.
	agentID = regexp.MustCompile(`agt_[a-z2-7]{26}`)
	// lineEnd matches the spaces that end a line, and columnGap those
	// that align a table's columns.
	lineEnd   = regexp.MustCompile(`(?m) +$`)
	columnGap = regexp.MustCompile(`(\S) {2,}`)
)

// sameText is what must be the same in a command's output and in the
// README: the text, but for the agent ids, new in every run (each id is
// numbered in the order it first appears), and the width of the spaces
// that align columns.
func sameText(s string) string {
	ids := map[string]string{}
	s = agentID.ReplaceAllStringFunc(s, func(id string) string {
		if _, ok := ids[id]; !ok {
			ids[id] = fmt.Sprintf("(agent %d)", len(ids)+1)
		}
		return ids[id]
	})
	s = lineEnd.ReplaceAllString(s, "")
	return strings.TrimSpace(columnGap.ReplaceAllString(s, "$1 "))
}

func TestSameText(t *testing.T) {
	tests := []struct{ a, b string }{
		{"  AGENT   NAME\n* agt_aaaaaaaaaaaaaaaaaaaaaaaaaa  x  \n", "  AGENT NAME\n* agt_bbbbbbbbbbbbbbbbbbbbbbbbbb x\n"},
		{"CAPABILITY  GRANT\nx  active  \n", "CAPABILITY GRANT\nx active"},
		{"agt_aaaaaaaaaaaaaaaaaaaaaaaaaa agt_bbbbbbbbbbbbbbbbbbbbbbbbbb agt_aaaaaaaaaaaaaaaaaaaaaaaaaa",
			"agt_cccccccccccccccccccccccccc agt_dddddddddddddddddddddddddd agt_cccccccccccccccccccccccccc"},
	}
	for _, tt := range tests {
		if sameText(tt.a) != sameText(tt.b) {
			t.Errorf("%q and %q differ: %q, %q", tt.a, tt.b, sameText(tt.a), sameText(tt.b))
		}
	}
	differ := []struct{ a, b string }{
		{"agt_aaaaaaaaaaaaaaaaaaaaaaaaaa agt_bbbbbbbbbbbbbbbbbbbbbbbbbb", "agt_aaaaaaaaaaaaaaaaaaaaaaaaaa agt_aaaaaaaaaaaaaaaaaaaaaaaaaa"},
		{"* agt_aaaaaaaaaaaaaaaaaaaaaaaaaa", "  agt_aaaaaaaaaaaaaaaaaaaaaaaaaa"},
		{"a b", "ab"},
	}
	for _, tt := range differ {
		if sameText(tt.a) == sameText(tt.b) {
			t.Errorf("%q and %q read the same: %q", tt.a, tt.b, sameText(tt.a))
		}
	}
}
