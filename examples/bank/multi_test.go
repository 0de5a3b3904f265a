//go:build multiinstance

package main_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcap/agentcap/client"
)

// multiScale sizes the harness's scenarios: the short form runs in a few
// minutes on two shared cores, in CI; the full form, for the figures in
// RELIABILITY.md, without -short.
type multiScale struct {
	readers, payers    int           // agents of each person
	rate               int           // steady read load, requests a second
	steady             time.Duration // how long it lasts
	replayTokens       int           // tokens sent to every instance at once
	replayCopies       int           // copies of each token per instance
	transfers          int           // transfers under load
	transferWorkers    int           // transfers at a time
	limitN             int           // requests a minute per agent in the rate limit scenario
	revocationInterval time.Duration // between the probes of each instance
	faultRate          int           // reads a second while faults happen
	faultWorkers       int           // transfers at a time then
	settle             time.Duration // load before the first fault and after each
	outage             time.Duration // how long Redis and PostgreSQL stay down
}

var (
	shortScale = multiScale{readers: 4, payers: 2, rate: 40, steady: 10 * time.Second, replayTokens: 60, replayCopies: 2,
		transfers: 120, transferWorkers: 8, limitN: 20, revocationInterval: 20 * time.Millisecond,
		faultRate: 30, faultWorkers: 4, settle: 6 * time.Second, outage: 2 * time.Second}
	fullScale = multiScale{readers: 8, payers: 3, rate: 100, steady: 60 * time.Second, replayTokens: 500, replayCopies: 3,
		transfers: 1000, transferWorkers: 16, limitN: 60, revocationInterval: 10 * time.Millisecond,
		faultRate: 60, faultWorkers: 8, settle: 20 * time.Second, outage: 5 * time.Second}
)

func (sc multiScale) String() string {
	return fmt.Sprintf("%d reader and %d payer agents a person; reads at %d/s for %s; %d tokens x %d copies an instance; %d transfers, %d at a time; limit %d a minute; faults %s apart under %d reads/s and %d transfers at a time, servers down %s",
		sc.readers, sc.payers, sc.rate, sc.steady, sc.replayTokens, sc.replayCopies, sc.transfers, sc.transferWorkers, sc.limitN,
		sc.settle, sc.faultRate, sc.faultWorkers, sc.outage)
}

// figures collects the harness's measurements, logged as they come and
// written to AGENTCAP_MULTI_REPORT (when set) at the end.
type figures struct {
	t     *testing.T
	mu    sync.Mutex
	lines []string
}

func (f *figures) add(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	f.t.Log(line)
	f.mu.Lock()
	f.lines = append(f.lines, line)
	f.mu.Unlock()
}

func (f *figures) write() {
	path := os.Getenv("AGENTCAP_MULTI_REPORT")
	if path == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := os.WriteFile(path, []byte(strings.Join(f.lines, "\n")+"\n"), 0o644); err != nil {
		f.t.Errorf("writing the report: %v", err)
	}
}

// TestMultiInstance runs three banks in provider mode on one PostgreSQL
// schema and one Redis, behind a round-robin balancer, and holds them to
// the invariants of each scenario under load. It is built with the
// multiinstance tag; .ci/multiinstance.sh runs its short form.
func TestMultiInstance(t *testing.T) {
	env := readMultiEnv(t)
	sc := fullScale
	if testing.Short() {
		sc = shortScale
	}
	fig := &figures{t: t}
	defer fig.write()
	fig.add("scale: %s", sc)

	c := newCluster(t, env, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	began := time.Now()
	alice, bob, err := c.register(ctx, sc.payers, sc.readers)
	if err != nil {
		t.Fatalf("registering the agents: %v\n%s", err, c.logs())
	}
	fig.add("registration: %d agents of alice and bob (%d approved with proof of presence) in %s",
		2*(sc.payers+sc.readers), 2*sc.payers, time.Since(began).Round(time.Millisecond))
	readers := append(append([]*client.Agent(nil), alice.readers...), bob.readers...)

	t.Run("a_steady", func(t *testing.T) {
		// Five seconds of tokens ahead: older ones would near the end
		// of their lifetime (60 s) before their turn.
		feed := newTokenFeed(alice.readers, c.issuer+"/capability/execute", 5*sc.rate)
		ss := c.attackReads(ctx, feed, sc.rate, sc.steady)
		if err := feed.close(); err != nil {
			t.Fatal(err)
		}
		st := statsOf(ss)
		fig.add("a) steady reads through the balancer, %d/s for %s: %s", sc.rate, sc.steady, st)
		per := map[string]int{}
		var bad []string
		for i, s := range ss {
			per[s.backend]++
			if s.status != http.StatusOK {
				bad = append(bad, fmt.Sprintf("request %d (%s): %s %s %s", i, readBody(uint64(i)), s.outcome(), s.err, s.body))
			}
		}
		fig.add("a) requests per instance: %v", per)
		if want := int(float64(sc.rate) * sc.steady.Seconds() * 0.9); len(ss) < want {
			t.Errorf("%d requests sent, want at least %d", len(ss), want)
		}
		for _, in := range []string{"0", "1", "2"} {
			if per[in] < len(ss)/4 {
				t.Errorf("instance %s served %d of %d requests", in, per[in], len(ss))
			}
		}
		report(t, "requests not served", bad)
	})

	t.Run("b_replay", func(t *testing.T) {
		c.replayScenario(t, fig, readers, sc)
	})

	t.Run("c_transfers", func(t *testing.T) {
		before, err := readLedger(ctx, c.db)
		if err != nil {
			t.Fatal(err)
		}
		plan := &transferPlan{c: c, people: []*person{alice, bob}}
		trs, errs := c.driveTransfers(ctx, plan, sc.transferWorkers, sc.transfers, 10, 30*time.Second)
		after, err := readLedger(ctx, c.db)
		if err != nil {
			t.Fatal(err)
		}
		var ss []sample
		outcomes := map[string]int{}
		for _, tr := range trs {
			ss = append(ss, tr.samples...)
			outcomes[tr.outcome]++
		}
		fig.add("c) %d transfers, %d at a time (preview, then execute with the confirmation token and an idempotency key; every 10th acknowledged one sent again): %v; requests: %s",
			len(trs), sc.transferWorkers, outcomes, statsOf(ss))
		if len(trs) != sc.transfers {
			t.Errorf("%d transfers made, want %d", len(trs), sc.transfers)
		}
		var bad []string
		for _, err := range errs {
			bad = append(bad, err.Error())
		}
		for _, tr := range trs {
			// Without faults every transfer is answered: acknowledged,
			// or refused for want of money.
			if tr.outcome != "acked" && !strings.Contains(tr.note, "insufficient_funds") {
				bad = append(bad, fmt.Sprintf("%s: %s (%s)", tr, tr.outcome, tr.note))
			}
			if p := tr.repeatProblem(); p != "" {
				bad = append(bad, p)
			}
		}
		bad = append(bad, checkTransfers(before, after, trs)...)
		report(t, "transfer invariants", bad)
	})

	t.Run("e_rate_limit", func(t *testing.T) {
		c.rateLimitScenario(ctx, t, fig, alice, sc)
	})

	t.Run("f_revocation", func(t *testing.T) {
		c.revocationScenario(ctx, t, fig, alice, sc)
	})

	t.Run("g_mcp", func(t *testing.T) {
		clients, calls := 8, 25
		if !testing.Short() {
			clients, calls = 16, 100
		}
		c.mcpScenario(ctx, t, fig, alice.readers, clients, calls)
	})

	t.Run("d_faults", func(t *testing.T) {
		c.faultScenario(ctx, t, fig, []*person{alice, bob}, sc)
	})
}

// report fails t with what, listing the offending items (at most 30).
func report(t *testing.T, what string, bad []string) {
	t.Helper()
	if len(bad) == 0 {
		return
	}
	more := ""
	if len(bad) > 30 {
		more = fmt.Sprintf("\n... and %d more", len(bad)-30)
		bad = bad[:30]
	}
	t.Errorf("%s: %d violations:\n%s%s", what, len(bad), strings.Join(bad, "\n"), more)
}

// jti reads the jti claim of a JWT, to name it in failures.
func jti(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "?"
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "?"
	}
	var c struct {
		JTI string `json:"jti"`
		Sub string `json:"sub"`
	}
	_ = json.Unmarshal(payload, &c)
	return c.Sub + "/" + c.JTI
}

// replayScenario sends each of sc.replayTokens fresh agent JWTs to all
// three instances at once, sc.replayCopies times each, bypassing the
// balancer: exactly one copy of each must be served, and every other one
// refused as a replay (401 invalid_jwt).
func (c *cluster) replayScenario(t *testing.T, fig *figures, readers []*client.Agent, sc multiScale) {
	ctx := context.Background()
	feed := newTokenFeed(readers, c.issuer+"/capability/execute", sc.replayTokens)
	tokens := make([]string, sc.replayTokens)
	for i := range tokens {
		tokens[i] = feed.next()
	}
	if err := feed.close(); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"capability":"exchange_rate","arguments":{"from":"EUR","to":"GBP"}}`)
	var (
		mu  sync.Mutex
		all []sample
		bad []string
	)
	// Eight tokens at a time, each sent 3 x replayCopies times at once.
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, tok := range tokens {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var (
				start = make(chan struct{})
				got   = make([]sample, 0, 3*sc.replayCopies)
				gmu   sync.Mutex
				inner sync.WaitGroup
			)
			for _, in := range c.instances {
				for range sc.replayCopies {
					inner.Go(func() {
						<-start
						s := c.send(ctx, in.url+"/capability/execute", tok, body, nil)
						s.backend = in.name
						gmu.Lock()
						got = append(got, s)
						gmu.Unlock()
					})
				}
			}
			close(start)
			inner.Wait()
			served := 0
			var other []string
			for _, s := range got {
				switch {
				case s.status == http.StatusOK:
					served++
				case s.status == http.StatusUnauthorized && s.code == "invalid_jwt":
				default:
					other = append(other, s.backend+": "+s.outcome()+" "+s.err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			all = append(all, got...)
			if served != 1 || len(other) > 0 {
				bad = append(bad, fmt.Sprintf("token %s: served %d times; other answers %v", jti(tok), served, other))
			}
		})
	}
	wg.Wait()
	fig.add("b) %d tokens each sent %d times at once (%d per instance, bypassing the balancer): %s",
		sc.replayTokens, 3*sc.replayCopies, sc.replayCopies, statsOf(all))
	report(t, "tokens not served exactly once", bad)
}

// rateLimitScenario restarts the banks with a limit of sc.limitN
// requests a minute per agent and sends 3 x sc.limitN requests of a new
// agent at once, a third to each instance, bypassing the balancer: the
// limiter in Redis must admit sc.limitN of them, and no more than the
// limit lets through in the time the requests took, across the three.
// The banks get their usual limits back at the end.
func (c *cluster) rateLimitScenario(ctx context.Context, t *testing.T, fig *figures, p *person, sc multiScale) {
	n := sc.limitN
	c.restart(t, fmt.Sprintf("agent=%d,host=1000000,user=1000000,ip=1000000", n))
	defer c.restart(t, multiLimits)
	a, err := c.connectReader(ctx, p, "limited reader")
	if err != nil {
		t.Fatal(err)
	}
	feed := newTokenFeed([]*client.Agent{a}, c.issuer+"/capability/execute", 3*n)
	tokens := make([]string, 3*n)
	for i := range tokens {
		tokens[i] = feed.next()
	}
	if err := feed.close(); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"capability":"exchange_rate","arguments":{"from":"GBP","to":"USD"}}`)
	got := make([]sample, len(tokens))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, tok := range tokens {
		in := c.instances[i%len(c.instances)]
		wg.Go(func() {
			<-start
			got[i] = c.send(ctx, in.url+"/capability/execute", tok, body, nil)
			got[i].backend = in.name
		})
	}
	close(start)
	wg.Wait()
	admitted := map[string]int{}
	total := 0
	var other []string
	for _, s := range got {
		switch {
		case s.status == http.StatusOK:
			admitted[s.backend]++
			total++
		case s.status == http.StatusTooManyRequests && s.code == "rate_limited":
		default:
			other = append(other, s.backend+": "+s.outcome()+" "+s.err+" "+string(s.body))
		}
	}
	st := statsOf(got)
	// The limiter refills one request every minute/n: over the span of
	// the burst, that many more may pass.
	allowed := n + int(st.span.Seconds()*float64(n)/60)
	fig.add("e) %d requests of one agent at once across the three instances, limit %d a minute: %d admitted (%v), at most %d allowed in %.1fs; %s",
		len(got), n, total, admitted, allowed, st.span.Seconds(), st)
	if total > allowed || total < n {
		t.Errorf("agent %s: %d requests admitted across the three instances (%v), want %d to %d", a.ID(), total, admitted, n, allowed)
	}
	report(t, "answers neither served nor rate_limited", other)
}

// revocationScenario probes each instance directly with a new agent's
// requests, one after another, while the agent's user revokes it
// through the first instance: every request that starts once the
// revocation is answered must be refused by every instance
// (agent_revoked): an instance keeps the agent records it reads only
// while the count of changes in Redis stays where it was, and the
// revocation moves it before it is answered. The figures say how long
// after the revocation each instance last served the agent and first
// refused it.
func (c *cluster) revocationScenario(ctx context.Context, t *testing.T, fig *figures, p *person, sc multiScale) {
	victim, err := c.connectReader(ctx, p, "revoked reader")
	if err != nil {
		t.Fatal(err)
	}
	feed := newTokenFeed([]*client.Agent{victim}, c.issuer+"/capability/execute", 100)
	defer func() {
		if err := feed.close(); err != nil {
			t.Error(err)
		}
	}()
	body := []byte(`{"capability":"check_balance","arguments":{"account_id":"acc_123"}}`)
	stop := make(chan struct{})
	probes := make([][]sample, len(c.instances))
	var wg sync.WaitGroup
	for i, in := range c.instances {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				s := c.send(ctx, in.url+"/capability/execute", feed.next(), body, nil)
				s.backend = in.name
				probes[i] = append(probes[i], s)
				time.Sleep(sc.revocationInterval)
			}
		})
	}
	time.Sleep(time.Second)
	s, err := c.signInAt(c.instances[0].url, p.id)
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	asked := time.Now()
	status, answer, err := s.call(http.MethodPost, "/user/agents/"+victim.ID()+"/revoke", nil)
	revoked := time.Now()
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	if err != nil || status != http.StatusOK {
		t.Fatalf("revoking %s through %s: %d %s %v", victim.ID(), c.instances[0].name, status, answer, err)
	}
	var bad []string
	var line []string
	for i, ps := range probes {
		name := c.instances[i].name
		var lastServed, firstRefused time.Time
		servedBefore, refusedAfter := 0, 0
		for _, pr := range ps {
			refused := (pr.status == http.StatusUnauthorized || pr.status == http.StatusForbidden) && pr.code == "agent_revoked"
			switch {
			case pr.status == http.StatusOK:
				if pr.start.After(lastServed) {
					lastServed = pr.start
				}
			case refused:
				if firstRefused.IsZero() || pr.start.Before(firstRefused) {
					firstRefused = pr.start
				}
			}
			switch {
			case pr.end().Before(asked) && pr.status == http.StatusOK:
				servedBefore++
			case pr.end().Before(asked):
				bad = append(bad, fmt.Sprintf("%s: a probe answered before the revocation was asked for got %s %s", name, pr.outcome(), pr.body))
			case !pr.start.Before(revoked) && refused:
				refusedAfter++
			case !pr.start.Before(revoked):
				bad = append(bad, fmt.Sprintf("%s: agent %s, revoked %s before the probe started, was answered %s", name, victim.ID(), pr.start.Sub(revoked).Round(time.Millisecond), pr.outcome()))
			case pr.status != http.StatusOK && !refused:
				// Under way while the revocation was made: served or refused.
				bad = append(bad, fmt.Sprintf("%s: a probe under way during the revocation got %s %s", name, pr.outcome(), pr.body))
			}
		}
		if servedBefore == 0 || refusedAfter == 0 {
			bad = append(bad, fmt.Sprintf("%s: %d probes served before the revocation, %d refused after it; want some of each", name, servedBefore, refusedAfter))
		}
		line = append(line, fmt.Sprintf("%s served the last probe started %s and refused the first started %s",
			name, relative(lastServed.Sub(asked)), relative(firstRefused.Sub(asked))))
	}
	fig.add("f) agent revoked through %s, answered in %s; relative to the revocation request, %s", c.instances[0].name, revoked.Sub(asked).Round(time.Millisecond), strings.Join(line, "; "))
	report(t, "revocation not seen by every instance", bad)
}

// relative says d as "12ms before" or "3ms after".
func relative(d time.Duration) string {
	if d < 0 {
		return (-d).Round(time.Millisecond).String() + " before"
	}
	return d.Round(time.Millisecond).String() + " after"
}
