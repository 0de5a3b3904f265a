package provider_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap/agentauth/provider"
)

// pageTarget is a pending approval request on the approval page: its
// user code, its id and the CSRF token of its review form.
type pageTarget struct {
	code, id, agentID, csrf string
}

// FuzzApprovalPage sends arbitrary queries and form bodies to the
// approval page, signed in as alice or not, with arbitrary Origin and
// Sec-Fetch-Site headers. In a query or a body, "{code}", "{id}" and
// "{csrf}" stand for the pending request's user code and id and its
// review form's CSRF token. The page never fails (no 5xx), always sends
// its protective headers, and a request is decided only by a signed-in
// same-origin POST carrying the form's token; the webauthn-strength
// capability is never granted without its extra confirmation.
func FuzzApprovalPage(f *testing.F) {
	// Rate limits would answer 429 after a few hundred requests: they
	// have their own tests.
	e := newPageEnv(f, func(c *provider.Config) { c.RateLimits.Off = true })
	handler := e.srv.Config.Handler
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(e.url + "/login")
	if err != nil {
		f.Fatal(err)
	}
	form, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(form)
	if m == nil {
		f.Fatalf("no sign-in form: %s", form)
	}
	resp, err = c.PostForm(e.url+"/login", url.Values{"user": {"alice"}, "csrf": {string(m[1])}})
	if err != nil {
		f.Fatal(err)
	}
	resp.Body.Close()
	base, _ := url.Parse(e.url)
	cookies := jar.Cookies(base)
	if len(cookies) == 0 {
		f.Fatal("no sign-in cookie")
	}

	serve := func(post, signedIn bool, query, body, origin, site string) *httptest.ResponseRecorder {
		method := http.MethodGet
		if post {
			method = http.MethodPost
		}
		r := httptest.NewRequest(method, e.url+"/approve", strings.NewReader(body))
		r.URL.RawQuery = query
		if post {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if site != "" {
			r.Header.Set("Sec-Fetch-Site", site)
		}
		if signedIn {
			for _, c := range cookies {
				r.AddCookie(c)
			}
		}
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		return w
	}
	var cur pageTarget
	open := func(t *testing.T) {
		e.t = t
		r := e.register(newKey(t), newKey(t), map[string]any{"name": "fuzz agent", "capabilities": []any{"echo", "check_balance", "transfer"}})
		code := r.body["approval"].(map[string]any)["user_code"].(string)
		ap, err := e.p.PendingApproval(context.Background(), code)
		if err != nil {
			t.Fatal(err)
		}
		w := serve(false, true, "code="+url.QueryEscape(code), "", "", "")
		m := csrfField.FindStringSubmatch(w.Body.String())
		if w.Code != http.StatusOK || m == nil {
			t.Fatalf("review page: %d", w.Code)
		}
		cur = pageTarget{code: code, id: ap.ID, agentID: ap.AgentID, csrf: m[1]}
	}

	f.Add(true, true, "", "code={code}&step=review&action=allow&capability=echo&csrf={csrf}", "", "")
	f.Add(true, true, "", "code={code}&step=review&action=deny&csrf={csrf}", e.url, "same-origin")
	f.Add(true, true, "", "request={id}&step=review&action=allow&capability=transfer&capability=echo&csrf={csrf}", "", "")
	f.Add(true, true, "", "code={code}&step=confirm&action=allow&capability=transfer&presence_code={code}&csrf={csrf}", "", "")
	f.Add(true, true, "", "code={code}&step=review&action=allow&capability=nope&csrf={csrf}", "", "")
	f.Add(true, true, "", "code={code}&step=review&action=allow&csrf={csrf}", "https://evil.example", "")
	f.Add(true, true, "", "code={code}&step=review&action=allow&csrf={csrf}", "null", "cross-site")
	f.Add(true, false, "", "code={code}&step=review&action=allow&csrf={csrf}", "", "")
	f.Add(true, true, "", "code=%zz&csrf=1.x", "", "")
	f.Add(false, true, "code={code}", "", "", "")
	f.Add(false, true, "request={id}", "", "", "")
	f.Add(false, true, "code=AAAA-BBBB", "", "", "")
	f.Add(false, false, "code={code}", "", "", "")
	f.Fuzz(func(t *testing.T, post, signedIn bool, query, body, origin, site string) {
		if cur.code == "" {
			open(t)
		}
		fill := strings.NewReplacer("{code}", url.QueryEscape(cur.code), "{id}", url.QueryEscape(cur.id), "{csrf}", url.QueryEscape(cur.csrf))
		query, body = fill.Replace(query), fill.Replace(body)
		w := serve(post, signedIn, query, body, origin, site)
		switch w.Code {
		case http.StatusOK, http.StatusSeeOther, http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden,
			http.StatusNotFound, http.StatusGone, http.StatusUnprocessableEntity:
		default:
			t.Fatalf("status %d for post=%v query %q body %q: %s", w.Code, post, query, body, w.Body)
		}
		for _, h := range []string{"Content-Security-Policy", "X-Frame-Options", "Cache-Control"} {
			if w.Header().Get(h) == "" {
				t.Fatalf("no %s header (status %d)", h, w.Code)
			}
		}
		_, err := e.p.PendingApproval(context.Background(), cur.code)
		if err == nil {
			return
		}
		if !errors.Is(err, provider.ErrApprovalClosed) {
			t.Fatal(err)
		}
		// Decided: only a proper form could have done it.
		form, _ := url.ParseQuery(body)
		sameSite := (origin == "" || origin == e.url || (origin == "null" && site == "same-origin")) &&
			(site == "" || site == "same-origin" || site == "none")
		if !post || !signedIn || !sameSite || !strings.Contains(body, url.QueryEscape(cur.csrf)) || form.Get("csrf") != cur.csrf {
			t.Fatalf("request decided by post=%v signedIn=%v origin %q site %q body %q", post, signedIn, origin, site, body)
		}
		grants, err := e.st.ListGrants(context.Background(), cur.agentID)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range grants {
			if g.Capability == "transfer" && g.Status == "active" {
				t.Fatalf("transfer granted without its confirmation by body %q", body)
			}
		}
		cur = pageTarget{}
	})
}

// FuzzDevLoginCookie presents arbitrary sign-in cookies (where "{alice}"
// stands for alice's real cookie) to DevLogin, some time after the
// sign-in: a user is signed in only by the very cookie DevLogin set,
// within its lifetime.
func FuzzDevLoginCookie(f *testing.F) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	d := provider.NewDevLogin(provider.User{ID: "alice"}, provider.User{ID: "a.b"}).WithClock(clk.Now)
	w := devLoginPost(f, d, "alice", "/")
	var minted string
	for _, c := range w.Result().Cookies() {
		if c.Name == provider.DevLoginCookie {
			minted = c.Value
		}
	}
	if minted == "" {
		f.Fatal("no cookie minted")
	}
	for _, s := range []string{"{alice}", `"{alice}"`, "{alice}x", "alice.1700000000.", "a.b.1700000000.x", "..", "{alice}; " + provider.DevLoginCookie + "=x"} {
		f.Add(s, uint32(0))
	}
	f.Add("{alice}", uint32(12*3600+1))
	f.Fuzz(func(t *testing.T, value string, after uint32) {
		c := &clock{t: clk.Now().Add(time.Duration(after) * time.Second)}
		d := d.WithClock(c.Now)
		r := httptest.NewRequest(http.MethodGet, "/approve", nil)
		r.Header.Set("Cookie", provider.DevLoginCookie+"="+strings.ReplaceAll(value, "{alice}", minted))
		u, err := d.SignedInUser(r)
		if err != nil || u == nil {
			return
		}
		got, _ := r.Cookie(provider.DevLoginCookie)
		if u.ID != "alice" || got.Value != minted || after > 12*3600 {
			t.Fatalf("cookie %q, %ds after the sign-in, signs in %+v", got.Value, after, u)
		}
	})
}
