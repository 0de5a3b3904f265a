package cachecontrol

import (
	"testing"
	"time"
)

func TestMaxAge(t *testing.T) {
	tests := []struct {
		header string
		age    time.Duration
		ok     bool
	}{
		{"", 0, false},
		{"public", 0, false},
		{"public, max-age=300", 300 * time.Second, true},
		{"MAX-AGE=60", time.Minute, true},
		{` max-age = "120" `, 2 * time.Minute, true},
		{"max-age=0", 0, true},
		{"no-store", 0, true},
		{"no-cache, max-age=600", 0, true},
		{"max-age=600, No-Cache", 0, true},
		{"max-age=-5", 0, true},
		{"max-age=+5", 0, true},
		{"max-age=1e3", 0, true},
		{"max-age=", 0, true},
		{"max-age=99999999999999999999", maxSeconds * time.Second, true},
		{"max-age=3000000000", maxSeconds * time.Second, true},
		{"s-maxage=10", 0, false},
	}
	for _, tt := range tests {
		age, ok := MaxAge(tt.header)
		if age != tt.age || ok != tt.ok {
			t.Errorf("MaxAge(%q) = %v, %v; want %v, %v", tt.header, age, ok, tt.age, tt.ok)
		}
	}
}

// FuzzMaxAge: MaxAge never panics, gives a lifetime between zero and
// 2^31 seconds, and none when it says the header names none.
func FuzzMaxAge(f *testing.F) {
	f.Add("public, max-age=300")
	f.Add("no-store")
	f.Add(`max-age="99999999999999999999"`)
	f.Add("max-age=-1, s-maxage=5")
	f.Fuzz(func(t *testing.T, header string) {
		age, ok := MaxAge(header)
		if age < 0 || age > maxSeconds*time.Second || (!ok && age != 0) {
			t.Fatalf("MaxAge(%q) = %v, %v", header, age, ok)
		}
	})
}
