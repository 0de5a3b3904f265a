package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// documented is an agentcap command line of the documentation, or a go
// install or go run of a package of this module.
type documented struct {
	where string // file:line
	words []string
}

// documentedCommands reads the sh blocks of the README and of docs/, and
// the MCP host configurations of their json blocks ({"command":
// "agentcap", "args": [...]}), for the command lines that run agentcap
// or install it.
func documentedCommands(t *testing.T, root string) (cli, gotools []documented) {
	t.Helper()
	files := []string{filepath.Join(root, "README.md")}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, docs...)
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lang, first := "", 0
		var block strings.Builder
		for i, line := range strings.Split(string(src), "\n") {
			switch {
			case lang == "" && strings.HasPrefix(line, "```"):
				lang, first = strings.TrimPrefix(line, "```"), i+2
				block.Reset()
				if lang == "" {
					lang = "text"
				}
			case lang != "" && line == "```":
				where := func(n int) string { return filepath.Base(file) + ":" + strconv.Itoa(first+n) }
				switch lang {
				case "sh":
					for n, words := range shellLines(t, block.String(), where) {
						d := documented{where(n), words}
						switch {
						case len(words) >= 3 && words[0] == "go" && (words[1] == "install" || words[1] == "run"):
							gotools = append(gotools, d)
							if words[1] == "run" && words[2] == "./cmd/agentcap" {
								cli = append(cli, documented{d.where, words[3:]})
							}
						case words[0] == "agentcap":
							cli = append(cli, documented{d.where, words[1:]})
						default:
							if i := slices.Index(words, "--"); i >= 0 && i+1 < len(words) && words[i+1] == "agentcap" {
								cli = append(cli, documented{d.where, words[i+2:]})
							}
						}
					}
				case "json":
					for _, args := range mcpHostArgs(block.String()) {
						cli = append(cli, documented{where(0), args})
					}
				}
				lang = ""
			case lang != "":
				block.WriteString(line + "\n")
			}
		}
	}
	return cli, gotools
}

// shellLines splits an sh block into the words of each command, by the
// line it starts on: single and double quotes (without expansion), a
// backslash before a newline joins lines, and # starts a comment.
func shellLines(t *testing.T, src string, where func(int) string) map[int][]string {
	t.Helper()
	lines := map[int][]string{}
	var words []string
	var w strings.Builder
	inWord, quote, line, start := false, rune(0), 0, 0
	end := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	rs := []rune(src)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			if r == '\n' {
				line++
			}
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '\\' && i+1 < len(rs) && rs[i+1] == '\n':
			i++
			line++
		case r == '#' && !inWord:
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
			i--
		case r == ' ' || r == '\t':
			end()
		case r == '\n':
			end()
			if len(words) > 0 {
				lines[start] = words
			}
			words = nil
			line++
			start = line
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("%s: unterminated quote", where(start))
	}
	end()
	if len(words) > 0 {
		lines[start] = words
	}
	return lines
}

// mcpHostArgs returns the arguments of every {"command": "agentcap",
// "args": [...]} in a JSON document.
func mcpHostArgs(doc string) [][]string {
	var v any
	if json.Unmarshal([]byte(doc), &v) != nil {
		return nil
	}
	var found [][]string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["command"] == "agentcap" {
				var args []string
				raw, _ := json.Marshal(v["args"])
				_ = json.Unmarshal(raw, &args)
				found = append(found, args)
			}
			for _, m := range v {
				walk(m)
			}
		case []any:
			for _, m := range v {
				walk(m)
			}
		}
	}
	walk(v)
	return found
}

// TestDocumentedCommands checks every agentcap command line of the
// README and docs/ against the command: each names a command with flags
// and arguments it takes (it may fail, here without a provider, but not
// as a usage error), and every go install or go run names a main package
// of this module by its path from the repository's root, which is what
// works from a clone (the module is not published).
func TestDocumentedCommands(t *testing.T) {
	root := filepath.Join("..", "..")
	lines, gotools := documentedCommands(t, root)
	var names []string
	for _, d := range lines {
		if len(d.words) > 0 {
			names = append(names, d.words[0])
		}
	}
	for _, want := range []string{"connect", "connections", "use", "request", "preview", "execute", "mcp"} {
		if !slices.Contains(names, want) {
			t.Errorf("no documented command line runs agentcap %s (found %q)", want, names)
		}
	}
	// Every command stops at its first request: the context has ended.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, d := range lines {
		var out, errOut bytes.Buffer
		server, _ := mcp.NewInMemoryTransports()
		state := t.TempDir()
		c := &cli{stdout: &out, stderr: &errOut, getenv: func(k string) string {
			if k == "AGENTCAP_STATE" {
				return state
			}
			return ""
		}, mcpTransport: server}
		if code := c.run(ctx, d.words); code == 2 || strings.Contains(errOut.String(), "Usage:") {
			t.Errorf("%s: agentcap %q is a usage error:\n%s", d.where, d.words, errOut.String())
		}
	}
	if len(gotools) == 0 {
		t.Fatal("no go install or go run found")
	}
	for _, d := range gotools {
		pkg := d.words[2]
		if !strings.HasPrefix(pkg, "./") || strings.Contains(pkg, "@") {
			t.Errorf("%s: %q is not a package path in the repository", d.where, strings.Join(d.words, " "))
			continue
		}
		if err := mainPackage(filepath.Join(root, pkg)); err != nil {
			t.Errorf("%s: %q: %v", d.where, strings.Join(d.words, " "), err)
		}
	}
}

// mainPackage reports whether dir holds a main package.
func mainPackage(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for line := range strings.Lines(string(src)) {
			if strings.HasPrefix(line, "package ") {
				if strings.TrimSpace(line) == "package main" {
					return nil
				}
				break
			}
		}
	}
	return errors.New("no main package there")
}
