package httpx

import (
	"context"
	"net"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/core"
)

// withRequestInfo returns ctx carrying the request's id and client
// address for the executor's audit records (core.WithRequestInfo), and
// the id. The id is the caller's X-Request-Id when it is 1 to 128
// printable ASCII characters, else a new random one.
func (h *handlerBase) withRequestInfo(ctx context.Context, req *Request) (context.Context, string) {
	id := agentcap.RequestID(req.header(agentcap.HeaderRequestID))
	return core.WithRequestInfo(ctx, core.RequestInfo{ID: id, ClientIP: h.clientIP(req)}), id
}

// remoteIP is the default Config.ClientIP: the host part of the
// request's RemoteAddr.
func remoteIP(req *Request) string {
	if host, _, err := net.SplitHostPort(req.RemoteAddr); err == nil {
		return host
	}
	return req.RemoteAddr
}
