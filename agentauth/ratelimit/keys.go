package ratelimit

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Dimensions of protocol §8.13, the first part of a key.
const (
	// DimAgent limits one agent, by the sub of its JWTs.
	DimAgent = "agent"
	// DimHost limits all agents of a host together.
	DimHost = "host"
	// DimUser limits all agents acting for a user.
	DimUser = "user"
	// DimCapability limits calls of a capability (add the agent or user
	// as a further part to limit them per caller).
	DimCapability = "capability"
	// DimIP limits unauthenticated endpoints per client address; build
	// its keys with IPKey.
	DimIP = "ip"
)

// Key builds a limiter key from a dimension and its parts, joined by ':'.
// Parts are escaped (':' as %3A, '%' as %25), so that ids holding colons
// cannot make two different keys equal: Key("capability", "a:b", "c") and
// Key("capability", "a", "b:c") differ.
//
//	Key(DimAgent, "agt_1")                 // "agent:agt_1"
//	Key(DimCapability, "transfer", "agt_1") // "capability:transfer:agt_1"
func Key(dimension string, parts ...string) string {
	var b strings.Builder
	n := len(dimension)
	for _, p := range parts {
		n += 1 + len(p)
	}
	b.Grow(n)
	b.WriteString(escapeKeyPart(dimension))
	for _, p := range parts {
		b.WriteByte(':')
		b.WriteString(escapeKeyPart(p))
	}
	return b.String()
}

func escapeKeyPart(s string) string {
	if !strings.ContainsAny(s, ":%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ':':
			b.WriteString("%3A")
		case '%':
			b.WriteString("%25")
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// IPKey returns the DimIP key for a client address: an IP, or host:port
// as in http.Request.RemoteAddr. IPv4-mapped IPv6 addresses count as their
// IPv4 address, and an IPv6 address counts as its /64 network, since one
// client commonly holds a whole /64 and could otherwise step around the
// limit by changing addresses. Zones are dropped.
func IPKey(addr string) (string, error) {
	a, err := parseAddr(addr)
	if err != nil {
		return "", err
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64) // 64 is always valid for an IPv6 address
		return Key(DimIP, p.String()), nil
	}
	return Key(DimIP, a.String()), nil
}

func parseAddr(addr string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(addr); err == nil {
		return a, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("ratelimit: %q is neither an IP address nor host:port", addr)
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("ratelimit: %q does not hold an IP address", addr)
	}
	return a, nil
}
