package httpx

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/internal/listcursor"
)

func invalidQuery(message string) envelope {
	return envelope{status: http.StatusBadRequest, code: core.WireInvalidRequest, message: message}
}

// parseListQuery reads query, cursor and limit. Parameters may appear once.
func (h *handlerBase) parseListQuery(raw string) (query, after string, limit int, env *envelope) {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		e := invalidQuery("the query string is malformed")
		return "", "", 0, &e
	}
	for _, k := range []string{"query", "cursor", "limit"} {
		if len(vals[k]) > 1 {
			e := invalidQuery("the " + k + " parameter is repeated")
			return "", "", 0, &e
		}
	}
	limit = h.defLimit
	if s, ok := vals["limit"]; ok {
		n, err := strconv.Atoi(s[0])
		if err != nil || n < 1 || n > h.maxLimit {
			e := invalidQuery("limit must be an integer from 1 to " + strconv.Itoa(h.maxLimit))
			return "", "", 0, &e
		}
		limit = n
	}
	if s, ok := vals["cursor"]; ok {
		var valid bool
		if after, valid = listcursor.Decode(s[0]); !valid {
			e := invalidQuery("the cursor is invalid")
			return "", "", 0, &e
		}
	}
	return strings.ToLower(vals.Get("query")), after, limit, nil
}

func (h *Handler[C, P]) list(ctx context.Context, req *Request, principal P, anonymous bool, buf *buffer) replyMeta {
	query, after, limit, env := h.parseListQuery(req.RawQuery)
	if env != nil {
		return h.fail(ctx, buf, *env)
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
		if !d.Visible(ctx, principal) {
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
		b = h.appendGrantStatus(ctx, b, principal, anonymous, d)
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

func (h *Handler[C, P]) describe(ctx context.Context, req *Request, principal P, anonymous bool, buf *buffer) replyMeta {
	vals, err := url.ParseQuery(req.RawQuery)
	if err != nil {
		return h.fail(ctx, buf, invalidQuery("the query string is malformed"))
	}
	names := vals["name"]
	if len(names) != 1 || names[0] == "" {
		return h.fail(ctx, buf, invalidQuery("give exactly one non-empty name parameter"))
	}
	d, ok := h.reg.Lookup(names[0])
	if !ok || !d.Visible(ctx, principal) {
		return h.fail(ctx, buf, envelopeOf(unknownCapability()))
	}
	b := append(buf.b[:0], h.defs[d].describe...)
	b = h.appendRequiresConfirmation(b, d)
	b = h.appendGrantStatus(ctx, b, principal, anonymous, d)
	buf.b = append(b, '}', '\n')
	return replyMeta{status: http.StatusOK, cache: h.listCache}
}

// appendGrantStatus adds grant_status for an authenticated caller when the
// configuration can tell it.
func (h *Handler[C, P]) appendGrantStatus(ctx context.Context, b []byte, principal P, anonymous bool, d *core.Definition) []byte {
	if anonymous || h.grantStatus == nil {
		return b
	}
	if s := h.grantStatus(ctx, principal, d); s != "" {
		b = append(b, `,"grant_status":`...)
		b = appendString(b, s)
	}
	return b
}

// appendRequiresConfirmation adds requires_confirmation: whether the
// executor makes calls of d carry a confirmation token (see
// core.ConfirmationNeeded for a lazy executor not built yet). It is
// rendered per answer, since a lazy executor's rule is known only once it
// is built.
func (h *Handler[C, P]) appendRequiresConfirmation(b []byte, d *core.Definition) []byte {
	return appendBool(b, "requires_confirmation", core.ConfirmationNeeded(h.src, d))
}
