package bench_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentcap/agentcap/internal/benchcpu"
	"github.com/google/go-cmp/cmp"
)

const jsonType = "application/json"

// TestAnswersAgree keeps the comparison honest: every contender must
// answer the benchmark's request with the same data and must refuse the
// same bad requests, so none of them is fast because it skips a check.
// Error bodies differ by design (each speaks its own error format); where
// huma's status differs, wantHuma says so.
func TestAnswersAgree(t *testing.T) {
	args := func(s string) []byte { return []byte(`{"capability":"transfer","arguments":` + s + `}`) }
	ok := request{contentType: jsonType, authorization: authHeader}
	with := func(body []byte) request { r := ok; r.body = body; return r }
	tests := []struct {
		name     string
		req      request
		want     int
		wantHuma int // 0: same as want
		wantData string
	}{
		{name: "valid", req: with(validBody), want: http.StatusOK, wantData: validData},
		{name: "same account", want: http.StatusOK,
			req:      with(args(`{"from_account":"acc_bob","to_account":"acc_bob","amount":1,"currency":"USD"}`)),
			wantData: `{"data":{"transfer_id":"tr_bob","status":"rejected","amount":1,"currency":"USD"}}`},
		{name: "content type with charset", want: http.StatusOK, wantData: validData,
			req: request{contentType: jsonType + "; charset=utf-8", authorization: authHeader, body: validBody}},
		{name: "currency outside the enum", want: http.StatusBadRequest, wantHuma: http.StatusUnprocessableEntity,
			req: with(args(`{"from_account":"acc_alice","to_account":"acc_bob","amount":1,"currency":"JPY"}`))},
		{name: "amount not above zero", want: http.StatusBadRequest, wantHuma: http.StatusUnprocessableEntity,
			req: with(args(`{"from_account":"acc_alice","to_account":"acc_bob","amount":0,"currency":"USD"}`))},
		{name: "amount above the maximum", want: http.StatusBadRequest, wantHuma: http.StatusUnprocessableEntity,
			req: with(args(`{"from_account":"acc_alice","to_account":"acc_bob","amount":1000001,"currency":"USD"}`))},
		{name: "amount as a string", want: http.StatusBadRequest, wantHuma: http.StatusUnprocessableEntity,
			req: with(args(`{"from_account":"acc_alice","to_account":"acc_bob","amount":"5","currency":"USD"}`))},
		{name: "account outside the pattern", want: http.StatusBadRequest, wantHuma: http.StatusUnprocessableEntity,
			req: with(args(`{"from_account":"alice","to_account":"acc_bob","amount":1,"currency":"USD"}`))},
		{name: "missing field", want: http.StatusBadRequest, wantHuma: http.StatusUnprocessableEntity,
			req: with(args(`{"from_account":"acc_alice","amount":1,"currency":"USD"}`))},
		{name: "unknown field", want: http.StatusBadRequest, wantHuma: http.StatusUnprocessableEntity,
			req: with(args(`{"from_account":"acc_alice","to_account":"acc_bob","amount":1,"currency":"USD","memo":"x"}`))},
		{name: "key in another letter case", want: http.StatusBadRequest, wantHuma: http.StatusUnprocessableEntity,
			req: with(args(`{"from_account":"acc_alice","to_account":"acc_bob","Amount":1,"currency":"USD"}`))},
		{name: "unknown capability", want: http.StatusNotFound, wantHuma: http.StatusUnprocessableEntity,
			req: with([]byte(`{"capability":"close_account","arguments":{}}`))},
		{name: "not JSON", want: http.StatusBadRequest,
			req: with([]byte(`{"capability":"transfer",`))},
		{name: "no credentials", want: http.StatusUnauthorized,
			req: request{contentType: jsonType, body: validBody}},
		{name: "wrong token", want: http.StatusUnauthorized,
			req: request{contentType: jsonType, authorization: "Bearer nope", body: validBody}},
		{name: "not a JSON content type", want: http.StatusUnsupportedMediaType,
			req: request{contentType: "text/plain", authorization: authHeader, body: validBody}},
	}
	for _, c := range contenders() {
		t.Run(c.framework+"/"+c.kind, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					want := tt.want
					if c.kind == "huma" && tt.wantHuma != 0 {
						want = tt.wantHuma
					}
					d := c.newDriver(t, tt.req)
					// Twice: the drivers reuse their request and writer, and
					// the second answer must not depend on the first.
					for range 2 {
						status, body := d.do()
						if status != want {
							t.Fatalf("status %d, want %d; body %s", status, want, body)
						}
						if tt.wantData != "" {
							if diff := cmp.Diff(decode(t, []byte(tt.wantData)), decode(t, body)); diff != "" {
								t.Fatalf("body (-want +got):\n%s", diff)
							}
						}
					}
				})
			}
		})
	}
}

func decode(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("answer is not JSON: %v: %q", err, data)
	}
	return v
}

// FuzzMountImpliesByHand sends arbitrary bodies to the net/http mount and
// to the hand-written handler. The mount is the stricter of the two (it
// also refuses duplicate keys and unknown envelope members), so whatever
// it accepts the hand-written handler must accept too, with the same
// answer; otherwise the benchmark would compare different operations.
func FuzzMountImpliesByHand(f *testing.F) {
	f.Add(validBody)
	f.Add([]byte(`{"capability":"transfer","arguments":{"from_account":"acc_bob","to_account":"acc_bob","amount":1e2,"currency":"GBP"}}`))
	f.Add([]byte(`{"arguments":{"from_account":"acc_x\u0041yz","to_account":"acc_0000","amount":0.5,"currency":"USD"},"capability":"transfer"}`))
	f.Add([]byte(`{"capability":"transfer","arguments":{"from_account":"acc_alice","to_account":"acc_bob","amount":1,"currency":"USD","Amount":2}}`))
	f.Add([]byte(`{"capability":"transfer"}`))
	mount, hand := netHTTPMount(f), netHTTPByHand(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		req := request{contentType: jsonType, authorization: authHeader, body: body}
		mStatus, mBody := newHTTPDriver(t, mount, req).do()
		if mStatus != http.StatusOK {
			return
		}
		hStatus, hBody := newHTTPDriver(t, hand, req).do()
		if hStatus != http.StatusOK {
			t.Fatalf("mount accepted %q (%s) but the hand-written handler answered %d %s", body, mBody, hStatus, hBody)
		}
		if !bytes.Equal(mBody, hBody) {
			t.Fatalf("answers to %q differ:\nmount:   %s\nby hand: %s", body, mBody, hBody)
		}
	})
}

// BenchmarkExecute is one execute round trip per operation for every
// contender: request in, authentication, envelope, input validation,
// strict decoding, the transfer function, encoding, output validation
// where the contender does it, answer written. Besides wall-clock ns/op it
// reports cpu-ns/op, the process CPU time per operation, which other
// processes on a busy machine disturb much less.
func BenchmarkExecute(b *testing.B) {
	for _, c := range contenders() {
		// key=value names let benchstat put the contenders of one
		// framework side by side: benchstat -col /impl -row /fw.
		b.Run("fw="+c.framework+"/impl="+c.kind, func(b *testing.B) {
			d := c.newDriver(b, request{contentType: jsonType, authorization: authHeader, body: validBody})
			if status, body := d.do(); status != http.StatusOK {
				b.Fatalf("status %d: %s", status, body)
			}
			b.ReportAllocs()
			cpu0, cpuOK := benchcpu.Process()
			for b.Loop() {
				if status, body := d.do(); status != http.StatusOK {
					b.Fatalf("status %d: %s", status, body)
				}
			}
			if cpu1, ok := benchcpu.Process(); ok && cpuOK {
				b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
