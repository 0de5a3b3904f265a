package echox

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// MCPEndpoint is an MCP endpoint with its protected resource metadata,
// as mcpx.Server provides them.
type MCPEndpoint interface {
	http.Handler
	// MetadataPaths are the paths, at the origin's root, of the metadata.
	MetadataPaths() []string
	// Metadata serves the protected resource metadata document.
	Metadata() http.Handler
}

// MountMCP registers the MCP endpoint e at path on r, for every method
// (the Streamable HTTP transport uses POST, GET and DELETE and answers
// the rest itself), and its metadata at e.MetadataPaths(). The metadata
// lives at the origin's root, so r must be the Echo instance (or a group
// without a prefix) and path the endpoint's full path. The endpoint
// authenticates every request itself; Echo passes the request and its
// response writer, which streams, through unchanged.
func MountMCP(r Router, path string, e MCPEndpoint) {
	r.Any(path, echo.WrapHandler(e))
	if m := e.Metadata(); m != nil {
		for _, p := range e.MetadataPaths() {
			r.Any(p, echo.WrapHandler(m))
		}
	}
}
