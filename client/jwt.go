package client

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcap/agentcap"
)

// TokenLifetime is the lifetime of every JWT the client signs: the
// protocol's ceiling for agent JWTs.
const TokenLifetime = 60 * time.Second

// tokenSigner signs JWTs of one type with one key. go-jose signers are
// safe for concurrent use, so one is built per key and reused.
type tokenSigner struct {
	signer jose.Signer
	rand   io.Reader
	now    func() time.Time
}

func newTokenSigner(id *Identity, typ string, rand io.Reader, now func() time.Time) (*tokenSigner, error) {
	opts := (&jose.SignerOptions{}).WithType(jose.ContentType(typ)).WithHeader("kid", id.Thumbprint)
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: id.Key}, opts)
	if err != nil {
		return nil, fmt.Errorf("client: signer: %w", err)
	}
	return &tokenSigner{signer: s, rand: rand, now: now}, nil
}

// agentClaims are the claims of an agent JWT.
type agentClaims struct {
	Issuer       string   `json:"iss,omitempty"`
	Subject      string   `json:"sub"`
	Audience     string   `json:"aud"`
	IssuedAt     int64    `json:"iat"`
	Expiry       int64    `json:"exp"`
	ID           string   `json:"jti"`
	Capabilities []string `json:"capabilities,omitempty"`
}

// hostClaims are the claims of a host JWT.
type hostClaims struct {
	Issuer         string            `json:"iss"`
	Audience       string            `json:"aud"`
	IssuedAt       int64             `json:"iat"`
	Expiry         int64             `json:"exp"`
	ID             string            `json:"jti"`
	HostPublicKey  map[string]string `json:"host_public_key"`
	AgentPublicKey map[string]string `json:"agent_public_key,omitempty"`
	HostName       string            `json:"host_name,omitempty"`
}

// jti returns a fresh 128-bit token id.
func (s *tokenSigner) jti() (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(s.rand, b[:]); err != nil {
		return "", fmt.Errorf("client: token id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

func (s *tokenSigner) sign(claims any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("client: claims: %w", err)
	}
	jws, err := s.signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("client: sign: %w", err)
	}
	return jws.CompactSerialize()
}

// agentToken signs an agent JWT. capabilities, when non-nil, becomes the
// capabilities claim.
func (s *tokenSigner) agentToken(iss, sub, aud string, capabilities []string) (string, error) {
	jti, err := s.jti()
	if err != nil {
		return "", err
	}
	now := s.now().Unix()
	return s.sign(agentClaims{
		Issuer:       iss,
		Subject:      sub,
		Audience:     aud,
		IssuedAt:     now,
		Expiry:       now + int64(TokenLifetime/time.Second),
		ID:           jti,
		Capabilities: capabilities,
	})
}

// hostToken signs a host JWT for aud (the issuer). agent, when set, adds
// the agent's public key, as registration requires.
func (s *tokenSigner) hostToken(host *Identity, aud string, agent *Identity, hostName string) (string, error) {
	jti, err := s.jti()
	if err != nil {
		return "", err
	}
	now := s.now().Unix()
	c := hostClaims{
		Issuer:        host.Thumbprint,
		Audience:      aud,
		IssuedAt:      now,
		Expiry:        now + int64(TokenLifetime/time.Second),
		ID:            jti,
		HostPublicKey: host.PublicJWK(),
		HostName:      hostName,
	}
	if agent != nil {
		c.AgentPublicKey = agent.PublicJWK()
	}
	return s.sign(c)
}

// Token types: the "typ" of the JWTs the client signs.
const (
	typeAgent = agentcap.TypeAgentJWT
	typeHost  = agentcap.TypeHostJWT
)
