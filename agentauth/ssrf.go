package agentauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"
)

// Defaults and ceilings of a FetchPolicy, from the protocol's URL fetch
// protections.
const (
	defaultFetchTimeout      = 5 * time.Second
	defaultFetchMaxBytes     = 1 << 20
	defaultFetchMaxKeys      = 20
	defaultFetchMaxRedirects = 3
	// defaultFetchCacheBytes is FetchPolicy.CacheBytes when it is zero.
	defaultFetchCacheBytes = 8 << 20
)

// maxFetchURLBytes bounds a JWKS URL. Real ones are far shorter; the bound
// keeps what a record or a cache entry holds for its URL small.
const maxFetchURLBytes = 2048

// ErrFetchBlocked is wrapped by every error that refuses a URL, a redirect
// or a resolved address under a FetchPolicy. No connection is attempted to
// a refused address.
var ErrFetchBlocked = errors.New("agentauth: fetch blocked by policy")

// ErrResponseTooLarge is returned when a fetched body exceeds
// FetchPolicy.MaxBytes. The body is never silently truncated.
var ErrResponseTooLarge = errors.New("agentauth: response body too large")

// FetchPolicy bounds outbound fetches of key material named by a directory
// (JWKS URLs), and the memory their results may hold. The zero value is
// the production policy: https only, public addresses only, 5 s timeouts,
// 1 MB bodies, 20 keys, 3 redirects, 8 MiB of cached key sets.
type FetchPolicy struct {
	// AllowLoopback permits loopback addresses, and plain http:// to hosts
	// that resolve only to loopback addresses. For development and tests
	// only.
	AllowLoopback bool
	// Timeout bounds dialing, the TLS handshake, waiting for response
	// headers and the whole request. Zero means 5 s.
	Timeout time.Duration
	// MaxBytes bounds a response body (after decompression). Zero means
	// 1 MiB.
	MaxBytes int64
	// MaxKeys bounds the number of keys in a fetched JWK Set. Zero means
	// 20.
	MaxKeys int
	// MaxRedirects bounds the redirects followed. Zero means
	// 3; a negative value follows none; values above 3 are lowered to 3.
	MaxRedirects int
	// CacheBytes bounds the memory a Verifier (or a provider) keeps for
	// the key sets it fetched, all URLs together: past it, the key sets
	// used least recently are dropped, and fetched again when next
	// needed. A key set is kept in a compact form, its Ed25519 keys only,
	// a few kilobytes at most whatever the size of the body it came in.
	// Zero means 8 MiB.
	CacheBytes int64
	// Resolver resolves host names. Nil means net.DefaultResolver.
	Resolver *net.Resolver
	// RootCAs are the trusted roots for https. Nil means the system roots.
	// Tests set it to the roots of an httptest TLS server.
	RootCAs *x509.CertPool

	// dial opens a connection to an already vetted ip:port. Nil means a
	// net.Dialer with Timeout. Tests replace it to observe dials.
	dial func(ctx context.Context, network, address string) (net.Conn, error)
}

func (p FetchPolicy) withDefaults() FetchPolicy {
	if p.Timeout <= 0 {
		p.Timeout = defaultFetchTimeout
	}
	if p.MaxBytes <= 0 {
		p.MaxBytes = defaultFetchMaxBytes
	}
	if p.MaxKeys <= 0 {
		p.MaxKeys = defaultFetchMaxKeys
	}
	if p.CacheBytes <= 0 {
		p.CacheBytes = defaultFetchCacheBytes
	}
	switch {
	case p.MaxRedirects == 0 || p.MaxRedirects > defaultFetchMaxRedirects:
		p.MaxRedirects = defaultFetchMaxRedirects
	case p.MaxRedirects < 0:
		p.MaxRedirects = 0
	}
	if p.Resolver == nil {
		p.Resolver = net.DefaultResolver
	}
	if p.dial == nil {
		d := &net.Dialer{Timeout: p.Timeout}
		p.dial = d.DialContext
	}
	return p
}

// NewSafeHTTPClient returns an HTTP client that refuses server-side request
// forgery targets. Every request and every redirect must use https (or
// http to loopback under AllowLoopback); the client resolves each host
// itself, refuses the request if any resolved address is private, loopback,
// link-local, unspecified, multicast, shared (CGNAT), reserved, or an
// IPv4-mapped, IPv4-compatible or NAT64 form of one, and then connects to
// the vetted address so that a second resolution cannot change it. TLS
// still verifies the certificate for the host name. Proxies from the
// environment are ignored, since a proxy would connect on the client's
// behalf to an unvetted address. Bodies larger than MaxBytes fail with
// ErrResponseTooLarge.
func NewSafeHTTPClient(p FetchPolicy) *http.Client {
	p = p.withDefaults()
	rt := newSafeTransport(p)
	return &http.Client{
		Transport: rt,
		Timeout:   p.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > p.MaxRedirects {
				return fmt.Errorf("%w: more than %d redirects", ErrFetchBlocked, p.MaxRedirects)
			}
			return p.checkURL(req.URL)
		},
	}
}

// safeTransport checks each request URL, then hands https requests to a
// transport whose dialer admits public addresses (and loopback under
// AllowLoopback), and http requests to one whose dialer admits loopback
// only. Two transports keep the scheme decision out of the dialer, which
// does not see the scheme.
type safeTransport struct {
	policy FetchPolicy
	tls    *http.Transport
	plain  *http.Transport // nil unless AllowLoopback
}

func newSafeTransport(p FetchPolicy) *safeTransport {
	t := &safeTransport{policy: p, tls: newGuardedTransport(p, false)}
	if p.AllowLoopback {
		t.plain = newGuardedTransport(p, true)
	}
	return t
}

func newGuardedTransport(p FetchPolicy, loopbackOnly bool) *http.Transport {
	g := &dialGuard{policy: p, loopbackOnly: loopbackOnly}
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            g.dialContext,
		TLSClientConfig:        &tls.Config{RootCAs: p.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    p.Timeout,
		ResponseHeaderTimeout:  p.Timeout,
		ExpectContinueTimeout:  time.Second,
		MaxIdleConns:           16,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
	}
}

// RoundTrip implements http.RoundTripper.
func (t *safeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.policy.checkURL(req.URL); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	base := t.tls
	if req.URL.Scheme == "http" {
		base = t.plain
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > t.policy.MaxBytes {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s declares %d bytes, limit %d", ErrResponseTooLarge, redactURL(req.URL), resp.ContentLength, t.policy.MaxBytes)
	}
	resp.Body = &limitedBody{rc: resp.Body, max: t.policy.MaxBytes}
	return resp, nil
}

// checkRawURL is checkURL for a URL not parsed yet, such as one a
// registration names, which is also refused beyond maxFetchURLBytes.
func (p FetchPolicy) checkRawURL(raw string) error {
	if len(raw) > maxFetchURLBytes {
		return fmt.Errorf("%w: URL of %d bytes, limit %d", ErrFetchBlocked, len(raw), maxFetchURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrFetchBlocked, err)
	}
	return p.checkURL(u)
}

// checkURL applies the scheme rules and, for IP literals, the address
// rules, before anything is resolved or dialed.
func (p FetchPolicy) checkURL(u *url.URL) error {
	switch {
	case u == nil:
		return fmt.Errorf("%w: no URL", ErrFetchBlocked)
	case u.User != nil:
		return fmt.Errorf("%w: URL carries credentials", ErrFetchBlocked)
	case u.Hostname() == "":
		return fmt.Errorf("%w: URL has no host", ErrFetchBlocked)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !p.AllowLoopback {
			return fmt.Errorf("%w: %s: scheme http is not allowed, use https", ErrFetchBlocked, redactURL(u))
		}
	default:
		return fmt.Errorf("%w: %s: scheme %q is not allowed", ErrFetchBlocked, redactURL(u), u.Scheme)
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
		if err := checkAddr(ip, p.AllowLoopback); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrFetchBlocked, redactURL(u), err)
		}
		if u.Scheme == "http" && !ip.Unmap().IsLoopback() {
			return fmt.Errorf("%w: %s: http is only allowed to loopback addresses", ErrFetchBlocked, redactURL(u))
		}
	}
	return nil
}

func redactURL(u *url.URL) string {
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

// dialGuard resolves and vets the destination of every connection the
// transport opens, including those for redirects.
type dialGuard struct {
	policy       FetchPolicy
	loopbackOnly bool
}

func (g *dialGuard) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("%w: address %q: %v", ErrFetchBlocked, address, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("%w: port %q", ErrFetchBlocked, portStr)
	}
	addrs, err := g.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if err := checkAddr(a, g.policy.AllowLoopback); err != nil {
			return nil, fmt.Errorf("%w: %s resolves to %v: %v", ErrFetchBlocked, host, a, err)
		}
		if g.loopbackOnly && !a.Unmap().IsLoopback() {
			return nil, fmt.Errorf("%w: %s resolves to %v: http is only allowed to loopback addresses", ErrFetchBlocked, host, a)
		}
	}
	var firstErr error
	for _, a := range addrs {
		conn, err := g.policy.dial(ctx, network, netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

func (g *dialGuard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip.WithZone("")}, nil
	}
	addrs, err := g.policy.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("agentauth: resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("agentauth: resolve %s: no addresses", host)
	}
	for i, a := range addrs {
		addrs[i] = a.WithZone("")
	}
	return addrs, nil
}

// blockedPrefixes are the ranges no fetch may reach, beyond what the netip
// predicates in checkAddr cover: private, shared, reserved and
// documentation ranges, and IPv6 forms that tunnel to arbitrary IPv4.
var blockedPrefixes = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network"
		"10.0.0.0/8",      // RFC 1918
		"100.64.0.0/10",   // shared address space (CGNAT)
		"169.254.0.0/16",  // link-local, cloud metadata
		"172.16.0.0/12",   // RFC 1918
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"192.88.99.0/24",  // 6to4 relay anycast
		"192.168.0.0/16",  // RFC 1918
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, broadcast
		"::/96",           // IPv4-compatible (deprecated), unspecified
		"100::/64",        // discard
		"2001::/32",       // Teredo
		"2001:db8::/32",   // documentation
		"fc00::/7",        // unique local
		"fe80::/10",       // link-local
		"fec0::/10",       // site-local (deprecated)
		"ff00::/8",        // multicast
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// checkAddr reports why a may not be fetched from, or nil. Loopback is
// admitted only under allowLoopback. IPv4-mapped addresses are judged as
// the IPv4 address they carry; NAT64 and 6to4 addresses as the IPv4
// address they embed.
func checkAddr(a netip.Addr, allowLoopback bool) error {
	a = a.WithZone("").Unmap()
	if !a.IsValid() {
		return errors.New("invalid address")
	}
	if a.IsLoopback() {
		if allowLoopback {
			return nil
		}
		return errors.New("loopback address")
	}
	switch {
	case a.IsUnspecified():
		return errors.New("unspecified address")
	case a.IsPrivate():
		return errors.New("private address")
	case a.IsLinkLocalUnicast():
		return errors.New("link-local address")
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return errors.New("multicast address")
	}
	for _, p := range blockedPrefixes {
		if p.Contains(a) {
			return fmt.Errorf("address in blocked range %v", p)
		}
	}
	if a.Is6() {
		b := a.As16()
		var embedded netip.Addr
		switch {
		case nat64Prefix.Contains(a):
			embedded = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		case sixToFour.Contains(a):
			embedded = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
		}
		if embedded.IsValid() {
			if err := checkAddr(embedded, false); err != nil {
				return fmt.Errorf("embeds %v: %w", embedded, err)
			}
		}
	}
	return nil
}

// limitedBody fails, rather than truncates, once more than max bytes have
// been read.
type limitedBody struct {
	rc  io.ReadCloser
	max int64
	n   int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.n > b.max {
		return 0, fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, b.max)
	}
	if room := b.max - b.n + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	if b.n > b.max {
		return n - int(b.n-b.max), fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, b.max)
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
