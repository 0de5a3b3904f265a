package provider

import (
	_ "embed"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentcap/agentcap/agentauth/store"
)

// PathAgentsPage is where the "Your agents" page is served, relative to
// the issuer.
const PathAgentsPage = "/agents"

//go:embed agents.html.tmpl
var agentsTemplate string

var agentsTmpl = newPageTemplate(agentsTemplate)

// agentsPageData is what the "Your agents" page shows.
type agentsPageData struct {
	Approvals   []*Approval
	Agents      []UserAgent
	Hosts       []UserHost
	ApprovePath string
	// Passkeys are the user's; PasskeysOff says why none can be added
	// here, and APIBase and APIToken are the user API the page's script
	// adds one through.
	Passkeys          []*store.Passkey
	PasskeysOff       string
	APIBase, APIToken string
}

// agentsNotices are the outcomes a POST redirects back with.
var agentsNotices = map[string]string{
	"agent-revoked":   "The agent was revoked. It can no longer act for you.",
	"grant-revoked":   "The capability was revoked.",
	"host-revoked":    "The host and its agents were revoked.",
	"passkey-added":   "The passkey was added. It confirms, in person, what needs you.",
	"passkey-renamed": "The passkey was renamed.",
	"passkey-removed": "The passkey was removed. It no longer confirms anything.",
}

// AgentsPage returns the "Your agents" page: the signed-in user's
// requests waiting for approval (CIBA requests addressed to them, and
// their agents' capability requests) with a link to review each on the
// approval page; their agents with host, mode, last use and every grant
// with its constraints and lifetime; and the hosts linked to them. The
// user revokes an agent, one grant, or a host with its agents. It reads
// and acts through the same operations as the user API (UserAgents,
// RevokeGrant, ...), shares the approval page's layout, headers and CSRF
// protection, and needs no fresh sign-in: it only ever takes access
// away. It panics if Config.SignedInUser is nil.
func (p *Provider) AgentsPage() http.Handler {
	if p.signedInUser == nil {
		panic("provider: AgentsPage needs Config.SignedInUser")
	}
	return p.namedRequests(p.serveAgentsPage)
}

func (p *Provider) serveAgentsPage(w http.ResponseWriter, r *http.Request) {
	setPageHeaders(w.Header())
	d := p.newPageData("agents")
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		p.render(w, http.StatusMethodNotAllowed, agentsTmpl, d, "Not allowed", "signin", "Use the page's own buttons.")
		return
	}
	u := p.pageUser(w, r, d, agentsTmpl, false, r.URL.Path)
	if u == nil {
		return
	}
	if err := p.limits.user(r.Context(), u.ID); err != nil {
		p.render(w, http.StatusTooManyRequests, agentsTmpl, d, "Too many requests", "signin", "Wait a minute and try again.")
		return
	}
	if r.Method == http.MethodPost {
		p.agentsPost(w, r, d)
		return
	}
	p.agentsView(w, r, d, http.StatusOK, agentsNotices[r.URL.Query().Get("done")])
}

func (p *Provider) agentsView(w http.ResponseWriter, r *http.Request, d *pageData, status int, notice string) {
	ctx := r.Context()
	u := d.User
	data := &agentsPageData{ApprovePath: p.approvePath()}
	var err error
	if data.Approvals, err = p.UserApprovals(ctx, u.ID); err == nil {
		if data.Agents, err = p.UserAgents(ctx, u.ID); err == nil {
			if data.Hosts, err = p.UserHosts(ctx, u.ID); err == nil {
				data.Passkeys, err = p.store.ListPasskeys(ctx, u.ID)
			}
		}
	}
	data.PasskeysOff = p.passkeysOff
	data.APIBase, data.APIToken = p.basePath+"/user", p.csrfToken(u.ID, "user-api", "api")
	if err != nil {
		p.logger.ErrorContext(ctx, "agentauth/provider: agents page", "error", err.Error())
		p.render(w, http.StatusInternalServerError, agentsTmpl, d, "Something went wrong", "signin", "Your agents could not be loaded. Try again later.")
		return
	}
	if data.ApprovePath == "" {
		data.ApprovePath = p.verificationURI
	}
	d.Page = data
	d.Script = template.JS(pageScript)
	d.CSRF = p.csrfToken(u.ID, "agents", "manage")
	p.render(w, status, agentsTmpl, d, "Your agents", "agents", notice)
}

func (p *Provider) agentsPost(w http.ResponseWriter, r *http.Request, d *pageData) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		p.agentsView(w, r, d, http.StatusBadRequest, "The form could not be read.")
		return
	}
	if !sameOriginAs(r, p.origin) || !p.checkCSRFAge(r.PostForm.Get("csrf"), d.User.ID, "agents", "manage", userTokenLife) {
		p.agentsView(w, r, d, http.StatusForbidden, "The form has expired or did not come from this page. Try again.")
		return
	}
	ctx, f := r.Context(), r.PostForm
	var done string
	var err error
	switch f.Get("action") {
	case "revoke_agent":
		done, err = "agent-revoked", p.RevokeAgent(ctx, d.User.ID, f.Get("agent_id"))
	case "revoke_grant":
		done, err = "grant-revoked", p.RevokeGrant(ctx, d.User.ID, f.Get("agent_id"), f.Get("capability"))
	case "revoke_host":
		done = "host-revoked"
		_, err = p.RevokeHost(ctx, d.User.ID, f.Get("host_id"))
	case "rename_passkey":
		name := strings.TrimSpace(f.Get("name"))
		if name == "" || len(name) > maxPasskeyName {
			p.agentsView(w, r, d, http.StatusBadRequest, "A passkey's name takes 1 to 64 characters.")
			return
		}
		done, err = "passkey-renamed", p.store.RenamePasskey(ctx, d.User.ID, f.Get("passkey_id"), name)
	case "remove_passkey":
		done, err = "passkey-removed", p.store.DeletePasskey(ctx, d.User.ID, f.Get("passkey_id"))
	default:
		p.agentsView(w, r, d, http.StatusBadRequest, "Choose one of the page's buttons.")
		return
	}
	var se *AgentStateError
	switch {
	case errors.Is(err, ErrNoSuchAgent), errors.Is(err, ErrNoSuchHost), errors.Is(err, ErrNoSuchGrant), errors.As(err, &se),
		errors.Is(err, store.ErrNotFound):
		p.agentsView(w, r, d, http.StatusConflict, "That was already done, or is not yours.")
		return
	case err != nil:
		p.logger.ErrorContext(ctx, "agentauth/provider: agents page", "error", err.Error())
		p.agentsView(w, r, d, http.StatusInternalServerError, "That did not work. Try again later.")
		return
	}
	// Post, redirect, get: reloading the page does not repeat the action.
	http.Redirect(w, r, r.URL.Path+"?done="+url.QueryEscape(done), http.StatusSeeOther)
}
