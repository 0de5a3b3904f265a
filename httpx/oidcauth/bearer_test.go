package oidcauth

import (
	"strings"
	"testing"
)

func TestBearer(t *testing.T) {
	tests := []struct {
		in    string
		token string
		ok    bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"BEARER\tabc ", "abc", true},
		{"Bearer", "", true},
		{"Bearer ", "", true},
		{"Bearerabc", "", false},
		{"Basic abc", "", false},
		{"", "", false},
		{"  Bearer x  ", "x", true},
	}
	for _, tc := range tests {
		token, ok := bearer(tc.in)
		if token != tc.token || ok != tc.ok {
			t.Errorf("bearer(%q) = %q, %v; want %q, %v", tc.in, token, ok, tc.token, tc.ok)
		}
	}
}

func FuzzBearer(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer", "Basic x", "", "Bearer\t\ttok"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		token, ok := bearer(h)
		if !ok && token != "" {
			t.Fatalf("token %q without a bearer scheme", token)
		}
		if ok && token != strings.TrimSpace(token) {
			t.Fatalf("token %q keeps surrounding space", token)
		}
		if ok && !strings.Contains(strings.ToLower(h), "bearer") {
			t.Fatalf("%q accepted as bearer", h)
		}
	})
}
