package httpx

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/internal/listcursor"
)

func invalidQuery(message string) *agentcap.Error {
	return agentcap.NewError(agentcap.CodeInvalidRequest, message)
}

// parseListQuery reads query, cursor and limit. Parameters may appear once.
func (h *handlerBase) parseListQuery(raw string) (query, after string, limit int, qerr *agentcap.Error) {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return "", "", 0, invalidQuery("the query string is malformed")
	}
	for _, k := range []string{"query", "cursor", "limit"} {
		if len(vals[k]) > 1 {
			return "", "", 0, invalidQuery("the " + k + " parameter is repeated")
		}
	}
	limit = h.defLimit
	if s, ok := vals["limit"]; ok {
		n, err := strconv.Atoi(s[0])
		if err != nil || n < 1 || n > h.maxLimit {
			return "", "", 0, invalidQuery("limit must be an integer from 1 to " + strconv.Itoa(h.maxLimit))
		}
		limit = n
	}
	if s, ok := vals["cursor"]; ok {
		var valid bool
		if after, valid = listcursor.Decode(s[0]); !valid {
			return "", "", 0, invalidQuery("the cursor is invalid")
		}
	}
	return strings.ToLower(vals.Get("query")), after, limit, nil
}

func (h *Handler) list(ctx context.Context, req *Request, id *auth.Identity, buf *buffer) replyMeta {
	query, after, limit, qerr := h.parseListQuery(req.RawQuery)
	if qerr != nil {
		return h.fail(ctx, buf, qerr)
	}
	b := append(buf.b[:0], `{"capabilities":[`...)
	n := 0
	var last string
	hasMore := false
	// Listing reads the registry alone: a lazy executor is not built for
	// it.
	for _, d := range h.ordered {
		if after != "" && d.Name() <= after {
			continue
		}
		if !d.Visible(ctx, id, false) {
			continue
		}
		info := h.defs[d]
		if query != "" && !strings.Contains(info.lowerName, query) && !strings.Contains(info.lowerDesc, query) {
			continue
		}
		if n == limit {
			hasMore = true
			break
		}
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, info.listEntry...)
		b = h.appendRequiresConfirmation(b, d)
		b = appendGrantStatus(b, id, d)
		b = append(b, '}')
		last = d.Name()
		n++
	}
	b = append(b, `],"has_more":`...)
	if hasMore {
		b = append(b, `true,"next_cursor":`...)
		b = appendString(b, listcursor.Encode(last))
	} else {
		b = append(b, `false,"next_cursor":null`...)
	}
	buf.b = append(b, '}', '\n')
	return replyMeta{status: http.StatusOK, cache: h.listCache}
}

func (h *Handler) describe(ctx context.Context, req *Request, id *auth.Identity, buf *buffer) replyMeta {
	vals, err := url.ParseQuery(req.RawQuery)
	if err != nil {
		return h.fail(ctx, buf, invalidQuery("the query string is malformed"))
	}
	names := vals["name"]
	if len(names) != 1 || names[0] == "" {
		return h.fail(ctx, buf, invalidQuery("give exactly one non-empty name parameter"))
	}
	d, ok := h.reg.Describe(ctx, id, names[0])
	if !ok {
		return h.fail(ctx, buf, core.ErrUnknownCapability)
	}
	b := append(buf.b[:0], h.defs[d].describe...)
	b = h.appendRequiresConfirmation(b, d)
	b = appendGrantStatus(b, id, d)
	buf.b = append(b, '}', '\n')
	return replyMeta{status: http.StatusOK, cache: h.listCache}
}

// appendGrantStatus adds grant_status for a caller whose Authorizer can
// tell it.
func appendGrantStatus(b []byte, id *auth.Identity, d *core.Definition) []byte {
	if id == nil || id.Authorizer == nil {
		return b
	}
	if s := id.Authorizer.GrantStatus(d.Name()); s != "" {
		b = append(b, `,"grant_status":`...)
		b = appendString(b, s)
	}
	return b
}

// appendRequiresConfirmation adds requires_confirmation: whether the
// executor makes calls of d carry a confirmation token (see
// core.Source.NeedsConfirmation for a lazy executor not built yet). It is
// rendered per answer, since a lazy executor's rule is known only once it
// is built.
func (h *Handler) appendRequiresConfirmation(b []byte, d *core.Definition) []byte {
	return appendBool(b, "requires_confirmation", h.src.NeedsConfirmation(d))
}
