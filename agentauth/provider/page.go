package provider

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentcap/agentcap/core"
)

//go:embed page.html.tmpl
var pageTemplate string

const pageStyle = `body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d2733}
main{max-width:40rem;margin:2rem auto;background:#fff;padding:1.5rem 2rem;border-radius:8px;box-shadow:0 1px 3px #0002}
header{display:flex;justify-content:space-between;color:#555;font-size:.9rem}
h1{font-size:1.4rem}dl{display:grid;grid-template-columns:9rem 1fr;gap:.3rem 1rem}dt{color:#555}dd{margin:0;overflow-wrap:anywhere}
fieldset{border:1px solid #ccd;border-radius:6px;margin:1rem 0}.cap{border-top:1px solid #eee;padding:.6rem 0}.cap:first-of-type{border:0}
.cap p{margin:.2rem 0 .2rem 1.6rem}.constraints{margin-left:1.6rem;font-size:.9rem;color:#333}.constraints ul{margin:.2rem 0}
.strength{font-size:.8rem;border-radius:4px;padding:0 .4rem;background:#e8eef8}.strength-webauthn{background:#fde7c8}.risk{font-size:.8rem;color:#a40}
.warn{color:#a40;font-size:.85rem}.hint{color:#666;font-size:.85rem}.notice{background:#fff4d6;padding:.5rem .8rem;border-radius:4px}
.actions{display:flex;gap:1rem;margin-top:1rem}button{font:inherit;padding:.5rem 1.2rem;border-radius:5px;border:1px solid #2456a6;background:#2456a6;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#2456a6}input[type=text],input:not([type]){font:inherit;padding:.4rem;width:12rem;letter-spacing:.1em}`

// pageCSP allows the page nothing but its own inline style and forms
// posting to itself; frame-ancestors 'none' keeps it out of frames, so
// no other site can overlay it to trick a click.
var pageCSP = func() string {
	sum := sha256.Sum256([]byte(pageStyle))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}()

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
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
}).Parse(pageTemplate))

// describeConstraint renders a constraint for people: "at most 100",
// "one of EUR, USD", "exactly 5".
func describeConstraint(raw json.RawMessage) string {
	ops, err := operators(raw)
	if err != nil {
		return string(raw)
	}
	var parts []string
	list := func(v json.RawMessage) string {
		items := rawArray(v)
		s := make([]string, len(items))
		for i, it := range items {
			s[i] = string(it)
		}
		return strings.Join(s, ", ")
	}
	for _, op := range []string{"eq", "min", "max", "in", "not_in"} {
		v, ok := ops[op]
		if !ok {
			continue
		}
		switch op {
		case "eq":
			parts = append(parts, "exactly "+string(v))
		case "min":
			parts = append(parts, "at least "+string(v))
		case "max":
			parts = append(parts, "at most "+string(v))
		case "in":
			parts = append(parts, "one of "+list(v))
		case "not_in":
			parts = append(parts, "none of "+list(v))
		}
	}
	return strings.Join(parts, ", ")
}

// pageData is what the template renders.
type pageData struct {
	Provider  string
	Title     string
	Style     template.CSS
	User      *User
	Notice    string
	Step      string
	SignInURL string
	Approval  *Approval
	CSRF      string
	Strong    []string
	Selected  []string
	Outcome   string
}

// ApprovalPage returns the approval page: a server-rendered html/template
// handler where the signed-in user (Config.SignedInUser) enters a user
// code, reviews the agent, its host, its mode and each requested
// capability with its approval strength and constraints, and allows a
// subset or denies. Capabilities of approval strength webauthn need a
// second, confirming step (Config.PresenceCheck).
//
// The page refuses users whose sign-in is older than Config.FreshAuth
// (protocol §8.11), and protects its form against cross-site requests:
// every POST carries a token bound to the user, the request and the step
// (HMAC-SHA256 under Config.PageSecret) and, when the browser sends them,
// an Origin of the page's own and a Sec-Fetch-Site that is not
// cross-site. It is never framed or cached, and sends no Referer to other
// sites, which would leak the code in its URL. It panics if
// Config.SignedInUser is nil.
func (p *Provider) ApprovalPage() http.Handler {
	if p.signedInUser == nil {
		panic("provider: ApprovalPage needs Config.SignedInUser")
	}
	return http.HandlerFunc(p.servePage)
}

func (p *Provider) servePage(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	d := &pageData{Provider: p.providerName, Style: template.CSS(pageStyle)}
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		h.Set("Allow", "GET, POST")
		p.renderPage(w, http.StatusMethodNotAllowed, d, "Not allowed", "signin", "Use the page's own buttons.")
		return
	}
	u, err := p.signedInUser(r)
	if err != nil {
		p.logger.ErrorContext(r.Context(), "agentauth/provider: signed-in user", "error", err.Error())
		p.renderPage(w, http.StatusInternalServerError, d, "Something went wrong", "signin", "The server could not tell who is signed in. Try again later.")
		return
	}
	if u == nil || u.ID == "" || p.now().Sub(u.AuthenticatedAt) > p.freshAuth {
		notice := "Sign in to approve agents."
		if u != nil && u.ID != "" {
			notice = "For your safety, sign in again before approving an agent."
		}
		if p.signInURL != "" {
			next := r.URL.Path
			if code := r.FormValue("code"); r.Method == http.MethodGet && code != "" {
				next += "?code=" + url.QueryEscape(code)
			}
			d.SignInURL = p.signInURL + "?next=" + url.QueryEscape(next)
			if r.Method == http.MethodGet {
				http.Redirect(w, r, d.SignInURL, http.StatusSeeOther)
				return
			}
		}
		p.renderPage(w, http.StatusUnauthorized, d, "Sign in", "signin", notice)
		return
	}
	d.User = u
	if r.Method == http.MethodPost {
		p.pagePost(w, r, d)
		return
	}
	code := r.URL.Query().Get("code")
	if code == "" {
		p.renderPage(w, http.StatusOK, d, "Connect an agent", "code", "")
		return
	}
	p.pageReview(w, r, d, code, "")
}

func (p *Provider) pageReview(w http.ResponseWriter, r *http.Request, d *pageData, code, notice string) {
	ap, err := p.PendingApproval(r.Context(), code)
	if err != nil {
		p.pageLookupFailed(w, r, d, err)
		return
	}
	d.Approval = ap
	d.CSRF = p.csrfToken(d.User.ID, ap.ID, "review")
	title := "Allow this agent?"
	if ap.Kind == "capabilities" {
		title = "Allow more for this agent?"
	}
	p.renderPage(w, http.StatusOK, d, title, "review", notice)
}

func (p *Provider) pageLookupFailed(w http.ResponseWriter, r *http.Request, d *pageData, err error) {
	switch {
	case errors.Is(err, ErrApprovalNotFound):
		p.renderPage(w, http.StatusNotFound, d, "Connect an agent", "code", "No request has that code. Check it and try again.")
	case errors.Is(err, ErrApprovalClosed):
		p.renderPage(w, http.StatusGone, d, "Request closed", "done", "This request was already decided or has expired.")
	default:
		p.logger.ErrorContext(r.Context(), "agentauth/provider: approval page", "error", err.Error())
		p.renderPage(w, http.StatusInternalServerError, d, "Something went wrong", "done", "The request could not be loaded. Try again later.")
	}
}

func (p *Provider) pagePost(w http.ResponseWriter, r *http.Request, d *pageData) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		p.renderPage(w, http.StatusBadRequest, d, "Bad request", "code", "The form could not be read.")
		return
	}
	if !p.sameOrigin(r) {
		p.renderPage(w, http.StatusForbidden, d, "Request refused", "done", "This form was sent from another site.")
		return
	}
	code := r.PostForm.Get("code")
	ap, err := p.PendingApproval(r.Context(), code)
	if err != nil {
		p.pageLookupFailed(w, r, d, err)
		return
	}
	d.Approval = ap
	step := r.PostForm.Get("step")
	if (step != "review" && step != "confirm") || !p.checkCSRF(r.PostForm.Get("csrf"), d.User.ID, ap.ID, step) {
		p.renderPage(w, http.StatusForbidden, d, "Request refused", "done", "The form has expired or did not come from this page. Open the link again.")
		return
	}
	dec := Decision{UserCode: code, UserID: d.User.ID}
	switch r.PostForm.Get("action") {
	case "deny":
		dec.Deny = true
	case "allow":
		dec.Capabilities = r.PostForm["capability"]
		if dec.Capabilities == nil {
			dec.Capabilities = []string{}
		}
	default:
		p.renderPage(w, http.StatusBadRequest, d, "Bad request", "done", "Choose Allow or Deny.")
		return
	}
	if !dec.Deny && ap.NeedsPresence(dec.Capabilities) {
		if step == "review" {
			d.Selected = dec.Capabilities
			for _, c := range ap.Capabilities {
				if c.Approval == core.ApprovalWebAuthn && slices.Contains(dec.Capabilities, c.Name) {
					d.Strong = append(d.Strong, c.Name)
				}
			}
			d.CSRF = p.csrfToken(d.User.ID, ap.ID, "confirm")
			p.renderPage(w, http.StatusOK, d, "Confirm it is you", "confirm", "")
			return
		}
		if err := p.checkPresence(r, d.User, ap); err != nil {
			d.Selected = dec.Capabilities
			for _, c := range ap.Capabilities {
				if c.Approval == core.ApprovalWebAuthn && slices.Contains(dec.Capabilities, c.Name) {
					d.Strong = append(d.Strong, c.Name)
				}
			}
			d.CSRF = p.csrfToken(d.User.ID, ap.ID, "confirm")
			p.renderPage(w, http.StatusForbidden, d, "Confirm it is you", "confirm", "The confirmation did not match. Try again.")
			return
		}
		dec.PresenceConfirmed = true
	}
	if err := p.Decide(r.Context(), dec); err != nil {
		switch {
		case errors.Is(err, ErrWrongUser):
			p.renderPage(w, http.StatusForbidden, d, "Not yours to approve", "done", "This agent's host belongs to another user.")
		case errors.Is(err, ErrInvalidDecision):
			p.pageReview(w, r, d, code, "Choose among the requested capabilities.")
		default:
			p.pageLookupFailed(w, r, d, err)
		}
		return
	}
	switch {
	case dec.Deny:
		d.Outcome = fmt.Sprintf("You denied %s.", ap.AgentName)
	case len(dec.Capabilities) == 0:
		d.Outcome = fmt.Sprintf("You allowed %s no capabilities.", ap.AgentName)
	default:
		d.Outcome = fmt.Sprintf("You allowed %s: %s.", ap.AgentName, strings.Join(dec.Capabilities, ", "))
	}
	p.renderPage(w, http.StatusOK, d, "Done", "done", "")
}

// checkPresence runs the extra confirmation of webauthn-strength
// capabilities.
func (p *Provider) checkPresence(r *http.Request, u *User, ap *Approval) error {
	if p.presence != nil {
		return p.presence(r, u, ap)
	}
	return p.checkPresenceCode(r.Context(), ap, r.PostForm.Get("presence_code"))
}

// checkPresenceCode is the built-in confirmation: typed must be the
// request's code (the user code, or for a CIBA request the code its
// binding message ends with). Codes are kept only as digests, so the
// typed code is looked up and must find this very request.
func (p *Provider) checkPresenceCode(ctx context.Context, ap *Approval, typed string) error {
	code := NormalizeUserCode(typed)
	if code == "" {
		return errors.New("no confirmation code")
	}
	if ap.UserCode != "" && code == NormalizeUserCode(ap.UserCode) {
		return nil
	}
	got, err := p.store.ApprovalByUserCode(ctx, code)
	if err != nil || got.ID != ap.ID {
		return errors.New("the confirmation code does not match")
	}
	return nil
}

func (p *Provider) renderPage(w http.ResponseWriter, status int, d *pageData, title, step, notice string) {
	d.Title, d.Step, d.Notice = title, step, notice
	var buf bytes.Buffer
	if err := pageTmpl.ExecuteTemplate(&buf, "page", d); err != nil {
		p.logger.Error("agentauth/provider: approval page template", "error", err.Error())
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// sameOrigin refuses a POST that the browser says came from elsewhere.
// Sec-Fetch-Site is the browser's own verdict; an Origin, when sent, must
// be the page's. A browser that sends neither falls back on the CSRF
// token alone.
func (p *Provider) sameOrigin(r *http.Request) bool {
	u, err := url.Parse(p.verificationURI)
	return err == nil && sameOriginAs(r, u.Scheme+"://"+u.Host)
}

// sameOriginAs is sameOrigin for a page of origin.
func sameOriginAs(r *http.Request, origin string) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" || (o == "null" && r.Header.Get("Sec-Fetch-Site") == "same-origin") {
		return true
	}
	return o == origin
}

// csrfToken binds a form to its user, its request and its step, and to
// the time it was made: issued.mac, with mac = HMAC-SHA256 over the four.
func (p *Provider) csrfToken(userID, approvalID, step string) string {
	issued := strconv.FormatInt(p.now().Unix(), 10)
	return issued + "." + p.csrfMAC(issued, userID, approvalID, step)
}

func (p *Provider) csrfMAC(issued, userID, approvalID, step string) string {
	m := hmac.New(sha256.New, p.pageSecret)
	for _, s := range []string{"approval-page", issued, userID, approvalID, step} {
		// Length-prefixed, so that no two tuples encode alike.
		fmt.Fprintf(m, "%d:%s|", len(s), s)
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (p *Provider) checkCSRF(token, userID, approvalID, step string) bool {
	return p.checkCSRFAge(token, userID, approvalID, step, p.approvalLife)
}

// checkCSRFAge is checkCSRF for tokens that live maxAge.
func (p *Provider) checkCSRFAge(token, userID, approvalID, step string, maxAge time.Duration) bool {
	issued, mac, ok := strings.Cut(token, ".")
	if !ok {
		return false
	}
	sec, err := strconv.ParseInt(issued, 10, 64)
	if err != nil {
		return false
	}
	if age := p.now().Sub(time.Unix(sec, 0)); age < -time.Minute || age > maxAge {
		return false
	}
	return constantTimeEqual(mac, p.csrfMAC(issued, userID, approvalID, step))
}

func constantTimeEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
