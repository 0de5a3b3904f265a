package provider

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/store"
)

// passkeyJSON is a passkey as the user API shows it: never its key.
func passkeyJSON(k *store.Passkey) map[string]any {
	out := map[string]any{"id": k.ID, "name": k.Name, "created_at": k.CreatedAt.UTC()}
	if k.LastUsedAt != nil {
		out["last_used_at"] = k.LastUsedAt.UTC()
	} else {
		out["last_used_at"] = nil
	}
	return out
}

// presenceAnswer reads the "presence" member of a request body: the
// token of a presence request and the browser's answer to it. ok is
// false when the member is absent.
func presenceAnswer(m map[string]json.RawMessage) (token string, credential []byte, ok bool, err error) {
	raw, has := m["presence"]
	if !has || string(raw) == "null" {
		return "", nil, false, nil
	}
	pm, err := parseObject(raw)
	if err != nil {
		return "", nil, false, badRequest(`presence must be an object {"token", "credential"}`)
	}
	if token, err = reqString(pm, "token"); err != nil {
		return "", nil, false, badRequest("presence.token must be the token of a presence request")
	}
	cred := pm["credential"]
	if len(cred) == 0 || cred[0] != '{' {
		return "", nil, false, badRequest("presence.credential must be the passkey's answer, as the browser's PublicKeyCredential.toJSON gives it")
	}
	return token, cred, true, nil
}

// presenceError is the user API's answer to a failed presence step.
func presenceError(err error) error {
	for _, known := range []error{errNoPasskey, errPresenceExpired, errPresenceReplayed, errPresenceInvalid, errPasskeysDisabled, errDevCodeOff} {
		if errors.Is(err, known) {
			return agentcap.NewError(agentcap.CodePresenceRequired, presenceFailure(err))
		}
	}
	return err
}

func (p *Provider) apiPasskeys(w http.ResponseWriter, r *http.Request, u *User) error {
	keys, err := p.store.ListPasskeys(r.Context(), u.ID)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(keys))
	for i, k := range keys {
		out[i] = passkeyJSON(k)
	}
	writeJSON(w, http.StatusOK, map[string]any{"passkeys": out, "available": p.webauthn != nil})
	return nil
}

func (p *Provider) apiPasskeyOptions(w http.ResponseWriter, r *http.Request, u *User) error {
	opts, token, confirm, err := p.passkeyRegistration(r.Context(), u)
	if err != nil {
		return presenceError(err)
	}
	out := map[string]any{"token": token, "options": opts}
	if confirm != nil {
		out["presence"] = confirm
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (p *Provider) apiAddPasskey(w http.ResponseWriter, r *http.Request, u *User) error {
	m, err := readObject(r)
	if err != nil {
		return err
	}
	token, err := reqString(m, "token")
	if err != nil {
		return err
	}
	name, err := optString(m, "name")
	if err != nil {
		return err
	}
	cred := m["credential"]
	if len(cred) == 0 || cred[0] != '{' {
		return badRequest("credential must be the new passkey, as the browser's PublicKeyCredential.toJSON gives it")
	}
	ptoken, pcred, _, err := presenceAnswer(m)
	if err != nil {
		return err
	}
	k, err := p.finishPasskey(r.Context(), u, token, name, cred, ptoken, pcred)
	if err != nil {
		return presenceError(err)
	}
	writeJSON(w, http.StatusCreated, passkeyJSON(k))
	return nil
}

func (p *Provider) apiRenamePasskey(w http.ResponseWriter, r *http.Request, u *User) error {
	m, err := readObject(r)
	if err != nil {
		return err
	}
	name, err := reqString(m, "name")
	if err != nil {
		return err
	}
	if len(name) > maxPasskeyName {
		return badRequest("name must be at most 64 bytes")
	}
	if err := p.store.RenamePasskey(r.Context(), u.ID, r.PathValue("passkey_id"), name); err != nil {
		return passkeyError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (p *Provider) apiRemovePasskey(w http.ResponseWriter, r *http.Request, u *User) error {
	if err := p.store.DeletePasskey(r.Context(), u.ID, r.PathValue("passkey_id")); err != nil {
		return passkeyError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func passkeyError(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return agentcap.NewError(agentcap.CodeNotFound, "no such passkey")
	}
	return err
}

// apiDecisionPresence issues the presence request for a decision on one
// of the user's requests: {"capabilities", "constraints"} as the
// decision will carry them.
func (p *Provider) apiDecisionPresence(w http.ResponseWriter, r *http.Request, u *User) error {
	v, err := p.userApproval(r.Context(), u, r.PathValue("approval_id"))
	if err != nil {
		return err
	}
	m, err := readObject(r)
	if err != nil {
		return err
	}
	var caps []string
	if raw, ok := m["capabilities"]; ok {
		if json.Unmarshal(raw, &caps) != nil || caps == nil {
			return badRequest("capabilities must be an array of the requested capability names")
		}
	}
	cons, err := readDecisionConstraints(m["constraints"])
	if err != nil {
		return err
	}
	return p.writePresenceRequest(w, r, u, decisionBinding(v, caps, cons))
}

// apiGrantPresence issues the presence request for granting
// {"capabilities"} to one of the user's agents.
func (p *Provider) apiGrantPresence(w http.ResponseWriter, r *http.Request, u *User) error {
	m, err := readObject(r)
	if err != nil {
		return err
	}
	reqs, err := p.parseRequested(m["capabilities"], true)
	if err != nil {
		return err
	}
	id := r.PathValue("agent_id")
	if _, err := p.UserAgent(r.Context(), u.ID, id); err != nil {
		return err
	}
	return p.writePresenceRequest(w, r, u, grantBinding(id, grantRequests(reqs)))
}

func (p *Provider) writePresenceRequest(w http.ResponseWriter, r *http.Request, u *User, binding []byte) error {
	req, err := p.presenceRequestFor(r.Context(), u, binding)
	if err != nil {
		return presenceError(err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"token": req.Token, "options": req.Options, "expires_in": int(presenceLife / time.Second)})
	return nil
}

func grantRequests(reqs []store.RequestedCapability) []GrantRequest {
	out := make([]GrantRequest, len(reqs))
	for i, rc := range reqs {
		out[i] = GrantRequest{Name: rc.Name, Constraints: rc.Constraints}
	}
	return out
}
