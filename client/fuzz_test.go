package client_test

import (
	"crypto/ed25519"
	"testing"

	"github.com/agentcap/agentcap/client"
)

func FuzzParsePrivateJWK(f *testing.F) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	good, err := client.MarshalPrivateJWK(key)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"kty":"OKP","crv":"Ed25519","x":"AA","d":"AA"}`))
	f.Add([]byte(`{"kty":"RSA"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := client.ParsePrivateJWK(data)
		if err != nil {
			return
		}
		again, err := client.MarshalPrivateJWK(k)
		if err != nil {
			t.Fatal(err)
		}
		k2, err := client.ParsePrivateJWK(again)
		if err != nil || !k2.Equal(k) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzParseDiscovery(f *testing.F) {
	f.Add([]byte(`{"version":"1.0-draft","issuer":"https://auth.example","algorithms":["Ed25519"],"endpoints":{"register":"/agent/register"}}`))
	f.Add([]byte(`{"version":"1.0-draft","issuer":"https://auth.example","algorithms":["Ed25519"],"endpoints":{"register":"https://evil.example/r"}}`))
	f.Add([]byte(`{"version":"2.0","issuer":"http://127.0.0.1:1"}`))
	c, err := client.New(client.Config{Keys: client.NewMemoryKeyStore()})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := c.ParseDiscovery(data)
		if err != nil {
			return
		}
		for _, name := range []string{"register", "status", "execute"} {
			u, err := d.EndpointURL(name)
			if err != nil || u == "" {
				t.Fatalf("endpoint %s: %q, %v", name, u, err)
			}
		}
		if d.DefaultLocationURL() == "" {
			t.Fatal("no default location")
		}
	})
}
