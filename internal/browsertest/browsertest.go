// Package browsertest drives headless Chromium through chromedp for the
// tests of the provider's pages: a fresh browser per test, steps that
// fail the test with the page's HTML, screenshots kept as artifacts, and
// the DevTools WebAuthn domain's virtual authenticators, which stand in
// for a person's passkey.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
)

// New starts headless Chromium with a fresh profile and returns a
// browser context that ends with the test. The test skips without
// Chromium, except under CI, where the package is installed and its
// absence is a failure. The browser stops after four minutes at most.
func New(t *testing.T) context.Context {
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
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(900, 1200),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	// A bound on the whole test's browsing, generous for a loaded
	// machine: the suites around it run in parallel.
	ctx, cancelTimeout := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
		for range 50 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("could not remove the browser profile %s", dir)
	})
	// Start the browser now, so that a failure to start is reported as
	// such rather than as the first step's.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// ArtifactDir is where screenshots go: $AGENTCAP_ARTIFACTS, or a
// temporary directory of the test.
func ArtifactDir(t *testing.T) string {
	if d := os.Getenv("AGENTCAP_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// Do runs chromedp actions, failing the test with the page's HTML when
// one fails.
func Do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v; page:\n%s", what, err, HTML(ctx))
	}
}

// Value runs one chromedp action that yields a value.
func Value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v; page:\n%s", what, err, HTML(ctx))
	}
	return v
}

// HTML is the current page's markup, for failure messages.
func HTML(ctx context.Context) string {
	html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	return html
}

// Screenshot keeps a full-page PNG of the current page in the artifacts.
func Screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := Value(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(ArtifactDir(t), name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// WaitPath waits until the page's location path is path.
func WaitPath(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := Value(t, ctx, "reading the location", chromedp.Evaluate[string](`location.pathname`))
		if got == path {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page stayed at %s, want %s", got, path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Text is the text of the element sel, with runs of white space as one
// space.
func Text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s := Value(t, ctx, "reading "+sel, chromedp.Text(chromedp.CSS(sel)))
	return strings.Join(strings.Fields(s), " ")
}

// Authenticator adds a virtual platform authenticator to the browser
// tab: CTAP2, internal transport, resident keys, user verification that
// succeeds, and presence granted without a touch, as a laptop's
// fingerprint reader would answer a person who is there.
func Authenticator(t *testing.T, ctx context.Context) webauthn.AuthenticatorID {
	t.Helper()
	return Value(t, ctx, "adding a virtual authenticator", func(ctx context.Context, tg *chromedp.Target) (webauthn.AuthenticatorID, error) {
		if _, err := cdp.Call(ctx, tg, webauthn.Enable, webauthn.EnableParams{}); err != nil {
			return "", err
		}
		res, err := cdp.Call(ctx, tg, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{
			Options: &webauthn.VirtualAuthenticatorOptions{
				Protocol:                    webauthn.AuthenticatorProtocolCtap2,
				Ctap2version:                webauthn.Ctap2versionCtap21,
				Transport:                   webauthn.AuthenticatorTransportInternal,
				HasResidentKey:              true,
				HasUserVerification:         true,
				IsUserVerified:              true,
				AutomaticPresenceSimulation: true,
			},
		})
		return res.AuthenticatorID, err
	})
}

// SetUserVerified makes the authenticator's user verification succeed or
// fail.
func SetUserVerified(t *testing.T, ctx context.Context, id webauthn.AuthenticatorID, ok bool) {
	t.Helper()
	Do(t, ctx, "setting user verification", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, webauthn.SetUserVerified, webauthn.SetUserVerifiedParams{AuthenticatorID: id, IsUserVerified: ok})
		return err
	}))
}

// Credentials returns the credentials the authenticator holds.
func Credentials(t *testing.T, ctx context.Context, id webauthn.AuthenticatorID) []*webauthn.Credential {
	t.Helper()
	return Value(t, ctx, "reading the authenticator's credentials", func(ctx context.Context, tg *chromedp.Target) ([]*webauthn.Credential, error) {
		res, err := cdp.Call(ctx, tg, webauthn.GetCredentials, webauthn.GetCredentialsParams{AuthenticatorID: id})
		return res.Credentials, err
	})
}

// AddCredential puts a credential (another authenticator's, say) into
// the authenticator.
func AddCredential(t *testing.T, ctx context.Context, id webauthn.AuthenticatorID, c *webauthn.Credential) {
	t.Helper()
	Do(t, ctx, "adding a credential", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, webauthn.AddCredential, webauthn.AddCredentialParams{AuthenticatorID: id, Credential: c})
		return err
	}))
}

// RemoveAuthenticator takes the authenticator away, with its
// credentials.
func RemoveAuthenticator(t *testing.T, ctx context.Context, id webauthn.AuthenticatorID) {
	t.Helper()
	Do(t, ctx, "removing the authenticator", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, webauthn.RemoveVirtualAuthenticator, webauthn.RemoveVirtualAuthenticatorParams{AuthenticatorID: id})
		return err
	}))
}

// Outcome clicks the button sel of a provider page's last step and
// returns the outcome the page then shows (#outcome).
func Outcome(t *testing.T, ctx context.Context, what, sel string) string {
	t.Helper()
	Do(t, ctx, what, chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS("#outcome")))
	return Text(t, ctx, "#outcome")
}
