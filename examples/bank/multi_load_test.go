//go:build multiinstance

package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/agentcap/agentcap/client"
)

// sample is one request of the harness: when it started, how long it
// took, and its answer.
type sample struct {
	start   time.Time
	latency time.Duration
	status  int    // 0 when no answer came
	code    string // the "error" member of an error answer
	backend string // the balancer's X-Backend, for requests through it
	err     string // why no answer came
	header  http.Header
	body    []byte
}

// outcome names the answer for the counts: the status and error code,
// or "no answer".
func (s sample) outcome() string {
	switch {
	case s.status == 0:
		return "no answer"
	case s.code != "":
		return strconv.Itoa(s.status) + " " + s.code
	}
	return strconv.Itoa(s.status)
}

func (s sample) end() time.Time { return s.start.Add(s.latency) }

// errorCode reads the error member of a JSON error answer.
func errorCode(status int, body []byte) string {
	if status < 400 {
		return ""
	}
	var m struct {
		Error any `json:"error"`
	}
	_ = json.Unmarshal(body, &m)
	if s, ok := m.Error.(string); ok {
		return s
	}
	return ""
}

// send posts body to target with the agent JWT token and header, and
// reads the whole answer.
func (c *cluster) send(ctx context.Context, target, token string, body []byte, header http.Header) sample {
	s := sample{start: time.Now()}
	defer func() { s.latency = time.Since(s.start) }()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		s.err = err.Error()
		return s
	}
	// Without GetBody the transport cannot send the request again by
	// itself (it would for a POST with an Idempotency-Key whose reused
	// connection broke): a copy would carry the same agent JWT, refused
	// as a replay although the first may have run. The harness sends
	// again itself, with a fresh JWT.
	req.GetBody = nil
	maps.Copy(req.Header, header)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.http.Do(req)
	if err != nil {
		s.err = err.Error()
		s.latency = time.Since(s.start)
		return s
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	s.latency = time.Since(s.start)
	if err != nil {
		s.err = err.Error()
		return s
	}
	s.status, s.header, s.body = resp.StatusCode, resp.Header, b
	s.backend = resp.Header.Get("X-Backend")
	s.code = errorCode(s.status, b)
	return s
}

// fromVegeta converts an attack's result.
func fromVegeta(r *vegeta.Result) sample {
	s := sample{start: r.Timestamp, latency: r.Latency, status: int(r.Code), header: r.Headers, body: r.Body}
	if s.status == 0 {
		s.err = r.Error
	}
	s.backend = r.Headers.Get("X-Backend")
	s.code = errorCode(s.status, r.Body)
	return s
}

// stats sums up samples: how many, over what span, at what rate, the
// latency percentiles and the outcomes.
type stats struct {
	n             int
	span          time.Duration
	rps           float64
	p50, p99, max time.Duration
	outcomes      map[string]int
}

func statsOf(ss []sample) stats {
	st := stats{n: len(ss), outcomes: map[string]int{}}
	if len(ss) == 0 {
		return st
	}
	lat := make([]time.Duration, len(ss))
	first, last := ss[0].start, ss[0].end()
	for i, s := range ss {
		lat[i] = s.latency
		st.outcomes[s.outcome()]++
		if s.start.Before(first) {
			first = s.start
		}
		if s.end().After(last) {
			last = s.end()
		}
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	st.p50, st.p99, st.max = q(0.50), q(0.99), lat[len(lat)-1]
	st.span = last.Sub(first)
	if st.span > 0 {
		st.rps = float64(st.n) / st.span.Seconds()
	}
	return st
}

func (st stats) String() string {
	keys := slices.Sorted(maps.Keys(st.outcomes))
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, st.outcomes[k]))
	}
	return fmt.Sprintf("%d requests in %.1fs (%.0f/s), p50 %s, p99 %s, max %s; %s",
		st.n, st.span.Seconds(), st.rps, ms(st.p50), ms(st.p99), ms(st.max), strings.Join(parts, ", "))
}

// ms prints d in milliseconds with one decimal.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
}

// tokenFeed mints agent JWTs ahead of the requests that use them, in
// turn for each of its agents: it fills its buffer before the load
// starts and keeps it full while the load runs, so that no request
// waits for a signature and every request carries a fresh token.
type tokenFeed struct {
	ch     chan string
	failed atomic.Pointer[error]
	stop   context.CancelFunc
	done   chan struct{}
}

func newTokenFeed(agents []*client.Agent, aud string, ahead int) *tokenFeed {
	ctx, cancel := context.WithCancel(context.Background())
	f := &tokenFeed{ch: make(chan string, ahead), stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for i := 0; ; i++ {
			tok, err := agents[i%len(agents)].SignJWT(aud, nil)
			if err != nil {
				f.failed.Store(&err)
				close(f.ch)
				return
			}
			select {
			case f.ch <- tok:
			case <-ctx.Done():
				return
			}
		}
	}()
	for len(f.ch) < ahead && f.failed.Load() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	return f
}

// next returns a token, "" when minting failed.
func (f *tokenFeed) next() string { return <-f.ch }

func (f *tokenFeed) close() error {
	f.stop()
	<-f.done
	if err := f.failed.Load(); err != nil {
		return *err
	}
	return nil
}

// readBody is the i-th read of the mix the steady load sends: balances
// of alice's accounts, her account list, and exchange rates.
func readBody(i uint64) []byte {
	switch i % 4 {
	case 0:
		return []byte(`{"capability":"check_balance","arguments":{"account_id":"acc_123"}}`)
	case 1:
		return []byte(`{"capability":"check_balance","arguments":{"account_id":"acc_124"}}`)
	case 2:
		return []byte(`{"capability":"list_accounts"}`)
	}
	return []byte(`{"capability":"exchange_rate","arguments":{"from":"USD","to":"EUR"}}`)
}

// attackReads sends the read mix through the balancer at rate requests
// a second for d (open loop: requests leave on schedule whether or not
// earlier ones were answered), each with a token from feed, using
// vegeta's attacker. It stops early when ctx ends.
func (c *cluster) attackReads(ctx context.Context, feed *tokenFeed, rate int, d time.Duration) []sample {
	var seq atomic.Uint64
	target := c.issuer + "/capability/execute"
	tr := func(t *vegeta.Target) error {
		tok := feed.next()
		if tok == "" {
			return vegeta.ErrNoTargets
		}
		t.Method, t.URL = http.MethodPost, target
		t.Body = readBody(seq.Add(1) - 1)
		t.Header = http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + tok}}
		return nil
	}
	atk := vegeta.NewAttacker(vegeta.Client(c.http), vegeta.Workers(8), vegeta.MaxWorkers(256), vegeta.MaxBody(64<<10))
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()
	var out []sample
	for r := range atk.Attack(vegeta.Targeter(tr), vegeta.Rate{Freq: rate, Per: time.Second}, d, "reads") {
		out = append(out, fromVegeta(r))
	}
	return out
}

// transfer is one transfer the harness asks for, and what became of it.
type transfer struct {
	n       int
	payer   *client.Agent
	from    string
	to      string
	cents   int64 // unique per source account within a run: the ledger row's key
	key     string
	tokens  []string // agent JWTs minted ahead: preview, execute
	samples []sample

	// outcome is acked (answered 200 with transferID), refused (every
	// answer said it did not run) or uncertain (an answer was lost or was
	// a server error, so it may or may not have run).
	outcome    string
	transferID string
	executed   time.Time // when the acknowledged execute started
	note       string

	// repeated is set when the acknowledged execute was sent once more;
	// repeat is the answer (nil when none came).
	repeated bool
	repeat   *sample
}

func (tr *transfer) args() string {
	return fmt.Sprintf(`{"source_account":%q,"destination_account":%q,"amount":%d.%02d,"currency":"USD"}`,
		tr.from, tr.to, tr.cents/100, tr.cents%100)
}

func (tr *transfer) String() string {
	return fmt.Sprintf("transfer #%d (key %s, %s -> %s, %d cents)", tr.n, tr.key, tr.from, tr.to, tr.cents)
}

// transferPlan hands out the transfers of a run, alternating between
// the two people's payer agents, with amounts that are unique per source
// account, and their first tokens minted ahead.
type transferPlan struct {
	c      *cluster
	people []*person
	next   atomic.Int64
}

func (p *transferPlan) make() (*transfer, error) {
	n := int(p.next.Add(1))
	who := p.people[n%2]
	payer := who.payers[(n/2)%len(who.payers)]
	tr := &transfer{n: n, payer: payer, from: who.own, to: who.payee, cents: 100 + int64(n), key: fmt.Sprintf("multi-%d-%d", time.Now().UnixNano(), n)}
	for range 2 {
		tok, err := payer.SignJWT(p.c.issuer+"/capability/execute", nil)
		if err != nil {
			return nil, err
		}
		tr.tokens = append(tr.tokens, tok)
	}
	return tr, nil
}

// token returns a token minted ahead, or a fresh one for a retry.
func (tr *transfer) token(aud string) string {
	if len(tr.tokens) > 0 {
		t := tr.tokens[0]
		tr.tokens = tr.tokens[1:]
		return t
	}
	t, err := tr.payer.SignJWT(aud, nil)
	if err != nil {
		return ""
	}
	return t
}

// transient reports an answer after which the same request may be sent
// again: none came, the server failed, a key is still held by a call in
// progress, or a limit was reached.
func transient(s sample) bool {
	return s.status == 0 || s.status >= 500 || s.status == http.StatusTooManyRequests ||
		(s.status == http.StatusConflict && s.code == "idempotency_in_progress")
}

// ambiguous reports an answer that does not say whether the call ran:
// none came, or the server (or the balancer) failed.
func ambiguous(s sample) bool { return s.status == 0 || s.status >= 500 }

// retryWait is how long to wait before sending again after s.
func retryWait(s sample, attempt int) time.Duration {
	if ra, err := strconv.Atoi(s.header.Get("Retry-After")); err == nil && ra > 0 {
		return min(time.Duration(ra)*time.Second, 2*time.Second)
	}
	return min(time.Duration(attempt+1)*100*time.Millisecond, time.Second)
}

// run previews tr, then executes it with the preview's confirmation
// token under its idempotency key, sending again after a transient
// answer (same key, same confirmation token, a fresh agent JWT) until
// giveUp. It records the outcome in tr.
func (c *cluster) runTransfer(ctx context.Context, tr *transfer, giveUp time.Time) {
	target := c.issuer + "/capability"
	aud := c.issuer + "/capability/execute"
	body := []byte(`{"capability":"transfer_money","arguments":` + tr.args() + `}`)
	var confirmation string
	for attempt := 0; ; attempt++ {
		s := c.send(ctx, target+"/preview", tr.token(aud), body, nil)
		tr.samples = append(tr.samples, s)
		if s.status == http.StatusOK {
			var p struct {
				Confirmation struct {
					Token string `json:"token"`
				} `json:"confirmation"`
			}
			if err := json.Unmarshal(s.body, &p); err != nil || p.Confirmation.Token == "" {
				tr.outcome, tr.note = "refused", "preview without a confirmation token: "+string(s.body)
				return
			}
			confirmation = p.Confirmation.Token
			break
		}
		// A preview changes nothing: whatever happened to it, the
		// transfer was not made.
		if !transient(s) || time.Now().After(giveUp) || ctx.Err() != nil {
			tr.outcome, tr.note = "refused", "preview: "+s.outcome()
			return
		}
		time.Sleep(retryWait(s, attempt))
	}
	body = []byte(`{"capability":"transfer_money","arguments":` + tr.args() + `,"confirmation_token":"` + confirmation + `"}`)
	header := http.Header{"Idempotency-Key": {tr.key}}
	unsure := false
	for attempt := 0; ; attempt++ {
		s := c.send(ctx, target+"/execute", tr.token(aud), body, header)
		tr.samples = append(tr.samples, s)
		unsure = unsure || ambiguous(s)
		if s.status == http.StatusOK {
			var r struct {
				Data struct {
					TransferID string `json:"transfer_id"`
				} `json:"data"`
			}
			if err := json.Unmarshal(s.body, &r); err != nil || r.Data.TransferID == "" {
				tr.outcome, tr.note = "uncertain", "200 without a transfer id: "+string(s.body)
				return
			}
			tr.outcome, tr.transferID, tr.executed = "acked", r.Data.TransferID, s.start
			return
		}
		if !transient(s) || time.Now().After(giveUp) || ctx.Err() != nil {
			tr.outcome, tr.note = "refused", s.outcome()
			if unsure {
				tr.outcome = "uncertain"
			}
			return
		}
		time.Sleep(retryWait(s, attempt))
	}
}

// repeatTransfer sends an acknowledged transfer's execute once more, as
// a client that lost the answer would: the same key and confirmation
// token with a fresh agent JWT. It records the answer in tr.repeat.
func (c *cluster) repeatTransfer(ctx context.Context, tr *transfer) {
	tr.repeated = true
	// The confirmation token came with the preview's answer.
	var token string
	for _, s := range tr.samples {
		var p struct {
			Confirmation struct {
				Token string `json:"token"`
			} `json:"confirmation"`
		}
		if json.Unmarshal(s.body, &p) == nil && p.Confirmation.Token != "" {
			token = p.Confirmation.Token
		}
	}
	aud := c.issuer + "/capability/execute"
	body := []byte(`{"capability":"transfer_money","arguments":` + tr.args() + `,"confirmation_token":"` + token + `"}`)
	for attempt := 0; attempt < 20; attempt++ {
		s := c.send(ctx, c.issuer+"/capability/execute", tr.token(aud), body, http.Header{"Idempotency-Key": {tr.key}})
		if transient(s) {
			time.Sleep(retryWait(s, attempt))
			continue
		}
		tr.repeat = &s
		return
	}
}

// repeatProblem says what is wrong with the answer to a repeated
// transfer, "" when it is the stored answer: 200, Idempotent-Replayed,
// the same transfer id.
func (tr *transfer) repeatProblem() string {
	switch {
	case !tr.repeated:
		return ""
	case tr.repeat == nil:
		return fmt.Sprintf("%s sent again: no answer after 20 attempts", tr)
	}
	s := tr.repeat
	var r struct {
		Data struct {
			TransferID string `json:"transfer_id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(s.body, &r)
	if s.status == http.StatusOK && r.Data.TransferID == tr.transferID && s.header.Get("Idempotent-Replayed") == "true" {
		return ""
	}
	return fmt.Sprintf("%s sent again: %s, replayed %q, body %s; the first answer had %s",
		tr, s.outcome(), s.header.Get("Idempotent-Replayed"), s.body, tr.transferID)
}

// driveTransfers runs transfers from plan with workers at a time (closed
// loop) until ctx ends or limit transfers were made (0: no limit). Every
// repeatEvery-th acknowledged transfer is sent once more. It returns
// the transfers, and the errors of minting their tokens.
func (c *cluster) driveTransfers(ctx context.Context, plan *transferPlan, workers, limit, repeatEvery int, giveUp time.Duration) ([]*transfer, []error) {
	queue := make(chan *transfer, workers*4)
	var (
		mu   sync.Mutex
		all  []*transfer
		errs []error
		wg   sync.WaitGroup
	)
	// The plan mints each transfer's first tokens while earlier ones run.
	go func() {
		defer close(queue)
		for i := 0; limit == 0 || i < limit; i++ {
			tr, err := plan.make()
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			select {
			case queue <- tr:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range workers {
		wg.Go(func() {
			for tr := range queue {
				if ctx.Err() != nil {
					return
				}
				// A transfer started is seen through, fault or not.
				c.runTransfer(context.WithoutCancel(ctx), tr, time.Now().Add(giveUp))
				if tr.outcome == "acked" && repeatEvery > 0 && tr.n%repeatEvery == 0 {
					c.repeatTransfer(context.WithoutCancel(ctx), tr)
				}
				mu.Lock()
				all = append(all, tr)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return all, errs
}
