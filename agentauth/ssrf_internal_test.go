package agentauth

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// White-box tests of the SSRF guard. The dialer installed here connects
// only to loopback addresses; any other address it is asked for is
// recorded and refused, so a bug in the guard shows up as a recorded dial
// instead of traffic to that address.

type ssrfDials struct {
	mu    sync.Mutex
	addrs []string
}

func (d *ssrfDials) dial(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, address)
	d.mu.Unlock()
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, errors.New("test dialer: refusing to connect to " + address)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, address)
}

func (d *ssrfDials) nonLoopback() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, a := range d.addrs {
		if ap, err := netip.ParseAddrPort(a); err != nil || !ap.Addr().IsLoopback() {
			out = append(out, a)
		}
	}
	return out
}

func (d *ssrfDials) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.addrs)
}

// ssrfResolver answers DNS queries from a fixed table, over an in-memory
// connection: no packet leaves the process.
func ssrfResolver(table map[string][]string) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			return &fakeDNSConn{table: table}, nil
		},
	}
}

// fakeDNSConn speaks DNS over a stream (two-byte length prefix), which the
// Go resolver uses for connections that are not packet connections.
type fakeDNSConn struct {
	table map[string][]string
	mu    sync.Mutex
	in    []byte
	out   []byte
}

func (c *fakeDNSConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.in = append(c.in, b...)
	for len(c.in) >= 2 {
		n := int(binary.BigEndian.Uint16(c.in))
		if len(c.in) < 2+n {
			break
		}
		resp, err := c.answer(c.in[2 : 2+n])
		if err != nil {
			return 0, err
		}
		c.out = binary.BigEndian.AppendUint16(c.out, uint16(len(resp)))
		c.out = append(c.out, resp...)
		c.in = c.in[2+n:]
	}
	return len(b), nil
}

func (c *fakeDNSConn) answer(query []byte) ([]byte, error) {
	var m dnsmessage.Message
	if err := m.Unpack(query); err != nil {
		return nil, err
	}
	q := m.Questions[0]
	resp := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: m.ID, Response: true, Authoritative: true, RecursionDesired: m.RecursionDesired, RecursionAvailable: true},
		Questions: m.Questions,
	}
	name := strings.TrimSuffix(q.Name.String(), ".")
	addrs, ok := c.table[name]
	if !ok {
		resp.RCode = dnsmessage.RCodeNameError
	}
	for _, s := range addrs {
		a := netip.MustParseAddr(s)
		h := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			h.Type = dnsmessage.TypeA
			resp.Answers = append(resp.Answers, dnsmessage.Resource{Header: h, Body: &dnsmessage.AResource{A: a.As4()}})
		case q.Type == dnsmessage.TypeAAAA && a.Is6():
			h.Type = dnsmessage.TypeAAAA
			resp.Answers = append(resp.Answers, dnsmessage.Resource{Header: h, Body: &dnsmessage.AAAAResource{AAAA: a.As16()}})
		}
	}
	return resp.Pack()
}

func (c *fakeDNSConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.out) == 0 {
		return 0, io.EOF
	}
	n := copy(b, c.out)
	c.out = c.out[n:]
	return n, nil
}

func (c *fakeDNSConn) Close() error        { return nil }
func (c *fakeDNSConn) LocalAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
func (c *fakeDNSConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 53), Port: 53}
}
func (c *fakeDNSConn) SetDeadline(time.Time) error      { return nil }
func (c *fakeDNSConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fakeDNSConn) SetWriteDeadline(time.Time) error { return nil }

func TestCheckAddr(t *testing.T) {
	tests := []struct {
		addr          string
		allowLoopback bool
		ok            bool
	}{
		{"93.184.215.14", false, true},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", false, true},
		{"8.8.8.8", false, true},
		{"127.0.0.1", false, false},
		{"127.0.0.1", true, true},
		{"127.9.9.9", true, true},
		{"::1", false, false},
		{"::1", true, true},
		{"::ffff:127.0.0.1", true, true},
		{"::ffff:127.0.0.1", false, false},
		{"10.0.0.1", true, false},
		{"172.16.0.1", false, false},
		{"172.31.255.255", false, false},
		{"172.32.0.1", false, true},
		{"192.168.1.1", false, false},
		{"169.254.169.254", true, false},
		{"100.64.0.1", false, false},
		{"100.127.255.254", false, false},
		{"100.128.0.1", false, true},
		{"0.0.0.0", true, false},
		{"0.1.2.3", false, false},
		{"::", true, false},
		{"224.0.0.1", false, false},
		{"239.255.255.250", false, false},
		{"255.255.255.255", false, false},
		{"240.0.0.1", false, false},
		{"198.18.0.1", false, false},
		{"192.0.2.1", false, false},
		{"fc00::1", false, false},
		{"fd12:3456::1", false, false},
		{"fe80::1", true, false},
		{"fe80::1%eth0", true, false},
		{"fec0::1", false, false},
		{"ff02::1", false, false},
		{"ff05::2", false, false},
		{"::ffff:10.0.0.1", false, false},
		{"::ffff:169.254.169.254", false, false},
		{"::ffff:100.64.0.1", false, false},
		{"::ffff:8.8.8.8", false, true},
		{"::10.0.0.1", false, false},          // IPv4-compatible
		{"64:ff9b::10.0.0.1", false, false},   // NAT64 of a private address
		{"64:ff9b::127.0.0.1", true, false},   // NAT64 of loopback is not loopback
		{"64:ff9b::8.8.8.8", false, true},     // NAT64 of a public address
		{"2002:a00:1::1", false, false},       // 6to4 of 10.0.0.1
		{"2002:808:808::1", false, true},      // 6to4 of 8.8.8.8
		{"2001:db8::1", false, false},         // documentation
		{"2001:0:4136:e378::1", false, false}, // Teredo
	}
	for _, tt := range tests {
		a, err := netip.ParseAddr(tt.addr)
		if err != nil {
			t.Fatal(err)
		}
		err = checkAddr(a, tt.allowLoopback)
		if (err == nil) != tt.ok {
			t.Errorf("checkAddr(%s, allowLoopback=%v) = %v, want ok=%v", tt.addr, tt.allowLoopback, err, tt.ok)
		}
	}
}

// TestSafeClientRefusesBeforeDialing: a URL naming a forbidden address is
// refused before any connection is attempted.
func TestSafeClientRefusesBeforeDialing(t *testing.T) {
	for _, u := range []string{
		"https://10.0.0.1/jwks.json",
		"https://10.0.0.1:8443/jwks.json",
		"https://172.16.5.4/",
		"https://192.168.0.1/",
		"https://169.254.169.254/latest/meta-data/",
		"https://100.64.0.1/",
		"https://0.0.0.0/",
		"https://[::]/",
		"https://[fe80::1%25eth0]/",
		"https://[fd00::1]/",
		"https://[::ffff:10.0.0.1]/",
		"https://[::ffff:a00:1]/",
		"https://[64:ff9b::a9fe:a9fe]/",
		"https://224.0.0.251/",
		"http://10.0.0.1/",
		"http://8.8.8.8/",
		"https://127.0.0.1/",
		"https://[::1]/",
	} {
		t.Run(u, func(t *testing.T) {
			dials := &ssrfDials{}
			p := FetchPolicy{dial: dials.dial, Resolver: ssrfResolver(nil)}
			resp, err := NewSafeHTTPClient(p).Get(u)
			if err == nil {
				resp.Body.Close()
			}
			if !errors.Is(err, ErrFetchBlocked) {
				t.Fatalf("err = %v, want ErrFetchBlocked", err)
			}
			if n := dials.count(); n != 0 {
				t.Fatalf("%d dials attempted: %v", n, dials.addrs)
			}
		})
	}
}

// TestSafeClientResolvedAddresses: names are resolved by the client, every
// address is vetted, and the connection goes to the vetted address while
// TLS still checks the name.
func TestSafeClientResolvedAddresses(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "host "+r.Host)
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	table := map[string][]string{
		// httptest's certificate is valid for example.com.
		"example.com":          {"127.0.0.1"},
		"private.example.com":  {"10.0.0.1"},
		"mixed.example.com":    {"127.0.0.1", "10.1.2.3"},
		"mapped.example.com":   {"::ffff:192.168.1.10"},
		"metadata.example.com": {"169.254.169.254"},
		"linklocal6.example":   {"fe80::1"},
		"cgnat.example":        {"100.100.100.100"},
	}
	tests := []struct {
		name          string
		url           string
		allowLoopback bool
		want          string // body, or "" for ErrFetchBlocked
	}{
		{"name pinned to loopback", "https://example.com:" + port + "/", true, "host example.com:" + port},
		{"name resolving to loopback refused by default", "https://example.com:" + port + "/", false, ""},
		{"name resolving to private", "https://private.example.com:" + port + "/", true, ""},
		{"any address private", "https://mixed.example.com:" + port + "/", true, ""},
		{"IPv4-mapped private", "https://mapped.example.com:" + port + "/", true, ""},
		{"metadata address", "https://metadata.example.com/", false, ""},
		{"IPv6 link-local", "https://linklocal6.example/", false, ""},
		{"CGNAT", "https://cgnat.example/", false, ""},
		{"plain http to a name resolving off loopback", "http://private.example.com:" + port + "/", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dials := &ssrfDials{}
			p := FetchPolicy{AllowLoopback: tt.allowLoopback, RootCAs: roots, Resolver: ssrfResolver(table), dial: dials.dial}
			resp, err := NewSafeHTTPClient(p).Get(tt.url)
			if tt.want == "" {
				if err == nil {
					resp.Body.Close()
				}
				if !errors.Is(err, ErrFetchBlocked) {
					t.Fatalf("err = %v, want ErrFetchBlocked", err)
				}
				if n := dials.count(); n != 0 {
					t.Fatalf("dials attempted: %v", dials.addrs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if string(body) != tt.want {
				t.Fatalf("body %q, want %q", body, tt.want)
			}
			if got := dials.addrs; len(got) != 1 || got[0] != "127.0.0.1:"+port {
				t.Fatalf("dials %v, want exactly the pinned 127.0.0.1:%s", got, port)
			}
		})
	}
}

// TestSafeClientRedirectToForbidden: a loopback server redirecting to a
// forbidden address, by literal or by name, is not followed, and no
// connection to that address is attempted.
func TestSafeClientRedirectToForbidden(t *testing.T) {
	for _, target := range []string{
		"https://10.0.0.1/jwks.json",
		"https://private.example.com/jwks.json",
		"http://private.example.com/jwks.json",
		"https://[::ffff:169.254.169.254]/",
		"file:///etc/passwd",
	} {
		t.Run(target, func(t *testing.T) {
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target, http.StatusFound)
			}))
			defer srv.Close()
			dials := &ssrfDials{}
			p := FetchPolicy{
				AllowLoopback: true,
				RootCAs:       srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
				Resolver:      ssrfResolver(map[string][]string{"private.example.com": {"10.0.0.1"}}),
				dial:          dials.dial,
			}
			resp, err := NewSafeHTTPClient(p).Get(srv.URL + "/start")
			if err == nil {
				resp.Body.Close()
			}
			if !errors.Is(err, ErrFetchBlocked) {
				t.Fatalf("err = %v, want ErrFetchBlocked", err)
			}
			if bad := dials.nonLoopback(); len(bad) != 0 {
				t.Fatalf("dials to non-loopback addresses attempted: %v", bad)
			}
		})
	}
}
