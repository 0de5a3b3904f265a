package provider

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/agentcap/agentcap/agentauth/store"
)

// Passkeys are the provider's own proof of presence (docs/presence.md):
// a WebAuthn assertion with user verification, from one of the user's
// registered passkeys, over a challenge that binds it to the one
// decision being made. The WebAuthn ceremonies themselves (CBOR,
// attestation, signatures, counters) are the go-webauthn library's.
const (
	// presenceLife bounds a presence challenge and a registration
	// ceremony: issued, answered by the authenticator and posted back
	// within it.
	presenceLife = 5 * time.Minute
	// maxPasskeys bounds the passkeys of one user.
	maxPasskeys = 10
	// maxCredentialBytes bounds the JSON of one credential the browser
	// posts.
	maxCredentialBytes = 16 << 10
	// maxPasskeyName bounds a passkey's name, in bytes.
	maxPasskeyName = 64
)

// The built-in presence step's failures. The page and the user API say
// which, so that a person knows what to do next.
var (
	errNoPasskey        = errors.New("you have no passkey yet: add one first")
	errPresenceExpired  = errors.New("the passkey request has expired: start again")
	errPresenceReplayed = errors.New("this passkey answer was already used")
	errPresenceInvalid  = errors.New("the passkey did not confirm this request")
	errPasskeysDisabled = errors.New("passkeys are not available on this provider")
)

// newWebAuthn sets up the relying party: the approval page's host name is
// its id, and the pages' origins (the approval page's, the issuer's) are
// where ceremonies may run. Browsers refuse WebAuthn on an IP address, so
// a page served on one gets no passkeys; the returned reason says why.
func newWebAuthn(verificationURI, issuerOrigin, name string) (*webauthn.WebAuthn, string) {
	u, err := url.Parse(verificationURI)
	if err != nil {
		return nil, err.Error()
	}
	host := u.Hostname()
	if net.ParseIP(host) != nil {
		return nil, fmt.Sprintf("passkeys need the approval page on a host name, and this provider serves it at the address %s (use localhost instead of 127.0.0.1)", host)
	}
	origins := []string{u.Scheme + "://" + u.Host}
	if issuerOrigin != origins[0] {
		origins = append(origins, issuerOrigin)
	}
	wa, err := webauthn.New(&webauthn.Config{
		RPID:          host,
		RPDisplayName: name,
		RPOrigins:     origins,
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:      protocol.ResidentKeyRequirementRequired,
			UserVerification: protocol.VerificationRequired,
		},
		AttestationPreference: protocol.PreferNoAttestation,
	})
	if err != nil {
		return nil, err.Error()
	}
	return wa, ""
}

// passkeyUser is a user with their passkeys, as the WebAuthn library
// sees them.
type passkeyUser struct {
	u      *User
	handle []byte
	keys   []*store.Passkey
	creds  []webauthn.Credential
}

// WebAuthnID implements webauthn.User.
func (pu *passkeyUser) WebAuthnID() []byte { return pu.handle }

// WebAuthnName implements webauthn.User.
func (pu *passkeyUser) WebAuthnName() string { return pu.u.ID }

// WebAuthnDisplayName implements webauthn.User.
func (pu *passkeyUser) WebAuthnDisplayName() string {
	if pu.u.Name != "" {
		return pu.u.Name
	}
	return pu.u.ID
}

// WebAuthnCredentials implements webauthn.User.
func (pu *passkeyUser) WebAuthnCredentials() []webauthn.Credential { return pu.creds }

// key returns the stored passkey of credential id, nil if it is not u's.
func (pu *passkeyUser) key(id []byte) *store.Passkey {
	enc := base64.RawURLEncoding.EncodeToString(id)
	for _, k := range pu.keys {
		if k.ID == enc {
			return k
		}
	}
	return nil
}

// passkeyUser loads u's passkeys. A user without any gets a fresh random
// handle, which their first passkey keeps.
func (p *Provider) passkeyUser(ctx context.Context, u *User) (*passkeyUser, error) {
	keys, err := p.store.ListPasskeys(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	pu := &passkeyUser{u: u, keys: keys}
	for _, k := range keys {
		var c webauthn.Credential
		if err := json.Unmarshal(k.Credential, &c); err != nil {
			return nil, fmt.Errorf("passkey %s of %s: %w", k.ID, u.ID, err)
		}
		pu.creds = append(pu.creds, c)
		if pu.handle == nil {
			if pu.handle, err = base64.RawURLEncoding.DecodeString(k.UserHandle); err != nil {
				return nil, fmt.Errorf("passkey %s of %s: user handle: %w", k.ID, u.ID, err)
			}
		}
	}
	if pu.handle == nil {
		pu.handle = make([]byte, 32)
		if _, err := io.ReadFull(p.rand, pu.handle); err != nil {
			return nil, err
		}
	}
	return pu, nil
}

// seal makes a value the provider hands to a browser and takes back
// unchanged: payload.issued.mac, the MAC (csrfMAC, under
// Config.PageSecret) binding the payload to label and the user.
func (p *Provider) seal(label, userID string, payload []byte) string {
	enc := base64.RawURLEncoding.EncodeToString(payload)
	issued := strconv.FormatInt(p.now().Unix(), 10)
	return enc + "." + issued + "." + csrfMAC(p.pageSecret, label, issued, userID, enc)
}

// unseal returns the payload of a sealed value of label for userID made
// at most presenceLife ago; errPresenceExpired when it is older, and
// errPresenceInvalid when it is not one of the provider's.
func (p *Provider) unseal(label, userID, token string) ([]byte, error) {
	payload, issued, err := p.openSealed(label, userID, token)
	if err != nil {
		return nil, errPresenceInvalid
	}
	if age := p.now().Sub(issued); age > presenceLife || age < -time.Minute {
		return nil, errPresenceExpired
	}
	return payload, nil
}

// passkeyRegistration begins adding a passkey for u: the browser's
// creation options, and the sealed ceremony that finishPasskey takes
// back. A user who has passkeys already must confirm the addition with
// one of them: the returned presence request asks for it (see
// addPasskeyBinding).
func (p *Provider) passkeyRegistration(ctx context.Context, u *User) (*protocol.CredentialCreation, string, *presenceRequest, error) {
	if p.webauthn == nil {
		return nil, "", nil, errPasskeysDisabled
	}
	pu, err := p.passkeyUser(ctx, u)
	if err != nil {
		return nil, "", nil, err
	}
	if len(pu.keys) >= maxPasskeys {
		return nil, "", nil, fmt.Errorf("%w: you have %d passkeys, the most one person may have; remove one first", ErrInvalidDecision, len(pu.keys))
	}
	excl := make([]protocol.CredentialDescriptor, len(pu.creds))
	for i, c := range pu.creds {
		excl[i] = c.Descriptor()
	}
	opts, session, err := p.webauthn.BeginRegistration(pu, webauthn.WithExclusions(excl),
		webauthn.WithResidentKeyRequirement(protocol.ResidentKeyRequirementRequired))
	if err != nil {
		return nil, "", nil, err
	}
	raw, err := json.Marshal(session)
	if err != nil {
		return nil, "", nil, err
	}
	token := p.seal("passkey-registration", u.ID, raw)
	var confirm *presenceRequest
	if len(pu.keys) > 0 {
		if confirm, err = p.presenceRequestFor(ctx, u, addPasskeyBinding(token)); err != nil {
			return nil, "", nil, err
		}
	}
	return opts, token, confirm, nil
}

// addPasskeyBinding binds the presence that an added passkey needs to
// its registration ceremony.
func addPasskeyBinding(registration string) []byte {
	sum := sha256.Sum256([]byte("add passkey\x00" + registration))
	return sum[:]
}

// finishPasskey verifies the browser's answer to a registration ceremony
// and stores the passkey under name. The name is cut to 64 bytes; empty
// means "passkey N". A user who has passkeys already confirms the
// addition with one: presenceToken and presenceCredential answer the
// presence request passkeyRegistration returned.
func (p *Provider) finishPasskey(ctx context.Context, u *User, token, name string, credential []byte, presenceToken string, presenceCredential []byte) (*store.Passkey, error) {
	if p.webauthn == nil {
		return nil, errPasskeysDisabled
	}
	raw, err := p.unseal("passkey-registration", u.ID, token)
	if err != nil {
		return nil, err
	}
	var session webauthn.SessionData
	if err := json.Unmarshal(raw, &session); err != nil {
		return nil, errPresenceInvalid
	}
	pu, err := p.passkeyUser(ctx, u)
	if err != nil {
		return nil, err
	}
	switch {
	case len(pu.keys) == 0:
		// The ceremony's handle stands for a user who had no passkey;
		// every later passkey shares it.
		pu.handle = session.UserID
	case !bytes.Equal(pu.handle, session.UserID):
		return nil, errPresenceInvalid
	default:
		// An added passkey needs one the user has already.
		if err := p.verifyPresence(ctx, u, addPasskeyBinding(token), presenceToken, presenceCredential); err != nil {
			return nil, err
		}
	}
	if len(pu.keys) >= maxPasskeys {
		return nil, fmt.Errorf("%w: you have %d passkeys, the most one person may have; remove one first", ErrInvalidDecision, len(pu.keys))
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(credential)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errPresenceInvalid, err)
	}
	cred, err := p.webauthn.CreateCredential(pu, session, parsed)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errPresenceInvalid, err)
	}
	if !cred.Flags.UserVerified {
		return nil, fmt.Errorf("%w: the authenticator did not verify you", errPresenceInvalid)
	}
	body, err := json.Marshal(cred)
	if err != nil {
		return nil, err
	}
	name = strings.TrimSpace(name)
	if len(name) > maxPasskeyName {
		name = strings.ToValidUTF8(name[:maxPasskeyName], "")
	}
	if name == "" {
		name = fmt.Sprintf("passkey %d", len(pu.keys)+1)
	}
	k := &store.Passkey{
		ID:         base64.RawURLEncoding.EncodeToString(cred.ID),
		UserID:     u.ID,
		UserHandle: base64.RawURLEncoding.EncodeToString(pu.handle),
		Name:       name,
		Credential: body,
		CreatedAt:  p.now(),
	}
	if err := p.store.CreatePasskey(ctx, k); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("%w: this passkey is registered already", ErrInvalidDecision)
		}
		return nil, err
	}
	return k, nil
}

// presenceRequest is a presence challenge: the sealed nonce the answer
// comes back with, and the browser's request options.
type presenceRequest struct {
	Token   string                        `json:"token"`
	Options *protocol.CredentialAssertion `json:"options"`
}

// presenceChallenge is the WebAuthn challenge of a presence request: an
// HMAC under Config.PageSecret of the user, the request's random nonce
// and what is being decided (binding), so that an answer confirms that
// decision of that user and nothing else.
func (p *Provider) presenceChallenge(userID string, nonce, binding []byte) []byte {
	m := hmac.New(sha256.New, p.pageSecret)
	for _, s := range [][]byte{[]byte("agentcap presence"), []byte(userID), nonce, binding} {
		fmt.Fprintf(m, "%d:", len(s))
		m.Write(s)
	}
	return m.Sum(nil)
}

// presenceRequestFor issues a presence challenge to u for binding.
func (p *Provider) presenceRequestFor(ctx context.Context, u *User, binding []byte) (*presenceRequest, error) {
	if p.webauthn == nil {
		return nil, errPasskeysDisabled
	}
	pu, err := p.passkeyUser(ctx, u)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, 16)
	if _, err := io.ReadFull(p.rand, nonce); err != nil {
		return nil, err
	}
	opts := []webauthn.LoginOption{
		webauthn.WithChallenge(p.presenceChallenge(u.ID, nonce, binding)),
		webauthn.WithUserVerification(protocol.VerificationRequired),
	}
	if len(pu.creds) > 0 {
		allow := make([]protocol.CredentialDescriptor, len(pu.creds))
		for i, c := range pu.creds {
			allow[i] = c.Descriptor()
		}
		opts = append(opts, webauthn.WithAllowedCredentials(allow))
	}
	// Discoverable: a user who adds their first passkey on the same page
	// answers this very request with it.
	assertion, _, err := p.webauthn.BeginDiscoverableLogin(opts...)
	if err != nil {
		return nil, err
	}
	return &presenceRequest{Token: p.seal("presence", u.ID, nonce), Options: assertion}, nil
}

// verifyPresence checks the browser's answer (credential, the JSON of a
// PublicKeyCredential) to the presence request token for binding: an
// assertion with user verification by one of u's passkeys over the
// challenge of that request, made within presenceLife and never used
// before. It records the passkey's use.
func (p *Provider) verifyPresence(ctx context.Context, u *User, binding []byte, token string, credential []byte) error {
	if p.webauthn == nil {
		return errPasskeysDisabled
	}
	if token == "" || len(credential) == 0 {
		return errPresenceInvalid
	}
	if len(credential) > maxCredentialBytes {
		return fmt.Errorf("%w: the answer is too large", errPresenceInvalid)
	}
	nonce, err := p.unseal("presence", u.ID, token)
	if err != nil {
		return err
	}
	pu, err := p.passkeyUser(ctx, u)
	if err != nil {
		return err
	}
	if len(pu.keys) == 0 {
		return errNoPasskey
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(credential)
	if err != nil {
		return fmt.Errorf("%w: %v", errPresenceInvalid, err)
	}
	// The answering passkey must be one of u's; its own user handle is
	// the one it signs with (two first passkeys added at once may hold
	// different ones).
	used := pu.key(parsed.RawID)
	if used == nil {
		return fmt.Errorf("%w: the passkey is not one of yours", errPresenceInvalid)
	}
	if pu.handle, err = base64.RawURLEncoding.DecodeString(used.UserHandle); err != nil {
		return fmt.Errorf("passkey %s of %s: user handle: %w", used.ID, u.ID, err)
	}
	session := webauthn.SessionData{
		Challenge:        base64.RawURLEncoding.EncodeToString(p.presenceChallenge(u.ID, nonce, binding)),
		RelyingPartyID:   p.webauthn.Config.RPID,
		UserID:           pu.handle,
		UserVerification: protocol.VerificationRequired,
	}
	cred, err := p.webauthn.ValidateLogin(pu, session, parsed)
	if err != nil {
		return fmt.Errorf("%w: %v", errPresenceInvalid, err)
	}
	// Once: the nonce is spent by the first answer that verifies. (An
	// answer used again also fails the counter check below; this says
	// why.)
	if err := p.store.UseNonce(ctx, "presence:"+base64.RawURLEncoding.EncodeToString(nonce), p.now().Add(presenceLife+time.Minute)); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return errPresenceReplayed
		}
		return err
	}
	if cred.Authenticator.CloneWarning {
		return fmt.Errorf("%w: the passkey's signature counter went back, as a cloned one's does", errPresenceInvalid)
	}
	body, err := json.Marshal(cred)
	if err != nil {
		return err
	}
	return p.store.UsePasskey(ctx, u.ID, used.ID, body, p.now())
}

// decisionBinding is what a presence answer for a decision on ap binds
// to: the request, and either the call it confirms (its capability and a
// digest of its preview) or the capabilities allowed with the
// constraints the user set (nil allowed: every requested capability).
func decisionBinding(ap *Approval, allowed []string, cons map[string]map[string]json.RawMessage) []byte {
	v := struct {
		Approval    string                                `json:"approval"`
		Capability  string                                `json:"capability,omitempty"`
		Preview     []byte                                `json:"preview,omitempty"`
		Allowed     []string                              `json:"allowed,omitempty"`
		Constraints map[string]map[string]json.RawMessage `json:"constraints,omitempty"`
	}{Approval: ap.ID}
	if ap.Call != nil {
		sum := sha256.Sum256(ap.Call.Preview)
		v.Capability, v.Preview = ap.Call.Capability, sum[:]
	} else {
		if allowed == nil {
			// As in Decide: no list allows every requested capability.
			for _, c := range ap.Capabilities {
				allowed = append(allowed, c.Name)
			}
		}
		v.Allowed = slices.Sorted(slices.Values(allowed))
		v.Constraints = compactConstraints(cons)
	}
	return bindingDigest("decision", v)
}

// grantBinding is what a presence answer for granting reqs to agentID
// binds to.
func grantBinding(agentID string, reqs []GrantRequest) []byte {
	type grant struct {
		Name        string                     `json:"name"`
		Constraints map[string]json.RawMessage `json:"constraints,omitempty"`
	}
	gs := make([]grant, len(reqs))
	for i, r := range reqs {
		gs[i] = grant{r.Name, compactConstraints(map[string]map[string]json.RawMessage{"": r.Constraints})[""]}
	}
	slices.SortFunc(gs, func(a, b grant) int { return strings.Compare(a.Name, b.Name) })
	return bindingDigest("grant", struct {
		Agent  string  `json:"agent"`
		Grants []grant `json:"grants"`
	}{agentID, gs})
}

// compactConstraints drops insignificant whitespace from every
// constraint, so that the same limits bind alike however they were
// typed.
func compactConstraints(cons map[string]map[string]json.RawMessage) map[string]map[string]json.RawMessage {
	if len(cons) == 0 {
		return nil
	}
	out := make(map[string]map[string]json.RawMessage, len(cons))
	for c, fields := range cons {
		m := make(map[string]json.RawMessage, len(fields))
		for f, raw := range fields {
			var b bytes.Buffer
			if json.Compact(&b, raw) != nil {
				// Not JSON: bound as the text it is.
				m[f], _ = json.Marshal(string(raw))
				continue
			}
			m[f] = b.Bytes()
		}
		out[c] = m
	}
	return out
}

func bindingDigest(kind string, v any) []byte {
	body, err := json.Marshal(v)
	if err != nil {
		// Every value above is plain data: this cannot fail.
		panic(err)
	}
	sum := sha256.Sum256(append([]byte(kind+"\x00"), body...))
	return sum[:]
}
