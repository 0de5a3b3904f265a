package provider

import (
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
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/core"
)

//go:embed page.html.tmpl
var pageTemplate string

var pageTmpl = newPageTemplate(pageTemplate)

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

// describeLimit renders the constraint on field among cons for people,
// an amount with its unit (core.WithUnit, units): "at most 500 USD" when
// cons pins the unit to one value, "at most 500, in currency one of
// "USD", "EUR"" when it limits it otherwise, and "at most 500, in any
// currency" when it leaves the unit free (a request the user must
// complete, or a grant no call can use).
func describeLimit(field string, cons map[string]json.RawMessage, units map[string]string) string {
	text := describeConstraint(cons[field])
	unit, ok := units[field]
	if !ok {
		return text
	}
	uc, ok := cons[unit]
	if !ok {
		return text + ", in any " + unit
	}
	if ops, err := operators(uc); err == nil && len(ops) == 1 && ops["eq"] != nil {
		var s string
		if json.Unmarshal(ops["eq"], &s) == nil && plainUnit(s) {
			return text + " " + s
		}
	}
	return text + ", in " + unit + " " + describeConstraint(uc)
}

// plainUnit reports a unit short and plain enough to write unquoted
// after a number: letters and digits only.
func plainUnit(s string) bool {
	if s == "" || len(s) > 16 {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

// pageData is what the templates render.
type pageData struct {
	Provider string
	Title    string
	Style    template.CSS
	// Script is the pages' passkey script, on the pages that use it.
	Script template.JS
	Nav    []navItem
	// Page is the data of a page other than the approval page.
	Page      any
	User      *User
	Notice    string
	Step      string
	SignInURL string
	Approval  *Approval
	CSRF      string
	Strong    []string
	Selected  []string
	// Limits are the limits the user typed on the review step, carried
	// to the confirming step.
	Limits []formField
	// Decided are the capabilities being allowed, with their limits, as
	// the confirming step shows them; Presence is its passkey request.
	Decided  []RequestedCapability
	Presence *presenceView
	Outcome  string
	// OAuth is the OAuth client whose consent the page asks for; nil
	// for an Agent Auth request.
	OAuth *oauthView
}

// ApprovalPage returns the approval page: a server-rendered html/template
// handler where the signed-in user (Config.SignedInUser) enters a user
// code, reviews the agent, its host, its mode and each requested
// capability with its approval strength and constraints, and allows a
// subset or denies. Capabilities of approval strength webauthn need a
// second, confirming step that shows what is being allowed beside the
// passkey prompt (see Config.PresenceCheck and docs/presence.md). A
// request is shown only
// to the user who may decide it (the addressee of a CIBA request or of a
// call to confirm, the user of a linked host or of the agent); to anyone
// else its code or id answers exactly as an unknown one.
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
	return p.namedRequests(p.servePage)
}

func (p *Provider) servePage(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	setPageHeaders(h)
	d := p.newPageData("approve")
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		h.Set("Allow", "GET, POST")
		p.renderPage(w, http.StatusMethodNotAllowed, d, "Not allowed", "done", "Use the page's own buttons.")
		return
	}
	next := r.URL.Path
	if r.Method == http.MethodGet {
		if code := r.URL.Query().Get("code"); code != "" {
			next += "?code=" + url.QueryEscape(code)
		} else if id := r.URL.Query().Get("request"); id != "" {
			next += "?request=" + url.QueryEscape(id)
			if consent := r.URL.Query().Get("oauth"); consent != "" {
				next += "&oauth=" + url.QueryEscape(consent)
			}
		}
	}
	if p.pageUser(w, r, d, pageTmpl, true, next) == nil {
		return
	}
	if r.Method == http.MethodPost {
		p.pagePost(w, r, d)
		return
	}
	code, id := r.URL.Query().Get("code"), r.URL.Query().Get("request")
	if code == "" && id == "" {
		p.renderPage(w, http.StatusOK, d, "Connect an agent", "code", "")
		return
	}
	p.pageReview(w, r, d, approvalTarget{code: code, id: id}, http.StatusOK, "")
}

// approvalTarget names the request a page works on: the user code the
// user typed, or the id of a request on the user's own list.
type approvalTarget struct{ code, id string }

// approvalFor loads the target for the signed-in user u. A request that
// is not u's to decide (see mayDecide) answers like an unknown one,
// whether it is pending or closed, so that a code or an id tells nobody
// else anything, least of all the preview of a call.
func (p *Provider) approvalFor(ctx context.Context, u *User, t approvalTarget) (*Approval, error) {
	var (
		ap       *store.Approval
		err      error
		userCode string
	)
	if t.code != "" || t.id == "" {
		code := normalizeUserCode(t.code)
		if code == "" {
			return nil, ErrApprovalNotFound
		}
		ap, err = p.store.ApprovalByUserCode(ctx, code)
		// A CIBA request is addressed to its user and never found by
		// code.
		if err == nil && ap.Method == store.MethodCIBA {
			return nil, ErrApprovalNotFound
		}
		userCode = formatUserCode(code)
	} else {
		ap, err = p.store.GetApproval(ctx, t.id)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrApprovalNotFound
	}
	if err != nil {
		return nil, err
	}
	ok, err := p.mayDecide(ctx, ap.Method == store.MethodCIBA || ap.Call != nil, ap.UserID, ap.AgentID, u.ID, userCode == "")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrApprovalNotFound
	}
	return p.approvalView(ctx, ap, userCode)
}

func (p *Provider) pageReview(w http.ResponseWriter, r *http.Request, d *pageData, target approvalTarget, status int, notice string) {
	ap, err := p.approvalFor(r.Context(), d.User, target)
	if err != nil {
		p.pageLookupFailed(w, r, d, err)
		return
	}
	d.Approval = ap
	if !p.pageOAuth(w, r, d) {
		return
	}
	d.CSRF = p.csrfToken(d.User.ID, ap.ID, "review")
	title := "Allow this agent?"
	if d.OAuth != nil {
		title = "Allow this application?"
	}
	switch ap.Kind {
	case "capabilities":
		title = "Allow more for this agent?"
	case KindConfirmation:
		title = "Confirm this call?"
	}
	p.renderPage(w, status, d, title, "review", notice)
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
	target := approvalTarget{code: r.PostForm.Get("code"), id: r.PostForm.Get("request")}
	ap, err := p.approvalFor(r.Context(), d.User, target)
	if err != nil {
		p.pageLookupFailed(w, r, d, err)
		return
	}
	d.Approval = ap
	if !p.pageOAuth(w, r, d) {
		return
	}
	step := r.PostForm.Get("step")
	if (step != "review" && step != "confirm") || !p.checkCSRF(r.PostForm.Get("csrf"), d.User.ID, ap.ID, step) {
		p.renderPage(w, http.StatusForbidden, d, "Request refused", "done", "The form has expired or did not come from this page. Open the link again.")
		return
	}
	dec := Decision{UserCode: target.code, UserID: d.User.ID}
	if target.code == "" {
		dec.ApprovalID = ap.ID
	}
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
	if !dec.Deny && ap.Call == nil {
		// The limits the user set go with the decision, and the page
		// says what is wrong with them before it asks for more.
		var err error
		if dec.Constraints, d.Limits, err = p.formConstraints(r.PostForm, ap, dec.Capabilities); err == nil {
			_, err = p.decisionConstraints(ap, dec, dec.Capabilities)
		}
		if err != nil {
			p.pageReview(w, r, d, target, http.StatusUnprocessableEntity, invalidReason(err))
			return
		}
	}
	if !dec.Deny && ap.NeedsPresence(dec.Capabilities) {
		binding := decisionBinding(ap, dec.Capabilities, dec.Constraints)
		if step == "review" {
			p.renderConfirm(w, r, d, dec, binding, http.StatusOK, "")
			return
		}
		if err := p.checkPresence(r, d.User, ap, binding); err != nil {
			p.renderConfirm(w, r, d, dec, binding, http.StatusForbidden, presenceFailure(err))
			return
		}
		dec.PresenceConfirmed = true
	}
	if err := p.Decide(r.Context(), dec); err != nil {
		switch {
		case errors.Is(err, ErrWrongUser):
			p.renderPage(w, http.StatusForbidden, d, "Not yours to approve", "done", "This agent's host belongs to another user.")
		case errors.Is(err, ErrInvalidDecision):
			p.pageReview(w, r, d, target, http.StatusUnprocessableEntity, invalidReason(err))
		default:
			p.pageLookupFailed(w, r, d, err)
		}
		return
	}
	if d.OAuth != nil {
		// A consent ends back at the client: with a code, or refused.
		if dec.Deny {
			p.redirectToClient(w, r, d.OAuth.request, url.Values{"error": {"access_denied"}, "error_description": {"the user denied the request"}})
			return
		}
		p.redirectWithCode(w, r, d.OAuth.request)
		return
	}
	switch {
	case ap.Call != nil && (dec.Deny || len(dec.Capabilities) == 0):
		d.Outcome = fmt.Sprintf("You refused the call of %s by %s.", ap.Call.Capability, ap.AgentName)
	case ap.Call != nil:
		d.Outcome = fmt.Sprintf("You confirmed the call of %s by %s.", ap.Call.Capability, ap.AgentName)
	case dec.Deny:
		d.Outcome = fmt.Sprintf("You denied %s.", ap.AgentName)
	case len(dec.Capabilities) == 0:
		d.Outcome = fmt.Sprintf("You allowed %s no capabilities.", ap.AgentName)
	default:
		d.Outcome = fmt.Sprintf("You allowed %s: %s.", ap.AgentName, strings.Join(dec.Capabilities, ", "))
	}
	p.renderPage(w, http.StatusOK, d, "Done", "done", "")
}

// formField is a named value of a form.
type formField struct{ Name, Value string }

// constraintField names the review form's field where the user limits
// field of capability: one for each of RequestedCapability's
// MissingConstraints.
func constraintField(capability, field string) string {
	return "constraint:" + capability + ":" + field
}

// formConstraints reads the limits the user typed on the review form for
// the fields the allowed capabilities of ap require (see
// constraintInput), and returns them as Decision.Constraints and as the
// form fields they came from. A limit that cannot be read is
// ErrInvalidDecision naming it; Decide reports the ones left empty.
func (p *Provider) formConstraints(form url.Values, ap *Approval, allowed []string) (map[string]map[string]json.RawMessage, []formField, error) {
	var (
		out  map[string]map[string]json.RawMessage
		kept []formField
	)
	for _, c := range ap.Capabilities {
		def, ok := p.reg.Lookup(c.Name)
		if !ok || !slices.Contains(allowed, c.Name) {
			continue
		}
		for _, f := range c.MissingConstraints {
			name := constraintField(c.Name, f)
			text := strings.TrimSpace(form.Get(name))
			if text == "" {
				continue
			}
			raw, err := constraintInput(def, f, text)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: the limit on %s of %s: %v", ErrInvalidDecision, f, c.Name, err)
			}
			if out == nil {
				out = map[string]map[string]json.RawMessage{}
			}
			if out[c.Name] == nil {
				out[c.Name] = map[string]json.RawMessage{}
			}
			out[c.Name][f] = raw
			kept = append(kept, formField{Name: name, Value: text})
		}
	}
	return out, kept, nil
}

// constraintInput reads what a user typed as the limit on field of def:
// JSON when it starts as an operator object, a JSON string or an array
// does ({"max": 500}, {"in": ["acc_456", "acc_789"]}, "acc_456");
// otherwise one exact value, a number or a boolean when the field's
// schema types it so, else the text itself, so that acc_456 needs no
// quotes. The result is checked as a grant's constraints are
// (agentauth.ValidateConstraints).
func constraintInput(def *core.Definition, field, text string) (json.RawMessage, error) {
	if !utf8.ValidString(text) {
		return nil, errors.New("it is not valid UTF-8")
	}
	var raw json.RawMessage
	switch typ := fieldType(def, field); {
	case text[0] == '{' || text[0] == '"' || text[0] == '[':
		if !json.Valid([]byte(text)) {
			return nil, errors.New("it is not valid JSON")
		}
		raw = json.RawMessage(text)
	case typ == "number" || typ == "integer" || typ == "boolean":
		if !json.Valid([]byte(text)) {
			return nil, fmt.Errorf("%s takes a %s", field, typ)
		}
		raw = json.RawMessage(text)
	default:
		raw, _ = json.Marshal(text)
	}
	if err := agentauth.ValidateConstraints(map[string]json.RawMessage{field: raw}); err != nil {
		return nil, err
	}
	return raw, nil
}

// fieldType is the JSON Schema type of a top-level input field of def,
// "" when it has none or several.
func fieldType(def *core.Definition, field string) string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(def.InputSchema(), &s) != nil {
		return ""
	}
	t, _ := s.Properties[field].Type.(string)
	return t
}

// invalidReason is what the page tells of an ErrInvalidDecision.
func invalidReason(err error) string {
	msg, _ := strings.CutPrefix(err.Error(), ErrInvalidDecision.Error()+": ")
	if msg == "" {
		return "Choose among the requested capabilities."
	}
	return strings.ToUpper(msg[:1]) + msg[1:] + "."
}

// checkPresence runs the presence step of a decision on ap that binding
// describes: Config.PresenceCheck when set; otherwise the answer of one
// of u's passkeys to the page's presence request, or, only where
// Config.DevPresenceCode allows it, the request's code typed again.
func (p *Provider) checkPresence(r *http.Request, u *User, ap *Approval, binding []byte) error {
	if p.presence != nil {
		return p.presence(r, u, ap)
	}
	f := r.PostForm
	if cred := f.Get("passkey_credential"); cred != "" {
		return p.verifyPresence(r.Context(), u, binding, f.Get("presence_token"), []byte(cred))
	}
	if f.Has("presence_code") {
		if !p.devPresenceCode {
			return errDevCodeOff
		}
		return p.checkPresenceCode(r.Context(), ap, f.Get("presence_code"))
	}
	return errPresenceInvalid
}

// errDevCodeOff refuses a typed code where Config.DevPresenceCode is not
// set.
var errDevCodeOff = errors.New("typing the code again is a development option this provider does not allow: confirm with your passkey")

// presenceFailure is what the page tells of a failed presence step.
func presenceFailure(err error) string {
	for _, known := range []error{errNoPasskey, errPresenceExpired, errPresenceReplayed, errPasskeysDisabled, errDevCodeOff} {
		if errors.Is(err, known) {
			msg := known.Error()
			return strings.ToUpper(msg[:1]) + msg[1:] + "."
		}
	}
	return "The confirmation did not match this request. Try again."
}

// presenceView is what the confirming step needs to ask for a passkey.
type presenceView struct {
	// Options are the browser's request options (JSON) and Token the
	// sealed nonce the answer goes back with; empty when passkeys cannot
	// be used here (Unavailable says why) or the request could not be
	// made.
	Options, Token string
	Unavailable    string
	// HasPasskey is false for a user who must add one first, which the
	// page does through the user API at APIBase with APIToken.
	HasPasskey        bool
	APIBase, APIToken string
	// DevCode shows the development stand-in (Config.DevPresenceCode).
	DevCode bool
	// Custom is set when Config.PresenceCheck replaces the built-in
	// step: the page then posts its form as it is.
	Custom bool
}

// renderConfirm shows the confirming step of dec: what is being decided,
// and the presence request bound to it.
func (p *Provider) renderConfirm(w http.ResponseWriter, r *http.Request, d *pageData, dec Decision, binding []byte, status int, notice string) {
	ap := d.Approval
	d.Selected = dec.Capabilities
	for _, c := range ap.Capabilities {
		if c.Approval == core.ApprovalWebAuthn && slices.Contains(dec.Capabilities, c.Name) {
			d.Strong = append(d.Strong, c.Name)
		}
	}
	d.Decided = decidedLimits(ap, dec)
	d.CSRF = p.csrfToken(d.User.ID, ap.ID, "confirm")
	pv := &presenceView{DevCode: p.devPresenceCode, Custom: p.presence != nil, Unavailable: p.passkeysOff,
		APIBase: p.basePath + "/user", APIToken: p.csrfToken(d.User.ID, "user-api", "api")}
	if !pv.Custom && p.webauthn != nil {
		req, err := p.presenceRequestFor(r.Context(), d.User, binding)
		if err == nil {
			var opts []byte
			if opts, err = json.Marshal(req.Options); err == nil {
				pv.Options, pv.Token = string(opts), req.Token
				var keys []*store.Passkey
				keys, err = p.store.ListPasskeys(r.Context(), d.User.ID)
				pv.HasPasskey = len(keys) > 0
			}
		}
		if err != nil {
			p.logger.ErrorContext(r.Context(), "agentauth/provider: presence request", "error", err.Error())
			pv.Unavailable = "The passkey request could not be made. Try again later."
		}
	}
	d.Presence = pv
	d.Script = template.JS(pageScript)
	p.renderPage(w, status, d, "Confirm it is you", "confirm", notice)
}

// decidedLimits lists, for the confirming step, each capability being
// allowed with the limits it will have: the request's own, narrowed by
// what the user set.
func decidedLimits(ap *Approval, dec Decision) []RequestedCapability {
	var out []RequestedCapability
	for _, c := range ap.Capabilities {
		if !slices.Contains(dec.Capabilities, c.Name) {
			continue
		}
		if set := dec.Constraints[c.Name]; len(set) > 0 {
			merged := make(map[string]json.RawMessage, len(c.Constraints)+len(set))
			maps.Copy(merged, c.Constraints)
			maps.Copy(merged, set)
			c.Constraints = merged
		}
		out = append(out, c)
	}
	return out
}

// checkPresenceCode is the built-in confirmation: typed must be the
// request's code (the user code, or for a CIBA request the code its
// binding message ends with). Codes are kept only as digests, so the
// typed code is looked up and must find this very request.
func (p *Provider) checkPresenceCode(ctx context.Context, ap *Approval, typed string) error {
	code := normalizeUserCode(typed)
	if code == "" {
		return errors.New("no confirmation code")
	}
	if ap.UserCode != "" && code == normalizeUserCode(ap.UserCode) {
		return nil
	}
	got, err := p.store.ApprovalByUserCode(ctx, code)
	if err != nil || got.ID != ap.ID {
		return errors.New("the confirmation code does not match")
	}
	return nil
}

func (p *Provider) renderPage(w http.ResponseWriter, status int, d *pageData, title, step, notice string) {
	p.render(w, status, pageTmpl, d, title, step, notice)
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
// the time it was made (see newCSRFToken).
func (p *Provider) csrfToken(userID, approvalID, step string) string {
	return newCSRFToken(p.pageSecret, p.now(), "approval-page", userID, approvalID, step)
}

func (p *Provider) checkCSRF(token, userID, approvalID, step string) bool {
	return p.checkCSRFAge(token, userID, approvalID, step, p.approvalLife)
}

// checkCSRFAge is checkCSRF for tokens that live maxAge.
func (p *Provider) checkCSRFAge(token, userID, approvalID, step string, maxAge time.Duration) bool {
	return checkCSRFToken(p.pageSecret, p.now(), maxAge, token, "approval-page", userID, approvalID, step)
}

// newCSRFToken is the CSRF token of the pages, the provider's and
// DevLogin's: issued.mac, with mac = HMAC-SHA256 under secret over the
// page's label, the time issued and the fields the form is bound to.
func newCSRFToken(secret []byte, now time.Time, label string, fields ...string) string {
	issued := strconv.FormatInt(now.Unix(), 10)
	return issued + "." + csrfMAC(secret, label, issued, fields...)
}

func csrfMAC(secret []byte, label, issued string, fields ...string) string {
	m := hmac.New(sha256.New, secret)
	for _, s := range append([]string{label, issued}, fields...) {
		// Length-prefixed, so that no two tuples encode alike.
		fmt.Fprintf(m, "%d:%s|", len(s), s)
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRFToken reports whether token is newCSRFToken's for label and
// fields, made at most maxAge before now (and not from the future,
// beyond a minute of clock skew).
func checkCSRFToken(secret []byte, now time.Time, maxAge time.Duration, token, label string, fields ...string) bool {
	issued, mac, ok := strings.Cut(token, ".")
	if !ok {
		return false
	}
	sec, err := strconv.ParseInt(issued, 10, 64)
	if err != nil {
		return false
	}
	if age := now.Sub(time.Unix(sec, 0)); age < -time.Minute || age > maxAge {
		return false
	}
	return constantTimeEqual(mac, csrfMAC(secret, label, issued, fields...))
}

func constantTimeEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// pageOAuth reads the consent an approval page request carries (the
// oauth parameter, see serveOAuthConsent) into d, and lets the page's
// forms post on to the client's redirect URI. It answers the request
// itself and returns false when the consent is not valid for this user
// and request.
func (p *Provider) pageOAuth(w http.ResponseWriter, r *http.Request, d *pageData) bool {
	v, err := p.oauthForPage(r.Context(), r.FormValue("oauth"), d.User, d.Approval)
	if err != nil {
		d.Approval = nil
		p.renderPage(w, http.StatusBadRequest, d, "Request expired", "done", "This request has expired or is not valid. Start again from the application.")
		return false
	}
	if v != nil {
		d.OAuth = v
		if src := v.formAction(); src != "" && !strings.ContainsAny(src, " ;,'\r\n") {
			w.Header().Set("Content-Security-Policy", strings.Replace(pageCSP, "form-action 'self'", "form-action 'self' "+src, 1))
		}
	}
	return true
}
