package provider

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentcap/agentcap/core"
)

// The provider's pages share one layout (layout.html.tmpl): a header
// with the provider's name, the navigation and the signed-in user, the
// title and notice, then the page's own "content" template. They share
// the security headers (setPageHeaders), the sign-in check
// (pageUser) and the CSRF tokens (csrfToken, checkCSRF). Adding a page
// takes a template that defines "content" (parsed with newPageTemplate),
// a handler mounted in Handler, and one entry in sitePages.

//go:embed layout.html.tmpl
var layoutTemplate string

const pageStyle = `body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d2733}
main{max-width:46rem;margin:2rem auto;background:#fff;padding:1.5rem 2rem;border-radius:8px;box-shadow:0 1px 3px #0002}
header{display:flex;flex-wrap:wrap;gap:.5rem 1rem;justify-content:space-between;align-items:baseline;color:#555;font-size:.9rem}
nav a{margin-right:1rem;color:#2456a6;text-decoration:none}nav a[aria-current=page]{font-weight:600;color:#1d2733}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:1.6rem}dl{display:grid;grid-template-columns:9rem 1fr;gap:.3rem 1rem}dt{color:#555}dd{margin:0;overflow-wrap:anywhere}
fieldset{border:1px solid #ccd;border-radius:6px;margin:1rem 0}.cap{border-top:1px solid #eee;padding:.6rem 0}.cap:first-of-type{border:0}
.cap p{margin:.2rem 0 .2rem 1.6rem}.constraints{margin-left:1.6rem;font-size:.9rem;color:#333}.constraints ul{margin:.2rem 0}
.strength{font-size:.8rem;border-radius:4px;padding:0 .4rem;background:#e8eef8}.strength-webauthn{background:#fde7c8}.risk{font-size:.8rem;color:#a40}
.warn{color:#a40;font-size:.85rem}.hint{color:#666;font-size:.85rem}.notice{background:#fff4d6;padding:.5rem .8rem;border-radius:4px}
.actions{display:flex;gap:1rem;margin-top:1rem}button{font:inherit;padding:.5rem 1.2rem;border-radius:5px;border:1px solid #2456a6;background:#2456a6;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#2456a6}button.small{padding:.1rem .6rem;font-size:.85rem}input[type=text],input:not([type]){font:inherit;padding:.4rem;width:12rem;letter-spacing:.1em}
.card{border:1px solid #dde;border-radius:6px;padding:.6rem 1rem;margin:.8rem 0}.card h3{font-size:1rem;margin:.2rem 0}
table{border-collapse:collapse;width:100%;font-size:.9rem}td,th{text-align:left;padding:.3rem .4rem;border-top:1px solid #eee;vertical-align:top}
.status{font-size:.8rem;border-radius:4px;padding:0 .4rem;background:#eee}.status-active{background:#dcf3e0}.status-revoked,.status-denied,.status-rejected,.status-claimed{background:#f8dddd}
form.inline{display:inline}[hidden]{display:none!important}.dev{border:1px dashed #a40;border-radius:6px;padding:.2rem 1rem;margin-top:1.5rem}`

// pageScript is the pages' one script: the passkey ceremonies.
//
//go:embed passkey.js
var pageScript string

// pageCSP allows a page nothing but its own inline style and script,
// requests to its own origin (the script's calls of the user API) and
// forms posting to itself; frame-ancestors 'none' keeps it out of
// frames, so no other site can overlay it to trick a click.
var pageCSP = "default-src 'none'; style-src " + cspHash(pageStyle) + "; script-src " + cspHash(pageScript) +
	"; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// cspHash is the CSP source that allows one inline element's text.
func cspHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// setPageHeaders sets the headers every page sends: the CSP above, no
// framing, no caching, no sniffing, and no Referer to other sites (the
// approval page's URL can hold a user code).
func setPageHeaders(h http.Header) {
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
}

// pageFuncs are the helpers every page template may call.
var pageFuncs = template.FuncMap{
	"strength": func(a core.Approval) string {
		switch a {
		case core.ApprovalWebAuthn:
			return "needs in-person confirmation"
		case core.ApprovalSession:
			return "needs a signed-in user"
		default:
			return "standard"
		}
	},
	"risky":      func(r core.Risk) bool { return r == core.RiskHigh || r == core.RiskCritical },
	"constraint": describeConstraint,
	"limit":      describeLimit,
	"when": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			return v.UTC().Format("2006-01-02 15:04 UTC")
		case *time.Time:
			if v == nil {
				return "never"
			}
			return v.UTC().Format("2006-01-02 15:04 UTC")
		}
		return ""
	},
	"join":            strings.Join,
	"constraintField": constraintField,
	// label makes a member name readable: "balance_after" is "Balance after".
	"label": func(name string) string {
		s := strings.ReplaceAll(name, "_", " ")
		if s == "" {
			return s
		}
		return strings.ToUpper(s[:1]) + s[1:]
	},
}

var layoutTmpl = template.Must(template.New("layout").Funcs(pageFuncs).Parse(layoutTemplate))

// newPageTemplate parses a page's templates (defining "content") with the
// layout.
func newPageTemplate(content string) *template.Template {
	return template.Must(template.Must(layoutTmpl.Clone()).Parse(content))
}

// sitePage is one page in the navigation.
type sitePage struct {
	id, label string
	// path returns the page's path on the provider's origin, "" when the
	// provider does not serve it.
	path func(p *Provider) string
}

// sitePages lists the provider's pages in navigation order.
var sitePages = []sitePage{
	{id: "approve", label: "Approve an agent", path: (*Provider).approvePath},
	{id: "agents", label: "Your agents", path: func(p *Provider) string { return p.basePath + PathAgentsPage }},
	{id: "activity", label: "Activity", path: func(p *Provider) string {
		if p.activity == nil {
			return ""
		}
		return p.basePath + PathActivityPage
	}},
}

// navItem is a navigation link as the layout renders it.
type navItem struct {
	Label, Href string
	Current     bool
}

func (p *Provider) nav(current string) []navItem {
	var out []navItem
	for _, sp := range sitePages {
		if href := sp.path(p); href != "" {
			out = append(out, navItem{Label: sp.label, Href: href, Current: sp.id == current})
		}
	}
	return out
}

// approvePath is the approval page's path when the provider serves it on
// its own origin.
func (p *Provider) approvePath() string {
	u, err := url.Parse(p.verificationURI)
	if err != nil || u.Scheme+"://"+u.Host != p.origin {
		return ""
	}
	return u.EscapedPath()
}

// pageUser returns the signed-in user of a page request, or answers the
// request itself and returns nil: a sign-in error (500), nobody signed in
// (a redirect to Config.SignInURL for a GET, else 401), or, when fresh is
// set, a sign-in older than Config.FreshAuth (protocol §8.11). next is
// where the sign-in should bring the user back.
func (p *Provider) pageUser(w http.ResponseWriter, r *http.Request, d *pageData, tmpl *template.Template, fresh bool, next string) *User {
	u, err := p.signedInUser(r)
	if err != nil {
		p.logger.ErrorContext(r.Context(), "agentauth/provider: signed-in user", "error", err.Error())
		p.render(w, http.StatusInternalServerError, tmpl, d, "Something went wrong", "signin", "The server could not tell who is signed in. Try again later.")
		return nil
	}
	stale := fresh && u != nil && u.ID != "" && !p.freshUser(u)
	if u != nil && u.ID != "" && !stale {
		d.User = u
		return u
	}
	notice := "Sign in to see and approve your agents."
	if stale {
		notice = "For your safety, sign in again before approving an agent."
	}
	if p.signInURL != "" {
		d.SignInURL = p.signInURL + "?next=" + url.QueryEscape(next)
		if r.Method == http.MethodGet {
			http.Redirect(w, r, d.SignInURL, http.StatusSeeOther)
			return nil
		}
	}
	p.render(w, http.StatusUnauthorized, tmpl, d, "Sign in", "signin", notice)
	return nil
}

// newPageData starts the data of a page of the navigation entry current.
func (p *Provider) newPageData(current string) *pageData {
	return &pageData{Provider: p.providerName, Style: template.CSS(pageStyle), Nav: p.nav(current)}
}

// render writes a page: d through tmpl's layout.
func (p *Provider) render(w http.ResponseWriter, status int, tmpl *template.Template, d *pageData, title, step, notice string) {
	d.Title, d.Step, d.Notice = title, step, notice
	var buf bytes.Buffer
	if err := tmpl.ExecuteTemplate(&buf, "layout", d); err != nil {
		p.logger.Error("agentauth/provider: page template", "error", err.Error())
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
