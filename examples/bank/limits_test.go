package main_test

import (
	"net/http"
	"testing"

	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// A bank that trusts a directory has no provider in front of it, so it
// limits each agent itself: 120 requests a minute unless -limits says
// otherwise, refused with 429 rate_limited beyond, other agents
// untouched; -limits off limits nothing.
func TestDirectoryRateLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the command")
	}
	bin := buildBank(t)
	f := newFixture(t)
	calls := func(p *bankProcess, agent string, n int) (served, limited int) {
		t.Helper()
		for range n {
			tok := f.agents[agent].Token(agentauthtest.Token{Audience: p.url + "/capability/execute"})
			r := p.execute(t, tok, "exchange_rate", `{"from":"USD","to":"EUR"}`)
			switch {
			case r.status == http.StatusOK:
				served++
			case r.status == http.StatusTooManyRequests && r.code() == "rate_limited":
				limited++
			default:
				t.Fatalf("%s: %d %s", agent, r.status, r.body)
			}
		}
		return served, limited
	}
	for _, tc := range []struct {
		name   string
		flags  []string
		served int
	}{
		{"default", nil, 120},
		{"agent=5", []string{"-limits", "agent=5"}, 5},
		{"off", []string{"-limits", "off"}, 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startBank(t, bin, f.file, tc.flags...)
			defer p.stop(t)
			served, limited := calls(p, "agt_robot", 130)
			if served != tc.served || limited != 130-tc.served {
				t.Fatalf("agt_robot: %d served, %d limited of 130; want %d served", served, limited, tc.served)
			}
			if served, _ := calls(p, "agt_dave", 1); served != 1 {
				t.Fatal("another agent was limited too")
			}
		})
	}
}
