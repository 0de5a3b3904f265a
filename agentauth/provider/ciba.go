package provider

import (
	"context"
	"fmt"
	"net/url"
	"runtime/debug"
	"slices"
	"time"

	"github.com/agentcap/agentcap/agentauth/store"
)

// Notifier reaches a user out of band for CIBA approvals (protocol §7.2):
// a push notification, an e-mail, an in-app message. The application
// implements it; setting Config.Notifier offers "ciba" in discovery.
//
// Notify is called in a goroutine of its own, after the request was
// answered, with a context that ends after NotifyTimeout: whether a user
// is reached, and how long that takes, never shows in the answer to the
// client (CIBA Core §14, user enumeration). Its error is logged. At most
// 64 calls run at once: a notification due while that many are under
// way is skipped and logged, its request listed on the user's page
// unannounced, as past RateLimits.NotifyPerUser.
type Notifier interface {
	Notify(ctx context.Context, n Notification) error
}

// NotifierFunc is a Notifier made of a function.
type NotifierFunc func(ctx context.Context, n Notification) error

// Notify implements Notifier.
func (f NotifierFunc) Notify(ctx context.Context, n Notification) error { return f(ctx, n) }

// Notification is a CIBA approval request for one user. AgentName,
// HostName and BindingMessage were written by the agent's side: show them
// as untrusted text (protocol §8.10), never as markup or links.
type Notification struct {
	// UserID is the user to reach.
	UserID string
	// ApprovalID names the request.
	ApprovalID string
	// Kind is "registration", "capabilities", "reactivation", or
	// "confirmation" for one call of the agent that the user must
	// confirm (Capabilities then names its capability).
	Kind string
	// AgentName and HostName describe the agent; NewHost marks a host no
	// user has approved yet.
	AgentName, HostName string
	NewHost             bool
	// Capabilities are the capabilities requested.
	Capabilities []string
	// BindingMessage is the message the agent shows too, ending with the
	// request's code: the user approves only if both match.
	BindingMessage string
	// ExpiresAt ends the request.
	ExpiresAt time.Time
	// ReviewURL is the approval page for this request, where the user
	// approves after a fresh sign-in (protocol §8.11).
	ReviewURL string
}

// defaultNotifyTimeout bounds one Notify call when Config.NotifyTimeout is
// zero.
const defaultNotifyTimeout = 30 * time.Second

// maxNotifying bounds the Notify calls under way. Hosts are free to make
// and each may ask for CIBA approvals, so without a bound a slow
// Notifier would let them hold any number of goroutines for up to
// NotifyTimeout each.
const maxNotifying = 64

// maxBindingRunes bounds a client's binding message. CIBA Core asks for a
// short message of plain characters; the provider appends the request's
// code to it, and both devices show the result.
const maxBindingRunes = 100

// Approval request kinds, as MethodContext and Notification name them.
const (
	KindRegistration = "registration"
	KindCapabilities = "capabilities"
	KindReactivation = "reactivation"
)

// MethodContext is what an approval method is chosen from (protocol
// §7.5): the client's hint and what the provider knows of the user.
type MethodContext struct {
	// Preferred is the client's preferred_method; "" when it gave none.
	Preferred string
	// LoginHint is the client's login_hint; "" when it gave none.
	LoginHint string
	// UserKnown reports a user the request can be addressed to: the
	// host's (or agent's) user. A login hint does not set it: whether a
	// hint names a user must not change the answer (CIBA Core §14).
	UserKnown bool
	// Kind is KindRegistration, KindCapabilities or KindReactivation.
	Kind string
	// Agent and Host are the records concerned.
	Agent *store.Agent
	Host  *store.Host
	// Methods are the methods this provider offers.
	Methods []string
}

// defaultApprovalMethod is the method choice when Policy.ApprovalMethod
// is nil: CIBA when the client prefers it, the provider offers it, and
// there is someone to address (a known user, or a login hint, resolved
// or not); device authorization, the baseline every client supports
// (§7.1), otherwise.
func defaultApprovalMethod(_ context.Context, c MethodContext) string {
	if c.Preferred == store.MethodCIBA && slices.Contains(c.Methods, store.MethodCIBA) && (c.UserKnown || c.LoginHint != "") {
		return store.MethodCIBA
	}
	return store.MethodDeviceAuthorization
}

// methods are the approval methods the provider offers.
func (p *Provider) methods() []string {
	if p.notifier == nil {
		return []string{store.MethodDeviceAuthorization}
	}
	return []string{store.MethodDeviceAuthorization, store.MethodCIBA}
}

// chooseMethod picks the method of a new approval request and, for CIBA,
// the user it is addressed to ("" when a login hint named nobody: the
// request then waits for no one and expires, answered exactly like one
// that reached a user).
func (p *Provider) chooseMethod(ctx context.Context, rq approvalRequest) (method, userID string, err error) {
	known := rq.agent.UserID
	if known == "" && rq.host != nil {
		known = rq.host.UserID
	}
	mc := MethodContext{Preferred: rq.hints.preferred, LoginHint: rq.hints.loginHint, UserKnown: known != "",
		Kind: rq.kind, Agent: rq.agent, Host: rq.host, Methods: p.methods()}
	choose := p.policy.ApprovalMethod
	if choose == nil {
		choose = defaultApprovalMethod
	}
	method = choose(ctx, mc)
	if method != store.MethodCIBA || p.notifier == nil || (known == "" && mc.LoginHint == "") {
		return store.MethodDeviceAuthorization, "", nil
	}
	// Each CIBA request may interrupt a person: a host gets a budget.
	if err := p.limits.ciba(ctx, rq.agent.HostID); err != nil {
		return "", "", err
	}
	if known != "" {
		// A host linked to a user asks that user, whatever the hint
		// says: nobody else may approve its agents.
		return method, known, nil
	}
	if p.resolveHint != nil {
		id, err := p.resolveHint(ctx, mc.LoginHint)
		if err != nil {
			return "", "", internalError(fmt.Errorf("resolving a login hint: %w", err))
		}
		return method, id, nil
	}
	return method, "", nil
}

// cibaBindingMessage is the message both devices show: the client's
// words, or a default naming the agent, followed by the request's code.
func cibaBindingMessage(client, agentName, code string) string {
	if client == "" {
		client = "Connect " + displayText(agentName, 40)
	}
	return client + " [" + code + "]"
}

// notify tells the addressed user of a CIBA request, in the background
// (see Notifier), within the per-user notification budget: past it the
// request stays listed on the user's page, unannounced, so that a host
// cannot flood a person with prompts (notification fatigue, CIBA Core
// §14).
func (p *Provider) notify(ctx context.Context, rq approvalRequest, ap *store.Approval) {
	if ap.UserID == "" {
		p.logger.InfoContext(ctx, "agentauth/provider: CIBA request for a login hint that names no user", "approval", ap.ID)
		return
	}
	n := Notification{
		UserID: ap.UserID, ApprovalID: ap.ID, Kind: rq.kind, AgentName: rq.agent.Name,
		BindingMessage: ap.BindingMessage, ExpiresAt: ap.ExpiresAt,
		ReviewURL: p.verificationURI + "?request=" + url.QueryEscape(ap.ID),
	}
	if rq.host != nil {
		n.HostName, n.NewHost = rq.host.Name, rq.host.Status == "pending"
	}
	for _, c := range rq.caps {
		n.Capabilities = append(n.Capabilities, c.Name)
	}
	select {
	case p.notifySlots <- struct{}{}:
	default:
		p.logger.WarnContext(ctx, "agentauth/provider: CIBA notification skipped: too many under way", "approval", ap.ID, "under_way", maxNotifying)
		return
	}
	bg := context.WithoutCancel(ctx)
	p.notifying.Add(1)
	go func() {
		defer p.notifying.Done()
		defer func() { <-p.notifySlots }()
		defer func() {
			if r := recover(); r != nil {
				p.logger.ErrorContext(bg, "agentauth/provider: Notify panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			}
		}()
		nctx, cancel := context.WithTimeout(bg, p.notifyTimeout)
		defer cancel()
		if err := p.limits.notify(nctx, n.UserID); err != nil {
			p.logger.WarnContext(nctx, "agentauth/provider: CIBA notification skipped: the user's budget is spent", "approval", n.ApprovalID, "user", n.UserID)
			return
		}
		if err := p.notifier.Notify(nctx, n); err != nil {
			p.logger.ErrorContext(nctx, "agentauth/provider: CIBA notification failed", "approval", n.ApprovalID, "error", err.Error())
		}
	}()
}

// WaitNotifications waits until every CIBA notification started so far
// has returned: for a graceful shutdown, and for tests.
func (p *Provider) WaitNotifications() { p.notifying.Wait() }
