package httpx_test

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// A body with many members must be refused quickly and briefly: the
// duplicate-key check compares keys pairwise, so it is bounded.
func TestEnvelopeMemberBound(t *testing.T) {
	h, _ := newHandler(t, nil)
	var b strings.Builder
	b.WriteString(`{"capability":"echo","arguments":{"text":"hi"}`)
	for i := range 50000 {
		b.WriteString(`,"k` + strconv.Itoa(i) + `":0`)
	}
	b.WriteString(`}`)
	for _, tc := range []struct{ path, body string }{
		{"/capability/execute", b.String()},
		{"/capability/batch-execute", `{"requests":[` + b.String() + `]}`},
		{"/capability/batch-execute", `{"requests":[]` + strings.TrimPrefix(b.String(), `{"capability":"echo","arguments":{"text":"hi"}`)},
	} {
		req := httptest.NewRequest("POST", tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer alice")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), "too many members") || rec.Body.Len() > 2048 {
			t.Errorf("%s: %d %.300s", tc.path, rec.Code, rec.Body)
		}
	}
}
