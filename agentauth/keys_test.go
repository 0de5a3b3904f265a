package agentauth

import (
	"encoding/json"
	"strings"
	"testing"
)

// The RFC 8037 (appendix A.3) Ed25519 public key and its RFC 7638
// thumbprint.
const (
	rfc8037JWK   = `{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`
	rfc8037Thumb = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
)

func TestJWKThumbprint(t *testing.T) {
	for _, raw := range []string{
		rfc8037JWK,
		// Members outside the thumbprint do not change it.
		`{"kid":"k1","use":"sig","alg":"EdDSA","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","crv":"Ed25519","kty":"OKP"}`,
	} {
		k, err := parsePublicJWK([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		got, err := jwkThumbprint(k)
		if err != nil || got != rfc8037Thumb {
			t.Errorf("thumbprint of %s = %q, %v; want %q", raw, got, err, rfc8037Thumb)
		}
	}
}

func TestValidateJWKS(t *testing.T) {
	key := func(extra string) string {
		return `{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"` + extra + `}`
	}
	many := func(n int) string {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = key("")
		}
		return `{"keys":[` + strings.Join(keys, ",") + `]}`
	}
	tests := []struct {
		name, body, wantErr string
	}{
		{"one key", `{"keys":[` + key(`,"kid":"k1"`) + `]}`, ""},
		{"empty set", `{"keys":[]}`, ""},
		{"other key types tolerated", `{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"},` + key("") + `]}`, ""},
		{"extra top-level members tolerated", `{"keys":[],"issuer":"x"}`, ""},
		{"at the limit", many(3), ""},
		{"over the limit", many(4), "4 keys, limit 3"},
		{"symmetric key", `{"keys":[` + key("") + `,{"kty":"oct","k":"c2VjcmV0"}]}`, "keys[1] is a symmetric (oct) key"},
		{"private key", `{"keys":[` + key(`,"d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"`) + `]}`, `keys[0] has private member "d"`},
		{"RSA private key", `{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB","p":"AQAB"}]}`, `private member "p"`},
		{"no keys member", `{"key":[]}`, `no "keys" member`},
		{"keys not an array", `{"keys":{}}`, `"keys" is not an array`},
		{"keys null", `{"keys":null}`, `"keys" is not an array`},
		{"key not an object", `{"keys":["k"]}`, "keys[0]: not a JSON object"},
		{"kty not a string", `{"keys":[{"kty":1}]}`, `"kty" is not a string`},
		{"duplicate member", `{"keys":[],"keys":[` + key("") + `]}`, "duplicate member"},
		{"not JSON", `<html>`, "malformed JSON"},
		{"trailing data", `{"keys":[]}x`, "data after the object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateJWKS([]byte(tt.body), 3)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// FuzzValidateJWKS: validateJWKS never panics, and what it accepts is an
// object holding at most the allowed number of keys, none symmetric and
// none with private members.
func FuzzValidateJWKS(f *testing.F) {
	f.Add(`{"keys":[` + rfc8037JWK + `]}`)
	f.Add(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`)
	f.Add(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}]}`)
	f.Add(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}],"x":1}`)
	f.Fuzz(func(t *testing.T, body string) {
		if validateJWKS([]byte(body), DefaultFetchMaxKeys) != nil {
			return
		}
		set, err := decodeObject([]byte(body))
		if err != nil {
			t.Fatalf("accepted a body that is not an object: %v", err)
		}
		var keys []json.RawMessage
		if err := json.Unmarshal(set["keys"], &keys); err != nil || len(keys) > DefaultFetchMaxKeys {
			t.Fatalf("accepted keys %s: %v", set["keys"], err)
		}
		for _, raw := range keys {
			k, err := decodeObject(raw)
			if err != nil {
				t.Fatalf("accepted a key that is not an object: %s", raw)
			}
			if kty, _ := optString(k, "kty"); kty == "oct" {
				t.Fatalf("accepted a symmetric key: %s", raw)
			}
			for _, m := range privateJWKMembers {
				if _, ok := k[m]; ok {
					t.Fatalf("accepted a key with private member %q: %s", m, raw)
				}
			}
		}
	})
}
