package provider

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DevLoginCookie is the cookie DevLogin signs users in with.
const DevLoginCookie = "agentcap_dev_user"

// DevLogin is a development sign-in for the approval page: a page with
// one button per user and no password. It exists so that an example
// application runs without an identity provider; anyone who can reach it
// can sign in as anyone, so never serve it in production.
//
// Mount it at a path of its own and give its SignedInUser to
// Config.SignedInUser and that path to Config.SignInURL. Its form is
// protected against cross-site posts and sends the user on only to a
// path of the same site (see ServeHTTP).
type DevLogin struct {
	users  []User
	secret []byte
	now    func() time.Time
	ttl    time.Duration
}

// NewDevLogin returns a DevLogin offering users (their ID and Name are
// used). Sign-ins last 12 hours; the provider's FreshAuth may ask for a
// newer one before approving.
func NewDevLogin(users ...User) *DevLogin {
	secret := make([]byte, 32)
	if _, err := io.ReadFull(rand.Reader, secret); err != nil {
		panic(err)
	}
	return &DevLogin{users: users, secret: secret, now: time.Now, ttl: 12 * time.Hour}
}

// WithClock returns d with a clock, for tests.
func (d *DevLogin) WithClock(now func() time.Time) *DevLogin {
	c := *d
	c.now = now
	return &c
}

// WithSecret returns d keying its sign-in cookies with secret instead of
// the random bytes drawn by NewDevLogin, so that several instances
// sharing the secret accept each other's sign-ins. The secret must hold
// at least 32 bytes; a shorter one panics.
func (d *DevLogin) WithSecret(secret []byte) *DevLogin {
	if len(secret) < 32 {
		panic("provider: DevLogin secret shorter than 32 bytes")
	}
	c := *d
	c.secret = append([]byte(nil), secret...)
	return &c
}

// DevLoginCSRFCookie holds the random value DevLogin's form is bound to:
// the form's CSRF token signs it, and a page of another site can neither
// read it nor, since it is SameSite=Strict, have the browser send it.
const DevLoginCSRFCookie = "agentcap_dev_csrf"

// devLoginFormLife is how long a sign-in form may be sent after it was
// shown.
const devLoginFormLife = time.Hour

var devLoginTmpl = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Development sign-in</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:30rem;margin:3rem auto}button{font:inherit;margin:.3rem;padding:.5rem 1.2rem}.notice{background:#fff4d6;padding:.5rem .8rem;border-radius:4px}</style></head>
<body><h1>Development sign-in</h1><p>No password: this sign-in is for development only.</p>
{{with .Notice}}<p class="notice" id="notice">{{.}}</p>{{end}}
<form method="post" action=""><input type="hidden" name="next" value="{{.Next}}"><input type="hidden" name="csrf" value="{{.CSRF}}">
{{range .Users}}<button type="submit" name="user" value="{{.ID}}" id="login-{{.ID}}">Sign in as {{.Name}}</button>{{end}}
</form></body></html>`))

// ServeHTTP shows the user buttons (GET) and signs the chosen user in
// (POST), then redirects to the "next" parameter, a path on this site:
// a value with a scheme or a host, starting with "//", or holding a
// backslash or a control character anywhere (which browsers drop or read
// as a slash) brings the user to "/" instead. The form
// carries a CSRF token, the approval page's kind keyed by DevLogin's
// secret, bound to the random value of the DevLoginCSRFCookie cookie set
// with the form: a POST without both is refused (403), so that another
// site cannot sign a visitor in.
func (d *DevLogin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	next := localPath(r.FormValue("next"))
	switch r.Method {
	case http.MethodGet:
		d.form(w, r, http.StatusOK, next, "")
	case http.MethodPost:
		c, err := r.Cookie(DevLoginCSRFCookie)
		if err != nil || !validNonce(c.Value) ||
			!checkCSRFToken(d.secret, d.now(), devLoginFormLife, r.PostFormValue("csrf"), "dev-login", c.Value) {
			d.form(w, r, http.StatusForbidden, next, "The form has expired or did not come from this page. Sign in again.")
			return
		}
		id := r.PostFormValue("user")
		if _, ok := d.user(id); !ok {
			http.Error(w, "unknown user", http.StatusBadRequest)
			return
		}
		now := strconv.FormatInt(d.now().Unix(), 10)
		http.SetCookie(w, &http.Cookie{
			Name:     DevLoginCookie,
			Value:    id + "." + now + "." + d.mac(id, now),
			Path:     "/",
			HttpOnly: true,
			SameSite: http.SameSiteLaxMode,
			Secure:   r.TLS != nil,
			MaxAge:   int(d.ttl / time.Second),
		})
		http.Redirect(w, r, next, http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// form shows the sign-in form, bound to the browser's CSRF cookie,
// which it sets when the browser sent none.
func (d *DevLogin) form(w http.ResponseWriter, r *http.Request, status int, next, notice string) {
	nonce := ""
	if c, err := r.Cookie(DevLoginCSRFCookie); err == nil && validNonce(c.Value) {
		nonce = c.Value
	} else {
		b := make([]byte, 16)
		if _, err := io.ReadFull(rand.Reader, b); err != nil {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		nonce = base64.RawURLEncoding.EncodeToString(b)
		http.SetCookie(w, &http.Cookie{
			Name:     DevLoginCSRFCookie,
			Value:    nonce,
			Path:     "/",
			HttpOnly: true,
			SameSite: http.SameSiteStrictMode,
			Secure:   r.TLS != nil,
		})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = devLoginTmpl.Execute(w, struct {
		Next, CSRF, Notice string
		Users              []User
	}{next, newCSRFToken(d.secret, d.now(), "dev-login", nonce), notice, d.users})
}

// validNonce reports a CSRF cookie value as form sets it: 16 bytes in
// unpadded base64url.
func validNonce(v string) bool {
	b, err := base64.RawURLEncoding.DecodeString(v)
	return err == nil && len(b) == 16
}

// localPath returns next when it is a path on this site, and "/"
// otherwise. A browser reads a Location leniently: it drops tabs and
// line breaks, takes a backslash for a slash and "//host" for another
// site, so "/\t/evil.example" and "/\\evil.example" lead away. Only a path
// that url.Parse reads without scheme or host, starting with one slash,
// with no control character and no backslash anywhere, is kept.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsRune(next, '\\') ||
		strings.IndexFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		!strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return next
}

// SignedInUser returns the user whose sign-in cookie r carries, or nil.
func (d *DevLogin) SignedInUser(r *http.Request) (*User, error) {
	c, err := r.Cookie(DevLoginCookie)
	if errors.Is(err, http.ErrNoCookie) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 3 || !hmac.Equal([]byte(parts[2]), []byte(d.mac(parts[0], parts[1]))) {
		return nil, nil
	}
	sec, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return nil, nil
	}
	at := time.Unix(sec, 0)
	if d.now().Sub(at) > d.ttl {
		return nil, nil
	}
	u, ok := d.user(parts[0])
	if !ok {
		return nil, nil
	}
	u.AuthenticatedAt = at
	return &u, nil
}

func (d *DevLogin) user(id string) (User, bool) {
	for _, u := range d.users {
		if u.ID == id && id != "" {
			return u, true
		}
	}
	return User{}, false
}

func (d *DevLogin) mac(id, at string) string {
	m := hmac.New(sha256.New, d.secret)
	m.Write([]byte(strconv.Itoa(len(id)) + ":" + id + "|" + at))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
