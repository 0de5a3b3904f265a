package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
)

// PathConfirmation is where an agent polls for a person's decision about
// one of its calls (see Provider.HumanConfirmer), relative to the
// issuer: GET with ?id= and a fresh agent JWT.
const PathConfirmation = "/agent/confirmation"

// KindConfirmation is the Kind of an approval request that asks a person
// to confirm one call of an agent.
const KindConfirmation = "confirmation"

// HumanConfirmer returns the provider as a core.HumanConfirmer, for the
// executor of its capability locations (core.ConfirmationConfig.Human),
// or nil when Config.Confirmer is not set.
//
// A call that needs a person's confirmation becomes an approval request
// of kind "confirmation", addressed to the agent's user (an agent's own
// user, else its host's; an autonomous agent has none and is refused
// with 403 unauthorized) and shown on the approval page and the user's
// "Your agents" page, with the preview. The executor's
// ConfirmationConfig.Subject must name the agent id. The caller is told
// to poll {issuer}/agent/confirmation?id=..., with a fresh agent JWT
// whose aud is the issuer or the location of the call; once the user
// confirms (with the extra step webauthn-strength capabilities ask for),
// the first poll gets a confirmation token issued by Config.Confirmer.
func (p *Provider) HumanConfirmer() core.HumanConfirmer {
	if p.confirmer == nil {
		return nil
	}
	return humanConfirmer{p}
}

type humanConfirmer struct{ p *Provider }

// RequestHumanConfirmation implements core.HumanConfirmer.
func (h humanConfirmer) RequestHumanConfirmation(ctx context.Context, r core.HumanConfirmationRequest) (*core.HumanConfirmationPending, error) {
	p := h.p
	agent, err := p.store.GetAgent(ctx, r.Binding.Subject)
	if errors.Is(err, store.ErrNotFound) {
		return nil, agentcap.NewError(agentcap.CodeUnauthorized, "this call needs a person's confirmation, and no agent of this provider made it")
	}
	if err != nil {
		return nil, err
	}
	host, err := p.store.GetHost(ctx, agent.HostID)
	if err != nil {
		return nil, err
	}
	userID := agent.UserID
	if userID == "" {
		userID = host.UserID
	}
	if agent.Mode == agentcap.ModeAutonomous || userID == "" {
		return nil, agentcap.NewError(agentcap.CodeUnauthorized, "this call needs a person's confirmation, and the agent acts for no user")
	}
	id, err := p.newID("apr_")
	if err != nil {
		return nil, err
	}
	name := r.Definition.Name()
	now := p.now()
	for range 5 {
		code, err := p.newUserCode()
		if err != nil {
			return nil, err
		}
		ap := &store.Approval{
			ID:           id,
			Method:       store.MethodDeviceAuthorization,
			AgentID:      agent.ID,
			HostID:       agent.HostID,
			UserID:       userID,
			Capabilities: []store.RequestedCapability{{Name: name}},
			UserCode:     code,
			Status:       store.ApprovalPending,
			Interval:     p.pollInterval / 2,
			ExpiresAt:    now.Add(p.approvalLife),
			Call: &store.Call{Capability: name, Arguments: r.Binding.Arguments, Audience: r.Binding.Audience,
				Preview: r.Preview},
			CreatedAt: now,
		}
		err = p.store.CreateApproval(ctx, ap)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if p.notifier != nil {
			p.notify(ctx, approvalRequest{kind: KindConfirmation, agent: agent, host: host, caps: ap.Capabilities}, ap)
		}
		formatted := formatUserCode(code)
		return &core.HumanConfirmationPending{
			Approval: core.ConfirmationApproval{
				Method:                  store.MethodDeviceAuthorization,
				VerificationURI:         p.verificationURI,
				VerificationURIComplete: p.verificationURI + "?code=" + url.QueryEscape(formatted),
				UserCode:                formatted,
				ExpiresIn:               int(p.approvalLife / time.Second),
				Interval:                int(p.pollInterval / time.Second),
			},
			StatusURL: p.issuer + PathConfirmation + "?id=" + url.QueryEscape(id),
		}, nil
	}
	return nil, errors.New("provider: no free user code after 5 draws")
}

// confirmationJSON is the answer of a poll once the person confirmed.
type confirmationJSON struct {
	Status       string            `json:"status"`
	Confirmation map[string]string `json:"confirmation"`
}

// confirmationStatus serves GET {issuer}/agent/confirmation?id=: the
// agent that made the call polls, RFC 8628 style, for the person's
// decision, and the first poll after an approval gets the token.
func (p *Provider) confirmationStatus(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	token, ok := auth.BearerToken(r.Header.Get("Authorization"))
	switch {
	case !ok:
		return agentcap.NewError(agentcap.CodeAuthenticationRequired, "an agent JWT is required")
	case token == "":
		return errMalformedBearer
	}
	sess, err := p.session(ctx, token)
	if err != nil {
		return err
	}
	notFound := agentcap.NewError(agentcap.CodeConfirmationNotFound, "no request to confirm a call of this agent has this id")
	id := r.URL.Query().Get("id")
	if id == "" || p.confirmer == nil {
		return notFound
	}
	ap, err := p.store.GetApproval(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (ap.Call == nil || ap.AgentID != sess.Agent.ID)) {
		return notFound
	}
	if err != nil {
		return internalError(err)
	}
	// The token is for the provider, or for the location of the call:
	// where the agent's client sent the call.
	if !slices.Contains(sess.Claims.Audience, p.issuer) && !slices.Contains(sess.Claims.Audience, ap.Call.Audience) {
		return agentcap.NewError(agentcap.CodeInvalidJWT, "agent JWT audience is neither this issuer nor the call's location")
	}
	now := p.now()
	ap, slow, err := p.store.PollApproval(ctx, id, now)
	if err != nil {
		return internalError(err)
	}
	switch {
	case slow:
		return agentcap.NewError(agentcap.CodeSlowDown, "polling too often; wait the approval's interval between polls")
	case ap.Status == store.ApprovalPending:
		return agentcap.NewError(agentcap.CodeAuthorizationPending, "the person has not decided yet")
	case ap.Status == store.ApprovalDenied:
		return agentcap.NewError(agentcap.CodeConfirmationDenied, "the person refused this call")
	case ap.Status == store.ApprovalUsed:
		return agentcap.NewError(agentcap.CodeConfirmationUsed, "the confirmation of this call was handed out already")
	case ap.Status != store.ApprovalApproved || !now.Before(ap.ExpiresAt):
		return agentcap.NewError(agentcap.CodeExpiredToken, "the request to confirm this call expired")
	}
	// Issued first, then claimed: of concurrent polls one hands its token
	// out, and the others' tokens, which nobody saw, confirm nothing.
	c, err := p.confirmer.Issue(ctx, core.ConfirmationBinding{Subject: ap.AgentID, Capability: ap.Call.Capability,
		Arguments: ap.Call.Arguments, Audience: ap.Call.Audience, Human: true})
	if err != nil {
		return internalError(err)
	}
	if err := p.store.DecideApproval(ctx, id, store.ApprovalUsed, ap.UserID, now); err != nil {
		if errors.Is(err, store.ErrStatus) {
			return agentcap.NewError(agentcap.CodeConfirmationUsed, "the confirmation of this call was handed out already")
		}
		return internalError(err)
	}
	p.record(ctx, audit.Record{Event: audit.EventConfirmationIssued, UserID: ap.UserID, AgentID: ap.AgentID, HostID: ap.HostID,
		Capability: ap.Call.Capability, ConfirmationID: confirm.TokenID(c.Token), Detail: "confirmed by the user"})
	writeJSON(w, http.StatusOK, confirmationJSON{Status: store.ApprovalApproved, Confirmation: core.ConfirmationJSON(c)})
	return nil
}

// CallToConfirm is the call an approval request of kind "confirmation"
// asks the user to confirm.
type CallToConfirm struct {
	// Capability is the capability called.
	Capability string
	// Preview is the call's preview, computed by the application from
	// the agent's arguments: what the call would do.
	Preview json.RawMessage
}

// PreviewItem is one member of a preview, as the approval page shows it.
type PreviewItem struct {
	// Name is the member's name, Value its value: text as it is, other
	// JSON values as JSON.
	Name, Value string
}

// Items returns the members of an object preview in their order, or nil
// for a preview that is not an object (the page then shows it as JSON).
func (c *CallToConfirm) Items() []PreviewItem {
	dec := json.NewDecoder(bytes.NewReader(c.Preview))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []PreviewItem
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		item := PreviewItem{Name: k.(string), Value: string(v)}
		var s string
		if json.Unmarshal(v, &s) == nil {
			item.Value = s
		}
		out = append(out, item)
	}
	return out
}
