package provider

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// FuzzPresenceSeal feeds the sealed values that come back from browsers
// (presence request tokens, registration ceremonies) to unseal: it never
// panics, accepts only what seal made for the same label and user, and
// gives back exactly what was sealed.
func FuzzPresenceSeal(f *testing.F) {
	now := time.Unix(1_900_000_000, 0)
	p := &Provider{pageSecret: []byte("0123456789abcdef0123456789abcdef"), now: func() time.Time { return now }}
	f.Add("alice", []byte("nonce-0123456789"), "")
	f.Add("bob", []byte{}, "e30.1900000000.x")
	f.Add("", []byte(`{"challenge":"x"}`), "..")
	f.Fuzz(func(t *testing.T, user string, payload []byte, token string) {
		if got, err := p.unseal("presence", user, token); err == nil && p.seal("presence", user, got) != token {
			// Only a value sealed under the secret opens: the fuzzer
			// would have to forge its MAC.
			t.Fatalf("unseal accepted %q, which seal did not make", token)
		}
		sealed := p.seal("presence", user, payload)
		got, err := p.unseal("presence", user, sealed)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("seal/unseal of %q: %q, %v", payload, got, err)
		}
		if _, err := p.unseal("passkey-registration", user, sealed); err == nil {
			t.Fatal("a presence token opened as a registration ceremony")
		}
		if _, err := p.unseal("presence", user+"x", sealed); err == nil {
			t.Fatal("a presence token opened for another user")
		}
	})
}

// FuzzPresenceAnswer feeds request bodies to the reader of their
// "presence" member: it never panics, and what it accepts is a token and
// a JSON object.
func FuzzPresenceAnswer(f *testing.F) {
	f.Add([]byte(`{"presence":{"token":"a.1.b","credential":{"id":"x","response":{}}}}`))
	f.Add([]byte(`{"presence":null}`))
	f.Add([]byte(`{"presence":{"token":1,"credential":"x"}}`))
	f.Add([]byte(`{"presence":{"token":"t","credential":{"a":1,"a":2}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := parseObject(body)
		if err != nil {
			return
		}
		token, cred, ok, err := presenceAnswer(m)
		if err != nil || !ok {
			return
		}
		if token == "" && cred == nil {
			t.Fatal("an answer without token or credential was accepted")
		}
		if !json.Valid(cred) || cred[0] != '{' {
			t.Fatalf("the credential %q is not a JSON object", cred)
		}
	})
}
