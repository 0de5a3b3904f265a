//go:build unix

package provider_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/agentcap/agentcap/agentauth/provider"
)

// cdp is a minimal Chrome DevTools Protocol client over one websocket:
// enough to drive a page through the approval flow.
type cdp struct {
	ws *websocket.Conn
	id int
}

func dialCDP(ctx context.Context, wsURL string) (*cdp, error) {
	cfg, err := websocket.NewConfig(wsURL, "http://127.0.0.1/")
	if err != nil {
		return nil, err
	}
	ws, err := cfg.DialContext(ctx)
	if err != nil {
		return nil, err
	}
	return &cdp{ws: ws}, nil
}

// call sends one command and waits for its answer, skipping events.
func (c *cdp) call(method string, params any, result any) error {
	c.id++
	id := c.id
	if err := websocket.JSON.Send(c.ws, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return err
	}
	_ = c.ws.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := websocket.JSON.Receive(c.ws, &msg); err != nil {
			return fmt.Errorf("cdp %s: %w", method, err)
		}
		if msg.ID != id {
			continue
		}
		if msg.Error != nil {
			return fmt.Errorf("cdp %s: %s", method, msg.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(msg.Result, result)
		}
		return nil
	}
}

// eval evaluates a JavaScript expression in the page and returns its
// value as a string.
func (c *cdp) eval(expr string) (string, error) {
	var res struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := c.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res); err != nil {
		return "", err
	}
	if res.ExceptionDetails != nil {
		return "", fmt.Errorf("javascript %q: %s", expr, res.ExceptionDetails.Text)
	}
	return fmt.Sprint(res.Result.Value), nil
}

// waitFor polls the page until expr is true.
func (c *cdp) waitFor(t *testing.T, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v, err := c.eval(`(document.readyState === "complete" && (` + expr + `)) ? "yes" : "no"`)
		if err == nil && v == "yes" {
			return
		}
		if time.Now().After(deadline) {
			html, _ := c.eval(`document.documentElement.outerHTML`)
			t.Fatalf("waiting for %s: %v; page:\n%s", what, err, html)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *cdp) screenshot(path string) error {
	var res struct {
		Data string `json:"data"`
	}
	if err := c.call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &res); err != nil {
		return err
	}
	png, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}

// startChromium starts headless Chromium with remote debugging on a
// loopback port chosen by Chromium, and returns its browser websocket
// URL. The test skips without Chromium, except under CI, where the
// package is installed and its absence is a failure.
func startChromium(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed (apt-get install chromium)")
		}
		t.Skip("chromium is not installed")
	}
	// Not t.TempDir: Chromium's helper processes may still be writing to
	// the profile for a moment after the browser is gone, which would fail
	// the test's own cleanup.
	dir, err := os.MkdirTemp("", "agentcap-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--remote-allow-origins=*",
		"--user-data-dir="+dir, "--window-size=900,1200", "about:blank")
	// Its own process group, so that stopping it stops its helpers too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		for range 50 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("could not remove the browser profile %s", dir)
	})
	// Chromium prints the browser endpoint on stderr once it listens.
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "DevTools listening on "); ok {
				found <- strings.TrimSpace(rest)
			}
		}
	}()
	select {
	case ws := <-found:
		return ws
	case <-time.After(30 * time.Second):
		t.Fatal("chromium did not start its DevTools endpoint within 30 s")
		return ""
	}
}

// pageTarget returns the websocket URL of the page Chromium opened at
// start, from its /json/list endpoint.
func pageTarget(t *testing.T, browserWS string) string {
	t.Helper()
	u, err := url.Parse(browserWS)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var targets []struct {
			Type string `json:"type"`
			WS   string `json:"webSocketDebuggerUrl"`
		}
		resp, err := http.Get("http://" + u.Host + "/json/list")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
		}
		for _, tg := range targets {
			if tg.Type == "page" && tg.WS != "" {
				return tg.WS
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no page target: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func artifactDir(t *testing.T) string {
	if d := os.Getenv("AGENTCAP_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// TestApprovalPageInChromium walks the approval page in a real headless
// Chromium: sign in as alice, review the agent, allow a subset with a
// webauthn-strength capability, pass the confirmation step, and keep a
// screenshot of the review page and of the outcome.
func TestApprovalPageInChromium(t *testing.T) {
	browserWS := startChromium(t)
	e := newPageEnv(t)
	h := newKey(t)
	r := e.register(h, newKey(t), map[string]any{"name": "Budget helper", "host_name": "alice-laptop", "reason": "Pay the rent",
		"capabilities": []any{"echo", "check_balance", map[string]any{"name": "transfer", "constraints": map[string]any{"amount": map[string]any{"max": 900}, "currency": map[string]any{"in": []string{"EUR"}}}}}})
	if r.status != http.StatusOK {
		t.Fatalf("register: %d %s", r.status, r.raw)
	}
	ap := r.body["approval"].(map[string]any)
	code := ap["user_code"].(string)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	page, err := dialCDP(ctx, pageTarget(t, browserWS))
	if err != nil {
		t.Fatal(err)
	}
	defer page.ws.Close()
	if err := page.call("Page.navigate", map[string]any{"url": ap["verification_uri_complete"]}, nil); err != nil {
		t.Fatal(err)
	}
	page.waitFor(t, "the sign-in page", `location.pathname === "/login"`)
	mustEval(t, page, `document.getElementById("login-alice").click()`)
	page.waitFor(t, "the review page", `location.pathname === "/approve" && !!document.getElementById("allow")`)

	got := map[string]string{}
	for _, id := range []string{"user", "agent-name", "host-name", "mode", "reason", "user-code"} {
		got[id] = mustEval(t, page, `document.getElementById("`+id+`").textContent.trim()`)
	}
	want := map[string]string{"user": "Alice", "agent-name": "Budget helper", "host-name": "alice-laptop first connection from this host",
		"mode": "delegated", "reason": "Pay the rent", "user-code": code}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("#%s = %q, want %q", k, got[k], v)
		}
	}
	transfer := mustEval(t, page, `document.getElementById("cap-transfer").textContent.replace(/\s+/g, " ")`)
	for _, s := range []string{"needs in-person confirmation", "at most 900", `one of "EUR"`, "high risk"} {
		if !strings.Contains(transfer, s) {
			t.Errorf("transfer entry %q lacks %q", transfer, s)
		}
	}
	dir := artifactDir(t)
	if err := page.screenshot(filepath.Join(dir, "approval-page.png")); err != nil {
		t.Fatal(err)
	}

	// Allow echo and transfer, not check_balance.
	mustEval(t, page, `document.querySelector('#cap-check_balance input[type=checkbox]').click()`)
	mustEval(t, page, `document.getElementById("allow").click()`)
	page.waitFor(t, "the confirmation step", `!!document.getElementById("presence")`)
	if s := mustEval(t, page, `document.getElementById("strong").textContent.trim()`); s != "transfer" {
		t.Errorf("capabilities to confirm: %q", s)
	}
	// A wrong confirmation is refused and asked again.
	mustEval(t, page, `document.getElementById("presence").value = "BBBB-BBBB"`)
	mustEval(t, page, `document.getElementById("confirm").click()`)
	page.waitFor(t, "the refusal", `!!document.getElementById("notice") && !!document.getElementById("presence")`)
	mustEval(t, page, `document.getElementById("presence").value = "`+strings.ToLower(code)+`"`)
	mustEval(t, page, `document.getElementById("confirm").click()`)
	page.waitFor(t, "the outcome", `!!document.getElementById("outcome")`)
	if s := mustEval(t, page, `document.getElementById("outcome").textContent`); s != "You allowed Budget helper: echo, transfer." {
		t.Errorf("outcome %q", s)
	}
	if err := page.screenshot(filepath.Join(dir, "approval-done.png")); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Second)
	st := e.do(http.MethodGet, provider.PathStatus+"?agent_id="+r.str("agent_id"), e.hostToken(h, nil), nil)
	if g := grants(st); st.str("status") != "active" || g["echo"] != "active" || g["transfer"] != "active" || g["check_balance"] != "denied" || st.str("user_id") != "alice" {
		t.Errorf("agent after the page: %s", st.raw)
	}
	t.Logf("screenshots in %s", dir)
}

func mustEval(t *testing.T, c *cdp, expr string) string {
	t.Helper()
	v, err := c.eval(expr)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
