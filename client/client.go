package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentcap/agentcap"
)

// Defaults of Config.
const (
	// defaultRequestTimeout bounds one request and its answer, except an
	// event stream, whose events may keep coming for as long as the
	// caller's context allows.
	defaultRequestTimeout = 30 * time.Second
	// defaultMaxRetries is how many times a 429 or 503
	// temporarily_unavailable answer, or a failed connection of a request
	// with an Idempotency-Key, is retried.
	defaultMaxRetries = 2
	// defaultMaxRetryWait is the longest Retry-After the client waits
	// for; a longer one is returned to the caller as the error.
	defaultMaxRetryWait = 30 * time.Second
	// defaultMaxPollInterval caps the backoff between polls of an
	// approval or of an async result.
	defaultMaxPollInterval = 30 * time.Second
	// maxResponseBytes bounds a JSON answer read into memory.
	maxResponseBytes = 8 << 20
)

// Config configures a Client. Every field has a usable zero value except
// Keys, whose zero value is a FileKeyStore under the user's configuration
// directory (agentcap/keys under os.UserConfigDir).
type Config struct {
	// HTTPClient sends the requests. Nil means a client that follows no
	// redirects (a redirect could carry a bearer token to another
	// server) with dial, TLS and response-header timeouts. A client
	// given here should not follow redirects either.
	HTTPClient *http.Client

	// AllowInsecureLoopback permits plain http:// to loopback hosts
	// (localhost, 127.0.0.0/8, ::1), for development and tests. Every
	// other URL must use https.
	AllowInsecureLoopback bool

	// Keys stores host and agent keys.
	Keys KeyStore

	// HostName is sent at registration as the host's display name. Empty
	// means the machine's host name.
	HostName string

	// RequestTimeout bounds each request that is not an event stream.
	// Zero means 30 s.
	RequestTimeout time.Duration

	// MaxRetries bounds the retries of a 429 or 503
	// temporarily_unavailable answer, and of a request with an
	// Idempotency-Key whose connection failed; zero means 2,
	// a negative value disables retrying.
	MaxRetries int
	// MaxRetryWait is the longest wait for one retry; zero means 30 s.
	MaxRetryWait time.Duration
	// MaxPollInterval caps the wait between polls; zero means 30 s.
	MaxPollInterval time.Duration

	// UserAgent is sent with every request; empty means "agentcap-client".
	UserAgent string

	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand is the source of keys and token ids; nil means crypto/rand.
	Rand io.Reader
	// Sleep waits between polls and retries. Nil means a timer that
	// returns early with the context's error. Tests replace it to observe
	// the waits without spending them.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Client talks to Agent Auth providers. It is safe for concurrent use.
type Client struct {
	cfg  Config
	http *http.Client

	discoveryMu sync.Mutex
	discovery   map[string]*discoveryEntry
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.Keys == nil {
		dir, err := defaultKeyDir()
		if err != nil {
			return nil, err
		}
		cfg.Keys = FileKeyStore{Dir: dir}
	}
	if cfg.HostName == "" {
		if h, err := os.Hostname(); err == nil {
			cfg.HostName = h
		}
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = defaultRequestTimeout
	}
	if cfg.RequestTimeout < 0 {
		return nil, errors.New("client: negative RequestTimeout")
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = defaultMaxRetries
	}
	if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.MaxRetryWait <= 0 {
		cfg.MaxRetryWait = defaultMaxRetryWait
	}
	if cfg.MaxPollInterval <= 0 {
		cfg.MaxPollInterval = defaultMaxPollInterval
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "agentcap-client"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	return &Client{cfg: cfg, http: hc, discovery: map[string]*discoveryEntry{}}, nil
}

func defaultHTTPClient() *http.Client {
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: defaultRequestTimeout,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   8,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ErrInsecureURL is wrapped by the errors of URLs the client refuses: not
// https, or http to a loopback host without Config.AllowInsecureLoopback.
var ErrInsecureURL = errors.New("client: insecure URL")

// checkURL parses an absolute URL the client may send requests to.
func (c *Client) checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("client: bad URL %q: %w", raw, err)
	}
	if !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("client: URL %q is not absolute", raw)
	}
	if u.User != nil {
		return nil, fmt.Errorf("client: URL %q carries credentials", raw)
	}
	switch u.Scheme {
	case "https":
		return u, nil
	case "http":
		if !isLoopbackHost(u.Hostname()) {
			return nil, fmt.Errorf("%w: %q must use https", ErrInsecureURL, raw)
		}
		if !c.cfg.AllowInsecureLoopback {
			return nil, fmt.Errorf("%w: %q uses http; loopback http needs AllowInsecureLoopback", ErrInsecureURL, raw)
		}
		return u, nil
	default:
		return nil, fmt.Errorf("%w: %q must use https", ErrInsecureURL, raw)
	}
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// origin returns scheme://host[:port] of u, lower-cased, with the default
// port left out, so that equal origins compare equal.
func origin(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return strings.ToLower(u.Scheme) + "://" + host
}

// send sends the request build returns, building a fresh one for every
// attempt (a retried call needs a fresh token), and retries within the
// configured limits the answers and failures after which the call is
// known not to have run twice:
//
//   - 429, and 503 temporarily_unavailable (a store the server needs did
//     not answer, and the call did not run), after the server's
//     Retry-After or a doubling backoff;
//   - a failed connection of a request carrying an Idempotency-Key,
//     after a doubling backoff: the location runs the call once for the
//     key and answers the repeat from what it kept.
//
// net/http never resends such a request by itself (see noReplay), since
// it would resend the same single-use token. The caller owns the body of
// the answer.
func (c *Client) send(ctx context.Context, build func() (*http.Request, error)) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		req, err := build()
		if err != nil {
			return nil, err
		}
		req = req.WithContext(ctx)
		req.Header.Set("User-Agent", c.cfg.UserAgent)
		keyed := req.Header.Get("Idempotency-Key") != ""
		if keyed {
			noReplay(req)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			err = fmt.Errorf("client: %s %s: %w", req.Method, req.URL.Redacted(), err)
			if !keyed || attempt >= c.cfg.MaxRetries {
				return nil, err
			}
			if err := c.cfg.Sleep(ctx, retryBackoff(attempt)); err != nil {
				return nil, err
			}
			continue
		}
		if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
			return resp, nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		e := parseError(resp.StatusCode, resp.Header, body, c.cfg.Now())
		if e.Status == http.StatusServiceUnavailable && e.Code != agentcap.CodeTemporarilyUnavailable {
			// Another 503 (a job whose instance was lost, an audit
			// trail that is down) is the caller's to judge, whole.
			resp.Body = readCloser{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
			return resp, nil
		}
		resp.Body.Close()
		if attempt >= c.cfg.MaxRetries {
			return nil, e
		}
		wait := e.RetryAfter
		if wait == 0 {
			wait = retryBackoff(attempt)
		}
		if wait > c.cfg.MaxRetryWait {
			return nil, e
		}
		if err := c.cfg.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}

// retryBackoff is the wait before retry attempt+1 when the server named
// none: 1 s, 2 s, 4 s, ...
func retryBackoff(attempt int) time.Duration { return time.Second << min(attempt, 10) }

// noReplay keeps net/http from resending req on a new connection after
// the first one failed. It would resend a request carrying an
// Idempotency-Key whose body it can rewind, with the same single-use
// agent JWT: the location would refuse the repeat as a replay although
// the first attempt may have run, and the caller would learn nothing of
// it. send retries such a request itself, with a fresh token.
func noReplay(req *http.Request) { req.GetBody = nil }

// call is one JSON request: method, URL, an optional bearer token made
// afresh for every attempt, and an optional JSON body.
type call struct {
	method string
	url    string
	token  func() (string, error)
	body   any
	header http.Header
}

func (c *Client) newRequest(ctx context.Context, cl call) func() (*http.Request, error) {
	var payload []byte
	var payloadErr error
	if cl.body != nil {
		payload, payloadErr = json.Marshal(cl.body)
	}
	return func() (*http.Request, error) {
		if payloadErr != nil {
			return nil, fmt.Errorf("client: encode request: %w", payloadErr)
		}
		var body io.Reader
		if payload != nil {
			body = bytes.NewReader(payload)
		}
		req, err := http.NewRequestWithContext(ctx, cl.method, cl.url, body)
		if err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		for k, vs := range cl.header {
			req.Header[k] = vs
		}
		req.Header.Set("Accept", "application/json")
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if cl.token != nil {
			tok, err := cl.token()
			if err != nil {
				return nil, err
			}
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		return req, nil
	}
}

// do sends a JSON call and decodes a 2xx answer into out (when non-nil).
// Other answers become *Error. It returns the status and headers.
func (c *Client) do(ctx context.Context, cl call, out any) (int, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	resp, err := c.send(ctx, c.newRequest(ctx, cl))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, resp.Header, c.readJSON(resp, out)
}

// readJSON reads a JSON answer into out, or turns a non-2xx answer into
// an *Error.
func (c *Client) readJSON(resp *http.Response, out any) error {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return parseError(resp.StatusCode, resp.Header, body, c.cfg.Now())
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("client: read answer: %w", err)
	}
	if len(body) > maxResponseBytes {
		return fmt.Errorf("client: answer larger than %d bytes", maxResponseBytes)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("client: malformed answer from %s: %w", resp.Request.URL.Redacted(), err)
	}
	return nil
}
