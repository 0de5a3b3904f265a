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
// Config.SignedInUser and that path to Config.SignInURL.
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

var devLoginTmpl = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Development sign-in</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:30rem;margin:3rem auto}button{font:inherit;margin:.3rem;padding:.5rem 1.2rem}</style></head>
<body><h1>Development sign-in</h1><p>No password: this sign-in is for development only.</p>
<form method="post" action=""><input type="hidden" name="next" value="{{.Next}}">
{{range .Users}}<button type="submit" name="user" value="{{.ID}}" id="login-{{.ID}}">Sign in as {{.Name}}</button>{{end}}
</form></body></html>`))

// ServeHTTP shows the user buttons (GET) and signs the chosen user in
// (POST), then redirects to the "next" parameter, a path on this site.
func (d *DevLogin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	next := r.FormValue("next")
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		next = "/"
	}
	switch r.Method {
	case http.MethodGet:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = devLoginTmpl.Execute(w, struct {
			Next  string
			Users []User
		}{next, d.users})
	case http.MethodPost:
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
