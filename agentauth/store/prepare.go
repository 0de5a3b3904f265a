package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
)

// The functions in this file are shared by every Store implementation, so
// that all of them accept, refuse and normalize the same records.

// PrepareHost validates h and returns the normalized copy a Store keeps:
// times in UTC to the microsecond, CreatedAt defaulted to now, the
// thumbprint of an inline key computed or checked, UpdatedAt set to now.
func PrepareHost(h *Host, now time.Time) (*Host, error) {
	if h == nil {
		return nil, invalid("nil host")
	}
	c := cloneHost(h)
	if c.ID == "" {
		return nil, invalid("host id is empty")
	}
	if err := checkText(append([]string{c.ID, c.Name, c.JWKSURL, c.Thumbprint, c.UserID, c.OAuthClient}, c.DefaultCapabilities...)...); err != nil {
		return nil, invalid("host %q: %v", c.ID, err)
	}
	switch c.Status {
	case agentcap.StatusActive, agentcap.StatusPending, agentcap.StatusRevoked, agentcap.StatusRejected:
	default:
		return nil, invalid("host %q: status %q is not one of active, pending, revoked, rejected", c.ID, c.Status)
	}
	tp, err := keyThumbprint(c.PublicKey, c.JWKSURL, c.Thumbprint)
	if err != nil {
		return nil, invalid("host %q: %v", c.ID, err)
	}
	if tp == "" {
		return nil, invalid("host %q: a JWKS host needs the thumbprint of its signing key", c.ID)
	}
	c.Thumbprint = tp
	if err := checkCapabilityNames(c.DefaultCapabilities); err != nil {
		return nil, invalid("host %q: default capabilities: %v", c.ID, err)
	}
	c.ActivatedAt, c.ExpiresAt, c.LastUsedAt = normTimePtr(c.ActivatedAt), normTimePtr(c.ExpiresAt), normTimePtr(c.LastUsedAt)
	now = normTime(now)
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now
	}
	c.CreatedAt = normTime(c.CreatedAt)
	c.UpdatedAt = now
	return c, nil
}

// PrepareAgent validates a and its grants and returns the normalized copy
// a Store keeps, grants sorted by capability; see PrepareHost.
func PrepareAgent(a *Agent, now time.Time) (*Agent, error) {
	if a == nil {
		return nil, invalid("nil agent")
	}
	c := cloneAgent(a)
	switch {
	case c.ID == "":
		return nil, invalid("agent id is empty")
	case c.HostID == "":
		return nil, invalid("agent %q: host id is empty", c.ID)
	}
	if err := checkText(c.ID, c.Name, c.HostID, c.UserID); err != nil {
		return nil, invalid("agent %q: %v", c.ID, err)
	}
	switch c.Mode {
	case agentcap.ModeDelegated, agentcap.ModeAutonomous:
	default:
		return nil, invalid("agent %q: mode %q is not one of delegated, autonomous", c.ID, c.Mode)
	}
	if !validAgentStatus(c.Status) {
		return nil, invalid("agent %q: status %q is not one of pending, active, expired, revoked, rejected, claimed", c.ID, c.Status)
	}
	key, err := prepareAgentKey(c.AgentKey)
	if err != nil {
		return nil, invalid("agent %q: %v", c.ID, err)
	}
	c.AgentKey = key
	now = normTime(now)
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now
	}
	c.CreatedAt = normTime(c.CreatedAt)
	c.UpdatedAt = now
	c.LastUsedAt, c.ActivatedAt, c.ExpiresAt = normTimePtr(c.LastUsedAt), normTimePtr(c.ActivatedAt), normTimePtr(c.ExpiresAt)
	grants, err := PrepareGrants(c.Grants, now)
	if err != nil {
		return nil, fmt.Errorf("agent %q: %w", c.ID, err)
	}
	c.Grants = grants
	return c, nil
}

// PrepareAgentKey validates k and returns it normalized: an inline key's
// thumbprint computed or checked.
func PrepareAgentKey(k AgentKey) (AgentKey, error) {
	k, err := prepareAgentKey(k)
	if err != nil {
		return AgentKey{}, invalid("%v", err)
	}
	return k, nil
}

func prepareAgentKey(k AgentKey) (AgentKey, error) {
	if err := checkText(k.JWKSURL, k.KID, k.Thumbprint); err != nil {
		return AgentKey{}, err
	}
	k.PublicKey = cloneRaw(k.PublicKey)
	tp, err := keyThumbprint(k.PublicKey, k.JWKSURL, k.Thumbprint)
	if err != nil {
		return AgentKey{}, err
	}
	k.Thumbprint = tp
	switch {
	case k.JWKSURL != "" && k.KID == "":
		return AgentKey{}, errors.New("a JWKS key needs a kid")
	case k.JWKSURL == "" && k.KID != "":
		return AgentKey{}, errors.New("a kid is only meaningful with a JWKS URL")
	}
	return k, nil
}

// PrepareGrants validates grants and returns normalized copies sorted by
// capability, with CreatedAt and UpdatedAt set to now. A capability named
// twice is ErrInvalid.
func PrepareGrants(grants []Grant, now time.Time) ([]Grant, error) {
	now = normTime(now)
	out := make([]Grant, len(grants))
	for i, g := range grants {
		if g.Capability == "" {
			return nil, invalid("grant %d: capability is empty", i)
		}
		if !validGrantStatus(g.Status) {
			return nil, invalid("grant %q: status %q is not one of active, pending, denied", g.Capability, g.Status)
		}
		if err := checkText(g.Capability, g.GrantedBy, g.DeniedBy, g.Reason); err != nil {
			return nil, invalid("grant %q: %v", g.Capability, err)
		}
		cons, err := prepareConstraints(g.Constraints)
		if err != nil {
			return nil, fmt.Errorf("grant %q: %w", g.Capability, err)
		}
		out[i] = Grant{
			Capability:  g.Capability,
			Status:      g.Status,
			Constraints: cons,
			GrantedBy:   g.GrantedBy,
			DeniedBy:    g.DeniedBy,
			Reason:      g.Reason,
			ExpiresAt:   normTimePtr(g.ExpiresAt),
			CreatedAt:   now,
			UpdatedAt:   now,
		}
	}
	slices.SortFunc(out, func(a, b Grant) int { return compareStrings(a.Capability, b.Capability) })
	for i := 1; i < len(out); i++ {
		if out[i].Capability == out[i-1].Capability {
			return nil, invalid("capability %q is granted twice", out[i].Capability)
		}
	}
	return out, nil
}

// PrepareApproval validates a and returns the normalized copy a Store
// keeps, with UserCode and DeviceCode still in place for the Store to
// hash with HashCode.
func PrepareApproval(a *Approval, now time.Time) (*Approval, error) {
	if a == nil {
		return nil, invalid("nil approval")
	}
	c := cloneApproval(a)
	switch {
	case c.ID == "":
		return nil, invalid("approval id is empty")
	case c.Method == "":
		return nil, invalid("approval %q: method is empty", c.ID)
	case c.AgentID == "" && c.HostID == "":
		return nil, invalid("approval %q: names neither an agent nor a host", c.ID)
	case c.ExpiresAt.IsZero():
		return nil, invalid("approval %q: expires_at is not set", c.ID)
	case c.Interval < 0:
		return nil, invalid("approval %q: interval %v is negative", c.ID, c.Interval)
	}
	if err := checkText(c.ID, c.Method, c.AgentID, c.HostID, c.UserID, c.BindingMessage); err != nil {
		return nil, invalid("approval %q: %v", c.ID, err)
	}
	if !validApprovalStatus(c.Status) {
		return nil, invalid("approval %q: status %q is not one of pending, approved, denied, expired, used", c.ID, c.Status)
	}
	if c.Call != nil {
		if c.Call.Capability == "" || c.AgentID == "" {
			return nil, invalid("approval %q: a call to confirm needs its capability and agent", c.ID)
		}
		if err := checkText(c.Call.Capability, c.Call.Audience); err != nil {
			return nil, invalid("approval %q: call: %v", c.ID, err)
		}
		for name, raw := range map[string]json.RawMessage{"arguments": c.Call.Arguments, "preview": c.Call.Preview} {
			if !json.Valid(raw) {
				return nil, invalid("approval %q: call: %s is not JSON", c.ID, name)
			}
		}
	}
	for i, rc := range c.Capabilities {
		if rc.Name == "" {
			return nil, invalid("approval %q: capability %d has no name", c.ID, i)
		}
		if err := checkText(rc.Name); err != nil {
			return nil, invalid("approval %q: capability %d: %v", c.ID, i, err)
		}
		cons, err := prepareConstraints(rc.Constraints)
		if err != nil {
			return nil, fmt.Errorf("approval %q: capability %q: %w", c.ID, rc.Name, err)
		}
		c.Capabilities[i].Constraints = cons
	}
	c.Interval = c.Interval.Truncate(time.Millisecond)
	now = normTime(now)
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now
	}
	c.CreatedAt, c.ExpiresAt, c.UpdatedAt = normTime(c.CreatedAt), normTime(c.ExpiresAt), now
	c.LastPolledAt = normTimePtr(c.LastPolledAt)
	return c, nil
}

// HashCode returns the digest under which a Store keeps a user or device
// code: unpadded base64url SHA-256. An empty code has none.
func HashCode(code string) string {
	if code == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(code))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// CheckStatus returns a *StatusError unless status is one of from.
func CheckStatus(kind, id, status string, from []string) error {
	if slices.Contains(from, status) {
		return nil
	}
	return &StatusError{Kind: kind, ID: id, Status: status, Want: slices.Clone(from)}
}

// CheckAgentStatus validates an agent status a caller wants to set.
func CheckAgentStatus(status string) error {
	if !validAgentStatus(status) {
		return invalid("agent status %q is not one of pending, active, expired, revoked, rejected, claimed", status)
	}
	return nil
}

// CheckHostStatus validates a host status a caller wants to set.
func CheckHostStatus(status string) error {
	switch status {
	case agentcap.StatusActive, agentcap.StatusPending, agentcap.StatusRevoked, agentcap.StatusRejected:
		return nil
	}
	return invalid("host status %q is not one of active, pending, revoked, rejected", status)
}

// CheckGrantChange validates a grant change.
func CheckGrantChange(c GrantChange) error {
	if !validGrantStatus(c.To) {
		return invalid("grant status %q is not one of active, pending, denied", c.To)
	}
	return nil
}

// CheckCapabilityNames validates default capability names.
func CheckCapabilityNames(names []string) error {
	if err := checkCapabilityNames(names); err != nil {
		return invalid("%v", err)
	}
	return nil
}

// CheckHostKey validates a host key rotation and returns the new
// thumbprint: for an inline host (jwksURL empty) the thumbprint of
// publicKey, checked against thumbprint when given; for a JWKS host,
// thumbprint itself, with publicKey empty.
func CheckHostKey(jwksURL string, publicKey json.RawMessage, thumbprint string) (string, error) {
	if jwksURL != "" && len(publicKey) > 0 {
		return "", invalid("a JWKS host rotates by publishing its new key, not by sending it")
	}
	tp, err := keyThumbprint(publicKey, jwksURL, thumbprint)
	if err != nil {
		return "", invalid("%v", err)
	}
	if tp == "" {
		return "", invalid("a JWKS host needs the thumbprint of its new signing key")
	}
	return tp, nil
}

// Activate applies ActivateAgent to a, for Store implementations that
// read, change and write an agent under a lock.
func Activate(a *Agent, from []string, now time.Time, p Policy) error {
	if err := CheckStatus("agent", a.ID, a.Status, from); err != nil {
		return err
	}
	return activate(a, now, p)
}

func activate(a *Agent, now time.Time, p Policy) error {
	now = normTime(now)
	if p.absoluteLapsed(a, now) {
		a.Status = agentcap.StatusRevoked
		return lifetimeExceeded(a)
	}
	a.Status = agentcap.StatusActive
	a.ActivatedAt = &now
	a.ExpiresAt = p.Deadline(a)
	return nil
}

// Reactivate applies ReactivateAgent to a, replacing its grants with
// grants already prepared by PrepareGrants.
func Reactivate(a *Agent, to string, grants []Grant, now time.Time, p Policy) error {
	if to != agentcap.StatusActive && to != agentcap.StatusPending {
		return invalid("an agent is reactivated to active or pending, not %q", to)
	}
	if err := CheckStatus("agent", a.ID, a.Status, []string{agentcap.StatusExpired}); err != nil {
		return err
	}
	if p.absoluteLapsed(a, now) {
		a.Status = agentcap.StatusRevoked
		return lifetimeExceeded(a)
	}
	a.Grants = grants
	if to == agentcap.StatusActive {
		return activate(a, now, p)
	}
	a.Status = agentcap.StatusPending
	a.ExpiresAt = nil
	return nil
}

// Touch applies TouchAgent to a. When it returns an error after changing
// a.Status, the change must still be written.
func Touch(a *Agent, now time.Time, p Policy) error {
	if err := CheckStatus("agent", a.ID, a.Status, []string{agentcap.StatusActive}); err != nil {
		return err
	}
	now = normTime(now)
	switch p.Lapsed(a, now) {
	case agentcap.StatusRevoked:
		a.Status = agentcap.StatusRevoked
		return lifetimeExceeded(a)
	case agentcap.StatusExpired:
		a.Status = agentcap.StatusExpired
		return &StatusError{Kind: "agent", ID: a.ID, Status: agentcap.StatusExpired, Want: []string{agentcap.StatusActive}}
	}
	// Concurrent requests may be recorded out of order; the clock only
	// moves forward.
	if a.LastUsedAt == nil || now.After(*a.LastUsedAt) {
		a.LastUsedAt = &now
	}
	a.ExpiresAt = p.Deadline(a)
	return nil
}

// ChangeGrant applies UpdateGrantStatus to g at now.
func ChangeGrant(g *Grant, agentID string, c GrantChange, now time.Time) error {
	if err := CheckGrantChange(c); err != nil {
		return err
	}
	if err := CheckStatus("grant", agentID+"/"+g.Capability, g.Status, c.From); err != nil {
		return err
	}
	g.Status = c.To
	switch c.To {
	case agentcap.StatusActive:
		g.GrantedBy = c.By
		g.ExpiresAt = normTimePtr(c.ExpiresAt)
	case agentcap.StatusDenied:
		g.DeniedBy = c.By
	}
	if c.Reason != "" {
		g.Reason = c.Reason
	}
	g.UpdatedAt = normTime(now)
	return nil
}

// Poll applies PollApproval to a and reports slow_down.
func Poll(a *Approval, now time.Time) bool {
	now = normTime(now)
	slow := a.LastPolledAt != nil && now.Sub(*a.LastPolledAt) < a.Interval
	a.LastPolledAt = &now
	a.UpdatedAt = now
	if a.Status == ApprovalPending && !now.Before(a.ExpiresAt) {
		a.Status = ApprovalExpired
	}
	return slow
}

// Decide applies DecideApproval to a. When it returns an error after
// marking a expired, the change must still be written.
func Decide(a *Approval, to, userID string, now time.Time) error {
	now = normTime(now)
	if to == ApprovalUsed {
		if err := CheckStatus("approval", a.ID, a.Status, []string{ApprovalApproved}); err != nil {
			return err
		}
		a.Status = to
		a.UpdatedAt = now
		return nil
	}
	if to != ApprovalApproved && to != ApprovalDenied {
		return invalid("an approval is decided approved or denied, or used once approved, not %q", to)
	}
	if a.Status == ApprovalPending && !now.Before(a.ExpiresAt) {
		a.Status = ApprovalExpired
		a.UpdatedAt = now
	}
	if err := CheckStatus("approval", a.ID, a.Status, []string{ApprovalPending}); err != nil {
		return err
	}
	a.Status = to
	a.UserID = userID
	a.UpdatedAt = now
	return nil
}

func lifetimeExceeded(a *Agent) error {
	return fmt.Errorf("%w: %w", ErrLifetimeExceeded,
		&StatusError{Kind: "agent", ID: a.ID, Status: agentcap.StatusRevoked, Want: []string{agentcap.StatusActive}})
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

func validAgentStatus(s string) bool {
	switch s {
	case agentcap.StatusPending, agentcap.StatusActive, agentcap.StatusExpired,
		agentcap.StatusRevoked, agentcap.StatusRejected, agentcap.StatusClaimed:
		return true
	}
	return false
}

func validGrantStatus(s string) bool {
	switch s {
	case agentcap.StatusActive, agentcap.StatusPending, agentcap.StatusDenied:
		return true
	}
	return false
}

func validApprovalStatus(s string) bool {
	switch s {
	case ApprovalPending, ApprovalApproved, ApprovalDenied, ApprovalExpired, ApprovalUsed:
		return true
	}
	return false
}

func checkCapabilityNames(names []string) error {
	for i, n := range names {
		if n == "" {
			return fmt.Errorf("name %d is empty", i)
		}
	}
	return checkText(names...)
}

// CheckUserID refuses the empty user id, which would match every record
// without a user.
func CheckUserID(userID string) error {
	if userID == "" {
		return invalid("user id is empty")
	}
	return nil
}

// CheckName refuses a display name that cannot be stored unchanged.
func CheckName(name string) error {
	if err := checkText(name); err != nil {
		return invalid("name: %v", err)
	}
	return nil
}

// checkText refuses text that no JSON document or SQL text column can
// carry unchanged: invalid UTF-8 (it would come back as U+FFFD) and NUL.
func checkText(fields ...string) error {
	for _, f := range fields {
		if !utf8.ValidString(f) || strings.IndexByte(f, 0) >= 0 {
			return fmt.Errorf("text %q is not valid UTF-8 without NUL", f)
		}
	}
	return nil
}

// prepareConstraints validates constraints and copies them with
// surrounding whitespace trimmed from each value. Empty means none.
func prepareConstraints(cons map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	if len(cons) == 0 {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(cons))
	for k, v := range cons {
		if err := checkText(k); err != nil {
			return nil, invalid("constraint field %q: %v", k, err)
		}
		v = bytes.TrimSpace(v)
		if !json.Valid(v) {
			return nil, invalid("constraint on %q is not valid JSON", k)
		}
		out[k] = bytes.Clone(v)
	}
	if err := agentauth.ValidateConstraints(out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return out, nil
}

// keyThumbprint checks a key source and returns the thumbprint that names
// it: computed from an inline key (and compared with given), or given
// itself for a JWKS URL.
func keyThumbprint(publicKey json.RawMessage, jwksURL, given string) (string, error) {
	switch {
	case len(publicKey) > 0 && jwksURL != "":
		return "", errors.New("both a public key and a JWKS URL are set; exactly one is required")
	case len(publicKey) == 0 && jwksURL == "":
		return "", errors.New("neither a public key nor a JWKS URL is set; exactly one is required")
	case jwksURL != "":
		u, err := url.Parse(jwksURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			return "", fmt.Errorf("JWKS URL %q is not an absolute http(s) URL without credentials", jwksURL)
		}
		return given, nil
	}
	tp, err := ed25519Thumbprint(publicKey)
	if err != nil {
		return "", err
	}
	// The verifier has the last word on keys (it also refuses low-order
	// points, for one): a key it would refuse is never stored.
	if err := agentauth.NewMemoryDirectory().PutHost(&agentauth.Host{ID: "key", Status: agentcap.StatusActive, PublicKey: publicKey}); err != nil {
		return "", errors.New("public key refused by the verifier: " + strings.TrimPrefix(err.Error(), `agentauth: host "key": `))
	}
	if given != "" && given != tp {
		return "", fmt.Errorf("thumbprint %q does not match the public key (%q)", given, tp)
	}
	return tp, nil
}

// ed25519Thumbprint checks that raw is an Ed25519 public JWK and returns
// its RFC 7638 SHA-256 thumbprint.
func ed25519Thumbprint(raw json.RawMessage) (string, error) {
	var k map[string]json.RawMessage
	if err := json.Unmarshal(raw, &k); err != nil {
		return "", fmt.Errorf("public key is not a JSON object: %w", err)
	}
	if _, ok := k["d"]; ok {
		return "", errors.New("public key holds a private key")
	}
	var kty, crv, x string
	for name, dst := range map[string]*string{"kty": &kty, "crv": &crv, "x": &x} {
		if err := json.Unmarshal(k[name], dst); err != nil {
			return "", fmt.Errorf("public key member %q is missing or not a string", name)
		}
	}
	if kty != "OKP" || crv != "Ed25519" {
		return "", fmt.Errorf("public key is %s/%s, not OKP/Ed25519", kty, crv)
	}
	if b, err := base64.RawURLEncoding.Strict().DecodeString(x); err != nil || len(b) != 32 {
		return "", errors.New("public key x is not 32 bytes of unpadded base64url")
	}
	// RFC 7638: the required members in lexicographic order, no spaces.
	// x is unpadded base64url, so it needs no escaping.
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + x + `"}`))
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

func normTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func normTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	n := normTime(*t)
	return &n
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cloneRaw(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return nil
	}
	return bytes.Clone(r)
}

func cloneStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

func cloneConstraints(c map[string]json.RawMessage) map[string]json.RawMessage {
	if len(c) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(c))
	for k, v := range c {
		out[k] = bytes.Clone(v)
	}
	return out
}

func cloneHost(h *Host) *Host {
	c := *h
	c.PublicKey = cloneRaw(h.PublicKey)
	c.DefaultCapabilities = cloneStrings(h.DefaultCapabilities)
	c.ActivatedAt, c.ExpiresAt, c.LastUsedAt = cloneTime(h.ActivatedAt), cloneTime(h.ExpiresAt), cloneTime(h.LastUsedAt)
	return &c
}

func cloneGrants(gs []Grant) []Grant {
	if gs == nil {
		return nil
	}
	out := make([]Grant, len(gs))
	for i, g := range gs {
		out[i] = g
		out[i].Constraints = cloneConstraints(g.Constraints)
		out[i].ExpiresAt = cloneTime(g.ExpiresAt)
	}
	return out
}

func cloneAgent(a *Agent) *Agent {
	c := *a
	c.PublicKey = cloneRaw(a.PublicKey)
	c.Grants = cloneGrants(a.Grants)
	c.LastUsedAt, c.ActivatedAt, c.ExpiresAt = cloneTime(a.LastUsedAt), cloneTime(a.ActivatedAt), cloneTime(a.ExpiresAt)
	return &c
}

func cloneApproval(a *Approval) *Approval {
	c := *a
	c.Capabilities = make([]RequestedCapability, len(a.Capabilities))
	for i, rc := range a.Capabilities {
		c.Capabilities[i] = RequestedCapability{Name: rc.Name, Constraints: cloneConstraints(rc.Constraints)}
	}
	if len(c.Capabilities) == 0 {
		c.Capabilities = nil
	}
	c.LastPolledAt = cloneTime(a.LastPolledAt)
	if a.Call != nil {
		call := *a.Call
		call.Arguments = slices.Clone(a.Call.Arguments)
		call.Preview = slices.Clone(a.Call.Preview)
		c.Call = &call
	}
	return &c
}

// CloneAgent returns a deep copy of a.
func CloneAgent(a *Agent) *Agent { return cloneAgent(a) }

// CloneHost returns a deep copy of h.
func CloneHost(h *Host) *Host { return cloneHost(h) }

// CloneApproval returns a deep copy of a.
func CloneApproval(a *Approval) *Approval { return cloneApproval(a) }
