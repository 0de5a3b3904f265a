package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap/client"
)

// TestREADMEPrograms builds this program as README.md shows it, and its
// Echo and Fiber twins, each on a free port instead of 8080, runs it,
// and walks through what a user does: an agent connects, Alice signs in
// and approves it on the provider's page, and the agent greets her.
func TestREADMEPrograms(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the programs")
	}
	// Each run leaves nothing behind: testdata holds only the runs' copies.
	t.Cleanup(func() { _ = os.Remove("testdata") })
	for _, file := range []string{"main.go", "echo/main.go", "fiber/main.go"} {
		t.Run(filepath.Dir(file), func(t *testing.T) { runProgram(t, file) })
	}
}

func runProgram(t *testing.T, file string) {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	if !strings.Contains(string(src), "127.0.0.1:8080") {
		t.Fatalf("%s no longer serves 127.0.0.1:8080, as README.md says", file)
	}
	// The copy lives in the module (under testdata, which go ./... skips)
	// so that it builds with the module's packages.
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("testdata", "run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(strings.ReplaceAll(string(src), "127.0.0.1:8080", addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "greeter")
	build := exec.Command("go", "build", "-o", bin, "./"+filepath.ToSlash(dir))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Dir = t.TempDir() // where greeter.db is created
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("program output:\n%s", logs.String())
		}
	})
	base := "http://" + addr
	waitUp(t, base+"/.well-known/agent-configuration")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.New(client.Config{Keys: client.NewMemoryKeyStore(), AllowInsecureLoopback: true, MaxPollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	approved := make(chan error, 1)
	agent, status, err := c.Connect(ctx, base, client.ConnectOptions{
		Capabilities: client.Capabilities("greet"),
		OnApproval: func(a client.Approval) {
			go func() { approved <- approve(ctx, base, "alice", a.UserCode) }()
		},
	})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if err := <-approved; err != nil {
		t.Fatalf("approving on the page: %v", err)
	}
	if g, ok := status.Grant("greet"); !ok || g.Status != "active" {
		t.Fatalf("grants after approval: %+v", status.Grants)
	}
	res, err := agent.Execute(ctx, "greet", nil)
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	var greeting string
	if err := json.Unmarshal(res.Data, &greeting); err != nil || greeting != "Hello, alice!" {
		t.Errorf("greet answered %s (%v), want \"Hello, alice!\"", res.Data, err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitUp(t *testing.T, u string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the program did not answer %s: %v", u, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// approve signs user in on the development sign-in and allows the request
// of userCode on the approval page, as a person in a browser does.
func approve(ctx context.Context, base, user, userCode string) error {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	page := "/approve?code=" + url.QueryEscape(userCode)
	get := func(path string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return "", err
		}
		return do(c, req)
	}
	post := func(path string, form url.Values) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(form.Encode()))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		return do(c, req)
	}
	signIn, err := get("/login?next=" + url.QueryEscape(page))
	if err != nil {
		return err
	}
	m := csrfField.FindStringSubmatch(signIn)
	if m == nil {
		return fmt.Errorf("no sign-in form")
	}
	review, err := post("/login", url.Values{"user": {user}, "next": {page}, "csrf": {html.UnescapeString(m[1])}})
	if err != nil {
		return err
	}
	if m = csrfField.FindStringSubmatch(review); m == nil {
		return fmt.Errorf("no approval form for %s", userCode)
	}
	_, err = post("/approve", url.Values{"csrf": {html.UnescapeString(m[1])}, "code": {userCode}, "step": {"review"},
		"action": {"allow"}, "capability": {"greet"}})
	return err
}

func do(c *http.Client, req *http.Request) (string, error) {
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s %s: %s: %.300s", req.Method, req.URL.Path, resp.Status, body)
	}
	return string(body), nil
}
