package agentauth

import (
	"testing"

	"github.com/agentcap/agentcap/internal/benchcpu"
)

// The JWT reader alone, on tokens shaped like the published clients'.
var (
	benchAgentJWT = fuzzToken(`{"alg":"EdDSA","typ":"agent+jwt","kid":"agt_bench#1"}`,
		`{"sub":"agt_bench","iss":"hst_bench","aud":"https://bank.example/capability/execute",`+
			`"iat":1767225600,"exp":1767225660,"jti":"2c6d0f3a-7b1e-4b8e-9a51-0c1d2e3f4a5b","capabilities":["transfer","check_balance"]}`, 0)
	benchHostJWT = fuzzToken(`{"alg":"EdDSA","typ":"host+jwt","kid":"hst_bench#1"}`,
		`{"iss":"Vh1Y8mAqgD5yq2R2t0o1nUSXkKxqHJ8K7bZ5b3c2d1e","aud":"https://bank.example","iat":1767225600,"exp":1767225660,`+
			`"jti":"5d0c2b1a","host_name":"laptop","agent_public_key":{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}}`, 0)
)

func BenchmarkParseAgentJWT(b *testing.B) {
	b.ReportAllocs()
	defer benchcpu.Report(b)()
	for b.Loop() {
		sc := getScratch()
		if err := sc.parse(benchAgentJWT); err != nil {
			b.Fatal(err)
		}
		putScratch(sc)
	}
}

func BenchmarkParseHostJWT(b *testing.B) {
	b.ReportAllocs()
	defer benchcpu.Report(b)()
	for b.Loop() {
		if _, err := ParseHostJWT(benchHostJWT); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTokenType(b *testing.B) {
	b.ReportAllocs()
	defer benchcpu.Report(b)()
	for b.Loop() {
		if tokenType(benchHostJWT) != "host+jwt" {
			b.Fatal("not a host JWT")
		}
	}
}
