package provider

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/audit"
)

// PathActivityPage is where the "Activity" page is served, relative to
// the issuer; PathUserActivity is its JSON counterpart in the user API.
const (
	PathActivityPage = "/activity"
	PathUserActivity = "/user/activity"
)

// ActivityPageSize is how many records one page of the Activity page
// shows.
const ActivityPageSize = 25

// ErrNoActivity is returned by UserActivity when the provider has no
// audit store to read (Config.Activity).
var ErrNoActivity = errors.New("provider: no activity store")

// UserActivity returns a page of userID's audit records, newest first:
// q's filters (agent, capability, event, time range), cursor and limit
// apply, its UserID is replaced by userID.
func (p *Provider) UserActivity(ctx context.Context, userID string, q audit.Query) (audit.Page, error) {
	if userID == "" {
		return audit.Page{}, fmt.Errorf("%w: no user", ErrInvalidDecision)
	}
	if p.activity == nil {
		return audit.Page{}, ErrNoActivity
	}
	q.UserID = userID
	return p.activity.Query(ctx, q)
}

// activityQuery reads the filters, cursor and limit of an Activity
// request; a bad limit is a *agentcap.Error.
func activityQuery(v url.Values, defaultLimit int) (audit.Query, error) {
	q := audit.Query{AgentID: v.Get("agent_id"), Capability: v.Get("capability"), Event: v.Get("event"),
		Cursor: v.Get("cursor"), Limit: defaultLimit}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > audit.MaxLimit {
			return q, badRequest(fmt.Sprintf("limit must be a whole number from 1 to %d", audit.MaxLimit))
		}
		q.Limit = n
	}
	return q, nil
}

// activityError maps a query's refusal to a *agentcap.Error; other
// failures are returned as they are.
func activityError(err error) error {
	switch {
	case errors.Is(err, audit.ErrInvalidCursor):
		return badRequest("the cursor is not one this listing gave")
	case errors.Is(err, audit.ErrInvalidQuery):
		return badRequest(strings.TrimPrefix(err.Error(), "audit: "))
	}
	return err
}

// apiActivity serves GET /user/activity: {"records": [...], "next_cursor"}
// with the query parameters agent_id, capability, event, cursor and limit
// (default audit.DefaultLimit).
func (p *Provider) apiActivity(w http.ResponseWriter, r *http.Request, u *User) error {
	q, err := activityQuery(r.URL.Query(), audit.DefaultLimit)
	if err != nil {
		return err
	}
	page, err := p.UserActivity(r.Context(), u.ID, q)
	if err != nil {
		return activityError(err)
	}
	if page.Records == nil {
		page.Records = []audit.Record{}
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

//go:embed activity.html.tmpl
var activityTemplate string

var activityTmpl = newPageTemplate(activityTemplate)

// activityPageData is what the Activity page shows.
type activityPageData struct {
	Records []activityRow
	// Older continues the listing; First returns to the newest records
	// (set on pages after the first).
	Older, First string
}

// activityRow is one record as the page shows it.
type activityRow struct {
	audit.Record
	Label     string
	AgentName string
}

// eventLabels name the provider's and the executor's events for people;
// a capability's own event is shown as a call of the capability.
var eventLabels = map[string]string{
	audit.EventPreview:              "Preview",
	audit.EventConfirmationIssued:   "Confirmation issued",
	audit.EventConfirmationConsumed: "Confirmation used",
	audit.EventConfirmationDenied:   "Confirmation refused",
	audit.EventHostRegistered:       "Host registered",
	audit.EventAgentRegistered:      "Agent connected",
	audit.EventApprovalApproved:     "Approved",
	audit.EventApprovalDenied:       "Denied",
	audit.EventGrantsChanged:        "Capabilities changed",
	audit.EventAgentReactivated:     "Agent reactivated",
	audit.EventAgentRevoked:         "Agent revoked",
	audit.EventHostRevoked:          "Host revoked",
	audit.EventAgentKeyRotated:      "Agent key replaced",
	audit.EventHostKeyRotated:       "Host key replaced",
	audit.EventHostClaimed:          "Agent claimed",
}

// ActivityPage returns the "Activity" page: the signed-in user's audit
// records (Config.Activity) newest first, ActivityPageSize at a time
// with a link to older ones: what their agents did (calls, previews and
// confirmations, with their outcome) and what changed (connections,
// approvals, grants, revocations, key rotations), each with its agent,
// request id and client address. It only reads: it answers GET alone,
// never changes anything, and shares the other pages' layout, security
// headers (no framing, no caching, a CSP without scripts) and sign-in.
// It panics if Config.SignedInUser is nil or there is no activity
// store.
func (p *Provider) ActivityPage() http.Handler {
	if p.signedInUser == nil || p.activity == nil {
		panic("provider: ActivityPage needs Config.SignedInUser and Config.Activity")
	}
	return http.HandlerFunc(p.serveActivityPage)
}

func (p *Provider) serveActivityPage(w http.ResponseWriter, r *http.Request) {
	setPageHeaders(w.Header())
	d := p.newPageData("activity")
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		p.render(w, http.StatusMethodNotAllowed, activityTmpl, d, "Not allowed", "signin", "This page only shows what happened.")
		return
	}
	next := r.URL.Path
	if r.URL.RawQuery != "" {
		next += "?" + r.URL.RawQuery
	}
	u := p.pageUser(w, r, d, activityTmpl, false, next)
	if u == nil {
		return
	}
	ctx := r.Context()
	if err := p.limits.user(ctx, u.ID); err != nil {
		p.render(w, http.StatusTooManyRequests, activityTmpl, d, "Too many requests", "signin", "Wait a minute and try again.")
		return
	}
	q, err := activityQuery(r.URL.Query(), ActivityPageSize)
	var page audit.Page
	if err == nil {
		page, err = p.UserActivity(ctx, u.ID, q)
		err = activityError(err)
	}
	var refused *agentcap.Error
	switch {
	case err == nil:
	case errors.As(err, &refused):
		// A bad cursor, limit or time range: the user's own link went
		// stale or was edited.
		p.render(w, http.StatusBadRequest, activityTmpl, d, "Activity", "signin", "That page of your activity does not exist. Start again from the newest.")
		return
	default:
		p.logger.ErrorContext(ctx, "agentauth/provider: activity page", "error", err.Error())
		p.render(w, http.StatusInternalServerError, activityTmpl, d, "Something went wrong", "signin", "Your activity could not be loaded. Try again later.")
		return
	}
	names := map[string]string{}
	if agents, err := p.UserAgents(ctx, u.ID); err == nil {
		for _, a := range agents {
			names[a.ID] = a.Name
		}
	}
	data := &activityPageData{Records: make([]activityRow, len(page.Records))}
	for i, rec := range page.Records {
		label, ok := eventLabels[rec.Event]
		if !ok {
			label = "Call"
		}
		data.Records[i] = activityRow{Record: rec, Label: label, AgentName: names[rec.AgentID]}
	}
	keep := url.Values{}
	for _, k := range []string{"agent_id", "capability", "event"} {
		if v := r.URL.Query().Get(k); v != "" {
			keep.Set(k, v)
		}
	}
	if q.Cursor != "" {
		data.First = r.URL.Path
		if len(keep) > 0 {
			data.First += "?" + keep.Encode()
		}
	}
	if page.NextCursor != "" {
		keep.Set("cursor", page.NextCursor)
		data.Older = r.URL.Path + "?" + keep.Encode()
	}
	d.Page = data
	p.render(w, http.StatusOK, activityTmpl, d, "Activity", "activity", "")
}
