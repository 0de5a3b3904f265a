package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readmeTransfersSection is the root README's walk-through of transfers.
const readmeTransfersSection = "### Transfers: a preview, a confirmation, and Alice's own for big ones"

// readmeStep is an agentcap command of the README and the JSON block
// that follows it, if any.
type readmeStep struct {
	line string
	json string
}

// readmeTransferSteps returns the agentcap commands of the README's
// transfers section, in order, with the JSON each is shown printing.
func readmeTransferSteps(t *testing.T) []readmeStep {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := readmeSubsection(t, string(src), readmeTransfersSection)
	var steps []readmeStep
	for _, block := range strings.Split(text, "```")[1:] {
		switch {
		case strings.HasPrefix(block, "sh\n"):
			steps = append(steps, readmeStep{line: strings.TrimSpace(strings.TrimPrefix(block, "sh\n"))})
		case strings.HasPrefix(block, "json\n"):
			if len(steps) == 0 || steps[len(steps)-1].json != "" {
				t.Fatal("a JSON block of the README's transfers follows no command")
			}
			text := strings.TrimPrefix(block, "json\n")
			if !json.Valid([]byte(text)) {
				t.Fatalf("the README's transfers show JSON that is not: %s", text)
			}
			steps[len(steps)-1].json = text
		}
	}
	for _, s := range steps {
		if !strings.HasPrefix(s.line, "go run ./cmd/agentcap ") || strings.Contains(s.line, "\n") {
			t.Fatalf("the README's transfers run one agentcap command a block, not %q", s.line)
		}
	}
	if len(steps) != 4 {
		t.Fatalf("the README's transfers have %d commands, want connect, preview and two executes", len(steps))
	}
	return steps
}

// readmeSubsection returns the text of the README's section under
// heading, up to the next heading of its level or above.
func readmeSubsection(t *testing.T, readme, heading string) string {
	t.Helper()
	_, text, ok := strings.Cut(readme, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("the README has no section %q", heading)
	}
	for _, next := range []string{"\n## ", "\n### "} {
		if i := strings.Index(text, next); i >= 0 {
			text = text[:i]
		}
	}
	return text
}

// TestReadmeTransfers runs the root README's transfers walk-through
// against the bank as its own provider: agentcap connects an agent that
// may pay Bob, Alice allows it with the in-person step, agentcap previews
// and executes a transfer, and a big one waits for Alice, who confirms it
// on the page the command prints.
func TestReadmeTransfers(t *testing.T) {
	steps := readmeTransferSteps(t)
	bin := buildBank(t)
	agentcap := buildCommand(t, "../../cmd/agentcap", "agentcap")
	p := startProviderBank(t, bin, filepath.Join(t.TempDir(), "bank.db"))
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	approvalURL := regexp.MustCompile(`Open ` + regexp.QuoteMeta(p.url) + `/approve\?code=([A-Z0-9-]+)`)

	// run runs step i of the README against the bank and returns what
	// it printed on standard error; decide, when not nil, answers the
	// approval page once the command prints its link.
	run := func(i int, decide func(code string) (string, error)) string {
		t.Helper()
		args, err := shellWords(strings.TrimPrefix(steps[i].line, "go run ./cmd/agentcap "), nil)
		if err != nil {
			t.Fatalf("%s: %v", steps[i].line, err)
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
				t.Fatalf("%s printed no approval link:\n%s", steps[i].line, stderr)
			}
			if page, err := decide(m[1]); err != nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("deciding on the page: %v\n%s", err, page)
			}
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s: %v\n%s\n%s", steps[i].line, err, stderr, p.logs)
		}
		if want := steps[i].json; want != "" {
			// The JSON the README shows is all the command prints on
			// standard output, but for a token and its expiry, which
			// are new each time.
			if got := fresh(stdout.String()); got != fresh(want) {
				t.Errorf("%s printed\n%s\nthe README shows\n%s", steps[i].line, stdout, want)
			}
		}
		return stderr.String()
	}

	run(0, func(code string) (string, error) {
		return decideOnPage(p.url, "user_alice", code, false, "transfer_money")
	})
	if notes := run(1, nil); !strings.Contains(notes, "This call needs a confirmation. The token") {
		t.Errorf("the preview does not say what its token is for:\n%s", notes)
	}
	run(2, nil)
	run(3, func(code string) (string, error) {
		page, err := decideOnPage(p.url, "user_alice", code, false, "transfer_money")
		if err == nil && !strings.Contains(page, "You confirmed the call of transfer_money by rent payer.") {
			return page, os.ErrInvalid
		}
		return page, err
	})
}

// freshValue matches what is new in every answer: a confirmation token
// and the time it expires.
var freshValue = regexp.MustCompile(`cfm_[A-Za-z0-9_-]{43}|"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"`)

// fresh replaces in a JSON text a token and a time by what stands for
// any of their kind, so that the README and the command compare equal
// when they print the same but for those.
func fresh(text string) string {
	return freshValue.ReplaceAllStringFunc(strings.TrimSpace(text), func(m string) string {
		if strings.HasPrefix(m, "cfm_") {
			return "(a confirmation token)"
		}
		return `"(a time)"`
	})
}

func TestFresh(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"token": "cfm_YA41XN0MN5dDCwSjEuM42Zh5nTOrtB-H-7InjDzFx88", "expires_at": "2026-05-04T09:35:12Z"}` + "\n",
			`{"token": "(a confirmation token)", "expires_at": "(a time)"}`},
		{`{"expires_at": "2026-05-04T09:35:12.048+02:00"}`, `{"expires_at": "(a time)"}`},
		{`{"token": "cfm_short", "expires_at": "soon"}`, `{"token": "cfm_short", "expires_at": "soon"}`},
	}
	for _, tt := range tests {
		if got := fresh(tt.in); got != tt.want {
			t.Errorf("fresh(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
