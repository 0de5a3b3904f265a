package listcursor_test

import (
	"testing"

	"github.com/agentcap/agentcap/internal/listcursor"
)

func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{"check_balance", "a.b", "", "!!", "Y2hlY2s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if name, ok := listcursor.Decode(s); ok && listcursor.Encode(name) != s {
			t.Errorf("%q decodes to %q, which encodes to %q", s, name, listcursor.Encode(name))
		}
		if s == "" {
			return
		}
		if name, ok := listcursor.Decode(listcursor.Encode(s)); !ok || name != s {
			t.Errorf("%q round-trips to %q, %v", s, name, ok)
		}
	})
}
