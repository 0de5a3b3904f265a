// Package interop runs agentcap's Agent Auth client against real Agent
// Auth providers. The suite itself is in this package's tests, built only
// with the "interop" build tag (see README.md and run.sh); this file
// holds the providers under test.
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

// LocationCapability is the capability every provider under test lists
// with an agentcap resource server as its location. It takes
// {"message": string} and returns it.
const LocationCapability = "agentcap_echo"

// Decision is what the approving user decides about a pending
// registration or capability request.
type Decision struct {
	AgentID string
	// UserCode is the code of a device authorization approval.
	UserCode string
	// Deny refuses instead of approving.
	Deny bool
	// Capabilities, when set, approves only those capabilities.
	Capabilities []string
}

// Provider is an Agent Auth provider under test: where clients find it,
// where its agentcap location must listen, and a way for tests to act as
// its approving user. The suite runs unchanged against every Provider.
type Provider interface {
	// Name labels the provider in test names.
	Name() string
	// URL is what clients discover and connect to.
	URL() string
	// Issuer is the issuer its discovery document names.
	Issuer() string
	// Location is the URL the provider lists as the location of
	// LocationCapability; the suite serves an agentcap resource server
	// there.
	Location() string
	// Decide approves or denies as the provider's test user.
	Decide(ctx context.Context, d Decision) error
}

// Reference is the reference provider (better-auth with its agent-auth
// plugin) run by harness.mjs.
type Reference struct {
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

// NewReference connects to the harness listening at harnessURL (for
// example http://127.0.0.1:4100) and reads its configuration.
func NewReference(ctx context.Context, harnessURL string) (*Reference, error) {
	u, err := url.Parse(harnessURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("interop: bad harness URL %q", harnessURL)
	}
	r := &Reference{base: strings.TrimRight(harnessURL, "/"), client: &http.Client{Timeout: 30 * time.Second}}
	if err := r.call(ctx, http.MethodGet, "/test/info", nil, &r.info); err != nil {
		return nil, err
	}
	if r.info.BaseURL == "" || r.info.Location == "" {
		return nil, errors.New("interop: harness info without base URL or location")
	}
	return r, nil
}

// Name implements Provider.
func (r *Reference) Name() string { return "reference" }

// URL implements Provider: the provider's base URL, under which it serves
// its discovery document.
func (r *Reference) URL() string { return r.info.BaseURL }

// Issuer implements Provider.
func (r *Reference) Issuer() string { return r.info.Issuer }

// Location implements Provider.
func (r *Reference) Location() string { return r.info.Location }

// Root is the harness's origin, which serves the discovery document at
// /.well-known/agent-configuration as well.
func (r *Reference) Root() string { return r.base }

// Decide implements Provider: the harness signs the test user in and
// calls the provider's approve-capability endpoint.
func (r *Reference) Decide(ctx context.Context, d Decision) error {
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

func (r *Reference) call(ctx context.Context, method, path string, body, out any) error {
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
