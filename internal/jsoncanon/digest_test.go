package jsoncanon_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/agentcap/agentcap/internal/jsoncanon"
)

func TestDigest(t *testing.T) {
	sum := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return hex.EncodeToString(h[:])
	}
	tests := []struct {
		name string
		args string
		want string
	}{
		{"absent", "", sum("{}")},
		{"null", " null\n", sum("{}")},
		{"empty object", "{ }", sum("{}")},
		{"members sorted, spaces dropped", `{"b": 2, "a": "x"}`, sum(`{"a":"x","b":2}`)},
		{"one spelling of a number", `{"n": 1.0e0}`, sum(`{"n":1}`)},
		{"not JSON", ` {"a": `, sum("\x01" + `{"a":`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := jsoncanon.Digest([]byte(tt.args)); got != tt.want {
				t.Errorf("Digest(%q) = %s, want %s", tt.args, got, tt.want)
			}
		})
	}
}
