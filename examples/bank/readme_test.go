package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The examples' README documents the bank with shell commands: the start
// command, and calls made with curl and tokens printed by devtoken, each
// followed by its answer. TestReadme runs exactly those commands, read
// from the README, so that the README stays true.

const (
	readmePath    = "../README.md"
	readmeSection = "## Bank: an Agent Auth resource server"
	// readmeAddr is where the README starts the bank; the test starts it
	// on a free port instead and rewrites the address.
	readmeAddr = "127.0.0.1:8080"
)

func TestReadme(t *testing.T) { runReadmeSection(t, readmeSection) }

// TestReadmeJobs runs the README's walk-through of a statement built as a
// job and of a retried transfer.
func TestReadmeJobs(t *testing.T) { runReadmeSection(t, readmeJobsSection) }

// readmeJobsSection is the README section on jobs and idempotency keys.
const readmeJobsSection = "## Bank: a statement as a job, a transfer retried"

// runReadmeSection starts the bank as section says and runs its calls.
func runReadmeSection(t *testing.T, section string) {
	if testing.Short() {
		t.Skip("builds and runs the commands")
	}
	root := repoRoot(t)
	start, calls := readmeBlocks(t, section)

	startWords, err := shellWords(start.text, nil)
	if err != nil {
		t.Fatalf("README line %d: %v", start.line, err)
	}
	if len(startWords) < 3 || !slices.Equal(startWords[:3], []string{"go", "run", "./examples/bank"}) {
		t.Fatalf("README line %d: the start command is not go run ./examples/bank: %q", start.line, startWords)
	}
	if !slices.Contains(startWords, readmeAddr) {
		t.Fatalf("README line %d: the start command does not listen on %s: %q", start.line, readmeAddr, startWords)
	}
	bankBin := buildBank(t)
	devtokenBin := buildCommand(t, "./cmd/devtoken", "devtoken")
	p := startBankIn(t, bankBin, root, func(addr, _ string) []string {
		args := slices.Clone(startWords[3:])
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, readmeAddr, addr)
		}
		return args
	})

	r := &readmeRunner{t: t, root: root, devtoken: devtokenBin, bank: p, vars: map[string]string{}}
	items, err := lexShell(calls.text)
	if err != nil {
		t.Fatalf("README block at line %d: %v", calls.line, err)
	}
	for _, it := range items {
		r.step(calls.line+it.line, it)
	}
	r.finishAnswer()
	if r.curls == 0 {
		t.Fatal("the README's calls block runs no curl")
	}

	p.stop(t)
	if logs := p.logs.String(); strings.Contains(logs, "acc_") {
		t.Errorf("the log holds an account id:\n%s", logs)
	}
}

// repoRoot is the module's root, where the README's commands run.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !bytes.HasPrefix(mod, []byte("module github.com/agentcap/agentcap\n")) {
		t.Fatalf("%s is not the module root: %v", root, err)
	}
	return root
}

// shellBlock is a fenced sh block of the README, with the line its
// first line has in the file.
type shellBlock struct {
	text string
	line int
}

// readmeBlocks returns the two sh blocks of the bank's README section:
// the start command, and the calls.
func readmeBlocks(t *testing.T, section string) (start, calls shellBlock) {
	t.Helper()
	data, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	first := slices.Index(lines, section)
	if first < 0 {
		t.Fatalf("the README has no section %q", section)
	}
	var blocks []shellBlock
	var cur *shellBlock
	for i := first + 1; i < len(lines); i++ {
		l := lines[i]
		switch {
		case cur == nil && strings.HasPrefix(l, "## "):
			i = len(lines) // the next section
		case cur == nil && l == "```sh":
			cur = &shellBlock{line: i + 2}
		case cur == nil && strings.HasPrefix(l, "```"):
			t.Fatalf("README line %d: a %q block; the section's commands are sh blocks", i+1, l)
		case cur != nil && l == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += l + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("README line %d: the sh block is not closed", cur.line-1)
	}
	if len(blocks) != 2 || strings.Count(blocks[0].text, "\n") != 1 {
		t.Fatalf("the section should hold two sh blocks, the one-line start command and the calls; it holds %d", len(blocks))
	}
	return shellBlock{strings.TrimSuffix(blocks[0].text, "\n"), blocks[0].line}, blocks[1]
}

// shellItem is a command (quotes kept, line continuations removed), a
// comment (its text after "#"), or a blank line.
type shellItem struct {
	kind string // "command", "comment" or "blank"
	text string
	line int // relative to the block's first line
}

// lexShell splits a block into items as a POSIX shell reads it: a
// command ends at a newline outside quotes, a backslash before a newline
// outside quotes joins two lines, and quotes may span lines.
func lexShell(src string) ([]shellItem, error) {
	var items []shellItem
	line := 0
	i := 0
	for i < len(src) {
		for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
			i++
		}
		if i == len(src) {
			break
		}
		switch src[i] {
		case '\n':
			items = append(items, shellItem{kind: "blank", line: line})
			line++
			i++
			continue
		case '#':
			end := strings.IndexByte(src[i:], '\n')
			if end < 0 {
				end = len(src) - i
			}
			items = append(items, shellItem{kind: "comment", text: strings.TrimPrefix(src[i+1:i+end], " "), line: line})
			line++
			i += end + 1
			continue
		}
		start := line
		var cmd strings.Builder
		quote := byte(0)
	scan:
		for ; i < len(src); i++ {
			c := src[i]
			switch {
			case quote == '\'':
				if c == '\'' {
					quote = 0
				}
			case c == '\\' && i+1 < len(src):
				i++
				if src[i] == '\n' && quote == 0 {
					// A line continuation: the two characters vanish.
					line++
					continue
				}
				cmd.WriteByte(c)
				c = src[i]
			case quote == '"':
				if c == '"' {
					quote = 0
				}
			case c == '\'' || c == '"':
				quote = c
			case c == '\n':
				i++
				line++
				break scan
			}
			if c == '\n' {
				line++
			}
			cmd.WriteByte(c)
		}
		if quote != 0 {
			return nil, fmt.Errorf("line %d: unterminated %c quote", start+1, quote)
		}
		items = append(items, shellItem{kind: "command", text: cmd.String(), line: start})
	}
	return items, nil
}

// shellWords splits a command into words with the shell's quoting:
// single quotes keep everything, double quotes expand variables, and
// unquoted words expand variables too. Variables must be set; command
// substitution is refused here.
func shellWords(cmd string, vars map[string]string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	expand := func(i int) (int, error) {
		// cmd[i] is '$'.
		j := i + 1
		var name string
		switch {
		case j < len(cmd) && cmd[j] == '(':
			return 0, errors.New("command substitution is only understood as NAME=$(...)")
		case j < len(cmd) && cmd[j] == '{':
			end := strings.IndexByte(cmd[j:], '}')
			if end < 0 {
				return 0, errors.New("unterminated ${")
			}
			name, j = cmd[j+1:j+end], j+end+1
		default:
			for j < len(cmd) && (cmd[j] == '_' || cmd[j] >= 'A' && cmd[j] <= 'Z' || cmd[j] >= 'a' && cmd[j] <= 'z' || j > i+1 && cmd[j] >= '0' && cmd[j] <= '9') {
				j++
			}
			name = cmd[i+1 : j]
		}
		if name == "" {
			w.WriteByte('$')
			return i + 1, nil
		}
		v, ok := vars[name]
		if !ok {
			return 0, fmt.Errorf("$%s is not set", name)
		}
		w.WriteString(v)
		return j, nil
	}
	for i := 0; i < len(cmd); {
		c := cmd[i]
		switch c {
		case ' ', '\t', '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			i++
		case '\'':
			end := strings.IndexByte(cmd[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			w.WriteString(cmd[i+1 : i+1+end])
			inWord = true
			i += end + 2
		case '"':
			inWord = true
			i++
			for {
				if i >= len(cmd) {
					return nil, errors.New(`unterminated " quote`)
				}
				c := cmd[i]
				if c == '"' {
					i++
					break
				}
				switch {
				case c == '\\' && i+1 < len(cmd) && cmd[i+1] == '\n':
					i += 2
				case c == '\\' && i+1 < len(cmd) && strings.IndexByte("$`\"\\", cmd[i+1]) >= 0:
					w.WriteByte(cmd[i+1])
					i += 2
				case c == '$':
					var err error
					if i, err = expand(i); err != nil {
						return nil, err
					}
				default:
					w.WriteByte(c)
					i++
				}
			}
		case '\\':
			if i+1 < len(cmd) {
				w.WriteByte(cmd[i+1])
			}
			inWord = true
			i += 2
		case '$':
			inWord = true
			var err error
			if i, err = expand(i); err != nil {
				return nil, err
			}
		default:
			if strings.IndexByte("|&;<>()`*?[", c) >= 0 {
				return nil, fmt.Errorf("%q is shell syntax this reader does not run", c)
			}
			w.WriteByte(c)
			inWord = true
			i++
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// readmeRunner runs the README's calls block.
type readmeRunner struct {
	t        *testing.T
	root     string
	devtoken string
	bank     *bankProcess
	vars     map[string]string

	curls int
	// The last curl's answer, while the comment lines that follow it are
	// read as the answer the README shows.
	answer     *reply
	answerLine int
	shown      []string
}

var (
	substitution = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=\$\((.*)\)$`)
	assignment   = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=(.*)$`)
)

func (r *readmeRunner) step(line int, it shellItem) {
	t := r.t
	t.Helper()
	if it.kind == "comment" && r.answer != nil {
		r.shown = append(r.shown, it.text)
		return
	}
	r.finishAnswer()
	if it.kind != "command" {
		return
	}
	if m := substitution.FindStringSubmatch(it.text); m != nil {
		if cmd, member, ok := strings.Cut(m[2], " | jq -r "); ok {
			words, err := shellWords(cmd, r.vars)
			if err != nil || len(words) == 0 || words[0] != "curl" || !strings.HasPrefix(member, ".") || strings.ContainsAny(member, " |") {
				t.Fatalf("README line %d: only curl ... | jq -r .member is run: %q (%v)", line, m[2], err)
			}
			r.vars[m[1]] = r.curlField(line, words[1:], member[1:])
			return
		}
		words, err := shellWords(m[2], r.vars)
		if err != nil {
			t.Fatalf("README line %d: %v", line, err)
		}
		r.vars[m[1]] = r.runDevtoken(line, words)
		return
	}
	if words, err := shellWords(it.text, r.vars); err == nil && len(words) == 2 && words[0] == "sleep" {
		d, err := time.ParseDuration(words[1] + "s")
		if err != nil || d > 10*time.Second {
			t.Fatalf("README line %d: sleep %q", line, words[1])
		}
		time.Sleep(d)
		return
	}
	if m := assignment.FindStringSubmatch(it.text); m != nil {
		words, err := shellWords(m[2], r.vars)
		if err != nil || len(words) > 1 {
			t.Fatalf("README line %d: %q is not one word: %v", line, m[2], err)
		}
		value := strings.Join(words, "")
		if m[1] == "BASE" {
			if want := "http://" + readmeAddr; value != want {
				t.Fatalf("README line %d: BASE is %q, not the started bank's %q", line, value, want)
			}
			value = r.bank.url
		}
		r.vars[m[1]] = value
		return
	}
	words, err := shellWords(it.text, r.vars)
	if err != nil {
		t.Fatalf("README line %d: %v", line, err)
	}
	if len(words) == 0 || words[0] != "curl" {
		t.Fatalf("README line %d: only curl, sleep, NAME=value, NAME=$(go run ./examples/bank/cmd/devtoken ...) and NAME=$(curl ... | jq -r .member) are run: %q", line, it.text)
	}
	rep := r.runCurl(line, words[1:])
	r.curls++
	r.answer, r.answerLine, r.shown = &rep, line, nil
}

// curlField runs "curl ARGS | jq -r .member" and returns the member, a
// string, of the JSON answer; "a.b" names member b of member a.
func (r *readmeRunner) curlField(line int, args []string, member string) string {
	t := r.t
	t.Helper()
	rep := r.runCurl(line, args)
	r.curls++
	var v any = rep.m
	for name := range strings.SplitSeq(member, ".") {
		obj, _ := v.(map[string]any)
		v = obj[name]
	}
	str, ok := v.(string)
	if !ok {
		t.Fatalf("README line %d: the answer has no string %q: %s", line, member, rep.body)
	}
	return str
}

// runDevtoken runs "go run ./examples/bank/cmd/devtoken ARGS" as the
// built command, from the module root, and returns the token it prints.
func (r *readmeRunner) runDevtoken(line int, words []string) string {
	t := r.t
	t.Helper()
	if len(words) < 3 || !slices.Equal(words[:3], []string{"go", "run", "./examples/bank/cmd/devtoken"}) {
		t.Fatalf("README line %d: only go run ./examples/bank/cmd/devtoken is run inside $(...): %q", line, words)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.devtoken, words[3:]...)
	cmd.Dir = r.root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("README line %d: devtoken %q: %v\n%s", line, words[3:], err, stderr.Bytes())
	}
	tok := strings.TrimRight(string(out), "\n")
	if strings.Count(tok, ".") != 2 || strings.ContainsAny(tok, " \n") {
		t.Fatalf("README line %d: devtoken printed %q, not one compact JWS", line, out)
	}
	return tok
}

// runCurl sends the request of "curl -s [-X METHOD] [-H HEADER]... [-d BODY] URL".
func (r *readmeRunner) runCurl(line int, args []string) reply {
	t := r.t
	t.Helper()
	var (
		headers = http.Header{}
		body    *string
		target  string
		method  string
	)
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-s":
		case a == "-X" && i+1 < len(args):
			i++
			method = args[i]
		case (a == "-H" || a == "-d") && i+1 < len(args):
			i++
			if a == "-d" {
				body = &args[i]
				continue
			}
			name, value, ok := strings.Cut(args[i], ":")
			if !ok {
				t.Fatalf("README line %d: header %q has no colon", line, args[i])
			}
			headers.Add(strings.TrimSpace(name), strings.TrimSpace(value))
		case strings.HasPrefix(a, "-"):
			t.Fatalf("README line %d: curl option %q is not understood here", line, a)
		case target != "":
			t.Fatalf("README line %d: two URLs, %q and %q", line, target, a)
		default:
			target = a
		}
	}
	if !strings.HasPrefix(target, r.bank.url+"/") {
		t.Fatalf("README line %d: %q is not a URL of the bank", line, target)
	}
	var rd io.Reader
	switch {
	case body != nil:
		// Like curl -d: a POST, with the body as written.
		rd = strings.NewReader(*body)
		if method == "" {
			method = http.MethodPost
		}
	case method == "":
		method = http.MethodGet
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = headers
	resp, err := r.bank.client.Do(req)
	if err != nil {
		t.Fatalf("README line %d: %v", line, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	rep := reply{status: resp.StatusCode, header: resp.Header, body: b}
	if err := json.Unmarshal(b, &rep.m); err != nil {
		t.Fatalf("README line %d: the answer is not a JSON object: %v: %s", line, err, b)
	}
	return rep
}

// finishAnswer compares the last curl's answer with the comment lines
// that followed it: every member shown must be in the answer with that
// value (objects may be abridged, arrays may not, a string shown as
// "prefix..." stands for any string with that prefix), and an answer
// shown with an "error" member must have an error status.
func (r *readmeRunner) finishAnswer() {
	t := r.t
	t.Helper()
	if r.answer == nil {
		return
	}
	rep, line, shown := *r.answer, r.answerLine, strings.Join(r.shown, "\n")
	r.answer, r.shown = nil, nil
	if shown == "" {
		t.Errorf("README line %d: the call is not followed by its answer", line)
		return
	}
	var want any
	if err := json.Unmarshal([]byte(shown), &want); err != nil {
		t.Errorf("README line %d: the answer shown is not JSON: %v:\n%s", line, err, shown)
		return
	}
	var got any
	if err := json.Unmarshal(rep.body, &got); err != nil {
		t.Fatal(err)
	}
	if where := jsonMismatch(want, got, ""); where != "" {
		t.Errorf("README line %d: the answer differs at %s:\nshown:  %s\nactual: %s", line, where, shown, rep.body)
	}
	// A failed job is polled with 200: its "error" is the job's, not
	// the answer's.
	_, isError := rep.m["error"]
	isError = isError && rep.m["status"] != "failed"
	if isError != (rep.status >= 400) {
		t.Errorf("README line %d: status %d with body %s", line, rep.status, rep.body)
	}
}

// jsonMismatch returns the path of the first place where got does not
// show want: objects in want may leave members out, everything else must
// be equal. "" means got shows want.
func jsonMismatch(want, got any, path string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path + " (not an object)"
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				return path + "/" + k + " (missing)"
			}
			if where := jsonMismatch(w[k], gv, path+"/"+k); where != "" {
				return where
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path + " (not an array of the same length)"
		}
		for i := range w {
			if where := jsonMismatch(w[i], g[i], fmt.Sprintf("%s/%d", path, i)); where != "" {
				return where
			}
		}
		return ""
	default:
		// A string shown ending in "..." stands for any string that
		// starts alike: a token, a time.
		if w, ok := want.(string); ok && strings.HasSuffix(w, "...") {
			if g, ok := got.(string); ok && strings.HasPrefix(g, strings.TrimSuffix(w, "...")) {
				return ""
			}
		}
		if want != got {
			w, _ := json.Marshal(want)
			g, _ := json.Marshal(got)
			return fmt.Sprintf("%s (%s, not %s)", path, g, w)
		}
		return ""
	}
}

func TestShellReader(t *testing.T) {
	vars := map[string]string{"BASE": "http://b", "T": "tok"}
	words := []struct {
		in   string
		want []string
	}{
		{`curl -s $BASE/x`, []string{"curl", "-s", "http://b/x"}},
		{`curl -H "Authorization: Bearer $T" "$BASE/d?name=x"`, []string{"curl", "-H", "Authorization: Bearer tok", "http://b/d?name=x"}},
		{`curl -d '{"a":"$T"}' ${BASE}/e`, []string{"curl", "-d", `{"a":"$T"}`, "http://b/e"}},
		{"x 'two\nlines' \"q\\\"\" a\\ b", []string{"x", "two\nlines", `q"`, "a b"}},
		{`echo $ $1`, []string{"echo", "$", "$1"}},
		{"x \"a\\\nb\"", []string{"x", "ab"}},
		{`echo $NOPE`, nil},
		{`echo $(date)`, nil},
		{`echo a | b`, nil},
		{`echo 'open`, nil},
	}
	for _, c := range words {
		got, err := shellWords(c.in, vars)
		if c.want == nil {
			if err == nil {
				t.Errorf("%q: %q, want an error", c.in, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, %v; want %q", c.in, got, err, c.want)
		}
	}

	items, err := lexShell("A=1\n\n# note\ncurl -d '{\"x\":\n  1}' \\\n  u\n# {\"a\":1}\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []shellItem{
		{"command", "A=1", 0}, {"blank", "", 1}, {"comment", "note", 2},
		{"command", "curl -d '{\"x\":\n  1}'   u", 3}, {"comment", `{"a":1}`, 6},
	}
	if !slices.Equal(items, want) {
		t.Errorf("items\n%+v\nwant\n%+v", items, want)
	}
	if _, err := lexShell("curl -d 'open\n"); err == nil {
		t.Error("an unterminated quote was accepted")
	}

	mismatches := []struct {
		want, got string
		where     string
	}{
		{`{"a":1}`, `{"a":1,"b":2}`, ""},
		{`{"a":{"b":[1,{"c":2}]}}`, `{"a":{"b":[1,{"c":2,"d":3}],"e":4}}`, ""},
		{`{"a":1}`, `{"a":2}`, "/a (2, not 1)"},
		{`{"a":1}`, `{"b":1}`, "/a (missing)"},
		{`{"a":[1]}`, `{"a":[1,2]}`, "/a (not an array of the same length)"},
		{`{"a":{}}`, `{"a":[]}`, "/a (not an object)"},
		{`{"a":"1"}`, `{"a":1}`, `/a (1, not "1")`},
		{`{"a":"cfm_..."}`, `{"a":"cfm_x1"}`, ""},
		{`{"a":"cfm_..."}`, `{"a":"tok"}`, `/a ("tok", not "cfm_...")`},
		{`{"a":"cfm_..."}`, `{"a":1}`, `/a (1, not "cfm_...")`},
	}
	for _, m := range mismatches {
		var w, g any
		if err := json.Unmarshal([]byte(m.want), &w); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(m.got), &g); err != nil {
			t.Fatal(err)
		}
		if where := jsonMismatch(w, g, ""); where != m.where {
			t.Errorf("%s in %s: %q, want %q", m.want, m.got, where, m.where)
		}
	}
}
