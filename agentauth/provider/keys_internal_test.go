package provider

import (
	"crypto/ed25519"
	"encoding/base64"
	"testing"
)

func TestParseJWKRefusesKeysThatAreNoCurvePoint(t *testing.T) {
	jwk := func(x []byte) []byte {
		return []byte(`{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(x) + `"}`)
	}
	offCurve := make([]byte, ed25519.PublicKeySize)
	offCurve[0] = 2 // no curve point has y = 2
	if _, err := parseJWK(jwk(offCurve)); err == nil {
		t.Error("a key that is no curve point was accepted")
	}
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseJWK(jwk(pub)); err != nil {
		t.Errorf("a real key was refused: %v", err)
	}
}
