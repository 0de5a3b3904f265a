//go:build interop

package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// locationCapability is the capability every provider under test lists
// with an agentcap resource server as its location. It takes
// {"message": string} and returns it.
const locationCapability = "agentcap_echo"

// decision is what the approving user decides about a pending
// registration or capability request.
type decision struct {
	AgentID string
	// UserCode is the code of a device authorization approval.
	UserCode string
	// Deny refuses instead of approving.
	Deny bool
	// Capabilities, when set, approves only those capabilities.
	Capabilities []string
}

// providerUnderTest is an Agent Auth provider under test: where clients
// find it, where its agentcap location must listen, and a way for tests
// to act as its approving user. The suite runs unchanged against every
// providerUnderTest.
type providerUnderTest interface {
	// Name labels the provider in test names.
	Name() string
	// URL is what clients discover and connect to.
	URL() string
	// Issuer is the issuer its discovery document names.
	Issuer() string
	// Location is the URL the provider lists as the location of
	// locationCapability; the suite serves an agentcap resource server
	// there.
	Location() string
	// Decide approves or denies as the provider's test user.
	Decide(ctx context.Context, d decision) error
}

// reference is the reference provider (better-auth with its agent-auth
// plugin) run by harness.mjs.
type reference struct {
	base   string
	info   referenceInfo
	client *http.Client
}

type referenceInfo struct {
	BaseURL  string `json:"base_url"`
	Issuer   string `json:"issuer"`
	Location string `json:"location"`
	UserID   string `json:"user_id"`
}

// newReference connects to the harness listening at harnessURL (for
// example http://127.0.0.1:4100) and reads its configuration.
func newReference(ctx context.Context, harnessURL string) (*reference, error) {
	u, err := url.Parse(harnessURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("interop: bad harness URL %q", harnessURL)
	}
	r := &reference{base: strings.TrimRight(harnessURL, "/"), client: &http.Client{Timeout: 30 * time.Second}}
	if err := r.call(ctx, http.MethodGet, "/test/info", nil, &r.info); err != nil {
		return nil, err
	}
	if r.info.BaseURL == "" || r.info.Location == "" {
		return nil, errors.New("interop: harness info without base URL or location")
	}
	return r, nil
}

// Name implements providerUnderTest.
func (r *reference) Name() string { return "reference" }

// URL implements providerUnderTest: the provider's base URL, under which it serves
// its discovery document.
func (r *reference) URL() string { return r.info.BaseURL }

// Issuer implements providerUnderTest.
func (r *reference) Issuer() string { return r.info.Issuer }

// Location implements providerUnderTest.
func (r *reference) Location() string { return r.info.Location }

// Root is the harness's origin, which serves the discovery document at
// /.well-known/agent-configuration as well.
func (r *reference) Root() string { return r.base }

// Decide implements providerUnderTest: the harness signs the test user in and
// calls the provider's approve-capability endpoint.
func (r *reference) Decide(ctx context.Context, d decision) error {
	body := map[string]any{"agent_id": d.AgentID, "action": "approve"}
	if d.Deny {
		body["action"] = "deny"
	}
	if d.UserCode != "" {
		body["user_code"] = d.UserCode
	}
	if d.Capabilities != nil {
		body["capabilities"] = d.Capabilities
	}
	return r.call(ctx, http.MethodPost, "/test/approve", body, nil)
}

func (r *reference) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("interop: harness %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("interop: harness %s: %d %s", path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}
