package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"

	"github.com/agentcap/agentcap/core"
)

// HeaderRequestID names the request id header: read from a request to
// identify it in audit records, and sent back with the answer.
const HeaderRequestID = "X-Request-Id"

// maxRequestIDLength bounds a caller's request id; a longer one is
// replaced.
const maxRequestIDLength = 128

// withRequestInfo returns ctx carrying the request's id and client
// address for the executor's audit records (core.WithRequestInfo), and
// the id. The id is the caller's X-Request-Id when it is 1 to 128
// printable ASCII characters, else a new random one.
func (h *handlerBase) withRequestInfo(ctx context.Context, req *Request) (context.Context, string) {
	id := RequestID(req.header(HeaderRequestID))
	return core.WithRequestInfo(ctx, core.RequestInfo{ID: id, ClientIP: h.clientIP(req)}), id
}

// RequestID returns the id of a request that sent the X-Request-Id value
// sent: sent itself when it is 1 to 128 printable ASCII characters, else
// 32 random hex digits.
func RequestID(sent string) string {
	if validRequestID(sent) {
		return sent
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLength {
		return false
	}
	for i := range len(id) {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// remoteIP is the default Config.ClientIP: the host part of the
// request's RemoteAddr.
func remoteIP(req *Request) string {
	if host, _, err := net.SplitHostPort(req.RemoteAddr); err == nil {
		return host
	}
	return req.RemoteAddr
}
