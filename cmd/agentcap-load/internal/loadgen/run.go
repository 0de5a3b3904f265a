package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Kinds of request, as Summary.Kinds and Observation name them.
const (
	KindRead     = "read"             // check_balance or list_accounts
	KindBatch    = "batch"            // both in one batch-execute
	KindPreview  = "transfer_preview" // a transfer's preview, which hands out its confirmation token
	KindTransfer = "transfer_execute" // the transfer, with the token and an Idempotency-Key
	KindInvalid  = "invalid"          // a read with a forged, mis-addressed or malformed JWT
	KindReplay   = "replay"           // a read with a JWT that was already accepted
)

// expected are the statuses each kind should get: anything else is
// counted as unexpected. A transfer may be refused for want of money,
// since Bob's agents send money back from a small account.
var expected = map[string][]int{
	KindRead:     {200},
	KindBatch:    {200},
	KindPreview:  {200, 409},
	KindTransfer: {200, 409},
	KindInvalid:  {401},
	KindReplay:   {401},
}

// Mix weighs the kinds of request. A transfer counts once: its preview
// and its execute follow each other.
type Mix struct {
	Read, Transfer, Batch, Invalid, Replay int
}

// DefaultMix is mostly reads, with some of everything.
var DefaultMix = Mix{Read: 60, Transfer: 15, Batch: 10, Invalid: 10, Replay: 5}

// ParseMix reads "read=60,transfer=15,batch=10,invalid=10,replay=5"
// (any subset; the others weigh 0).
func ParseMix(s string) (Mix, error) {
	var m Mix
	for item := range strings.SplitSeq(s, ",") {
		name, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 {
			return m, fmt.Errorf("loadgen: %q is not kind=weight", item)
		}
		switch name {
		case "read":
			m.Read = n
		case "transfer":
			m.Transfer = n
		case "batch":
			m.Batch = n
		case "invalid":
			m.Invalid = n
		case "replay":
			m.Replay = n
		default:
			return m, fmt.Errorf("loadgen: unknown kind %q (read, transfer, batch, invalid, replay)", name)
		}
	}
	if m == (Mix{}) {
		return m, errors.New("loadgen: the mix weighs nothing")
	}
	return m, nil
}

// Options configure Run.
type Options struct {
	// Target is the location's issuer URL; capabilities are served at
	// its path (Target + "/capability/execute").
	Target string
	Agents []*Agent
	Mix    Mix
	// Rate is the open-loop rate, requests a second; 0 means closed loop
	// at Concurrency.
	Rate int
	// Concurrency is the number of requests in flight in closed loop
	// (and the initial number of workers in open loop; default 16).
	Concurrency int
	Duration    time.Duration
	// Timeout bounds each request (default 10 s).
	Timeout time.Duration
	// Retries is how many times a transfer is sent again after an
	// answer that may not be final (no answer, 5xx, 429, 409
	// idempotency_in_progress), with the same Idempotency-Key and
	// confirmation token (default 6).
	Retries int
	// ResolveFor is how long, after the timed phase, transfers still
	// awaiting a retry keep being retried (default 30 s).
	ResolveFor time.Duration
	// Seed makes the sequence of kinds, agents and amounts repeatable.
	Seed uint64
	// Observe, when set, sees every answer as it arrives (from one
	// goroutine).
	Observe func(Observation)
}

// Observation is one answer.
type Observation struct {
	Kind    string
	Agent   string
	Start   time.Time
	Latency time.Duration
	// Status is the HTTP status, 0 when no answer came.
	Status int
	// Code is the error code of the answer's body, if any.
	Code string
	// Err is the transport error, if any.
	Err string
	// Expected reports a status the kind should get.
	Expected bool
}

// Summary is what Run measured.
type Summary struct {
	Target      string  `json:"target"`
	Mode        string  `json:"mode"` // "rate" or "concurrency"
	Rate        int     `json:"rate,omitempty"`
	Concurrency int     `json:"concurrency,omitempty"`
	Seconds     float64 `json:"seconds"`
	Agents      int     `json:"agents"`
	// Requests counts every answer and failure; Throughput is the
	// requests a second that got an expected answer.
	Requests   int                   `json:"requests"`
	Throughput float64               `json:"throughput"`
	All        *KindStats            `json:"all"`
	Kinds      map[string]*KindStats `json:"kinds"`
	Transfers  TransferStats         `json:"transfers"`
	// TokenWaits counts requests that waited for a signature because
	// the minter fell behind; TokensDropped, tokens that grew too old.
	TokenWaits    int64 `json:"token_waits"`
	TokensDropped int64 `json:"tokens_dropped"`
}

// KindStats summarises the answers of one kind.
type KindStats struct {
	Requests int `json:"requests"`
	// Status counts answers by HTTP status ("0": no answer).
	Status map[string]int `json:"status"`
	// Codes counts error codes of answer bodies.
	Codes map[string]int `json:"codes,omitempty"`
	// Errors counts transport errors.
	Errors     map[string]int `json:"errors,omitempty"`
	Unexpected int            `json:"unexpected"`
	// Samples holds the first body of each unexpected status and code.
	Samples map[string]string `json:"samples,omitempty"`
	Latency Latency           `json:"latency_ms"`

	m vegeta.Metrics
}

// Latency holds percentiles in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// TransferStats follows the transfers.
type TransferStats struct {
	// Started transfers had their preview sent.
	Started int `json:"started"`
	// Acknowledged transfers were answered 200 with a transfer id.
	Acknowledged int `json:"acknowledged"`
	// Refused counts definitive refusals by status and code
	// ("409 insufficient_funds").
	Refused map[string]int `json:"refused,omitempty"`
	// Retries counts executes sent again.
	Retries int `json:"retries"`
	// Uncertain transfers may or may not have run: no final answer
	// came, or a retry found the token used without a stored answer.
	Uncertain int `json:"uncertain"`
	// Abandoned transfers were previewed but the timed phase ended
	// before their execute was sent: their tokens were never used.
	Abandoned int `json:"abandoned"`
	// Acks lists the acknowledged transfers.
	Acks []TransferAck `json:"acks"`
	// UncertainKeys are the Idempotency-Keys of the uncertain transfers.
	UncertainKeys []string `json:"uncertain_keys,omitempty"`
}

// TransferAck is an acknowledged transfer.
type TransferAck struct {
	TransferID  string `json:"transfer_id"`
	Agent       string `json:"agent"`
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Amount      string `json:"amount"`
	Key         string `json:"idempotency_key"`
}

// transfer is one transfer in progress.
type transfer struct {
	agent     int
	args      json.RawMessage
	amount    string
	key       string
	token     string // the confirmation token, once previewed
	previews  int
	sends     int
	uncertain bool // an attempt may have run
	state     string
}

// Transfer states.
const (
	stPreview  = "preview"  // preview sent or to be sent
	stExecute  = "execute"  // execute sent or to be sent
	stRetrying = "retrying" // waiting to be sent again
	stDone     = "done"
)

// request is one request in flight, by the sequence number its URL's
// fragment carries.
type request struct {
	kind  string
	agent int
	token string
	tr    *transfer
}

// runner is one Run.
type runner struct {
	o       Options
	base    string
	aud     string
	mint    *minter
	follow  chan *request
	done    chan struct{}
	weights []int
	kinds   []string

	reads atomic.Uint64 // reads sent, to alternate the two

	mu        sync.Mutex
	rnd       *rand.Rand
	seq       int
	pending   map[int]*request
	transfers []*transfer
	replays   []replayable // ring of accepted reads, for replays
	replayAt  int
	forged    []string // invalid tokens, minted at start
	sum       *Summary
}

type replayable struct {
	agent int
	token string
}

// maxBuffered caps the tokens signed ahead, over all agents.
const maxBuffered = 10000

// Run sends the mix at o.Target for o.Duration and summarises it.
func Run(ctx context.Context, o Options) (*Summary, error) {
	if len(o.Agents) == 0 {
		return nil, errors.New("loadgen: no agents")
	}
	if o.Duration <= 0 {
		return nil, errors.New("loadgen: no duration")
	}
	if o.Rate < 0 || o.Concurrency < 0 {
		return nil, errors.New("loadgen: negative rate or concurrency")
	}
	if o.Concurrency == 0 {
		o.Concurrency = 16
	}
	if o.Mix == (Mix{}) {
		o.Mix = DefaultMix
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Retries == 0 {
		o.Retries = 6
	}
	if o.ResolveFor == 0 {
		o.ResolveFor = 30 * time.Second
	}
	base := strings.TrimRight(o.Target, "/")
	r := &runner{
		o:       o,
		base:    base,
		aud:     base + "/capability/execute",
		follow:  make(chan *request, 1<<16),
		done:    make(chan struct{}),
		rnd:     rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)),
		pending: map[int]*request{},
		sum: &Summary{
			Target: base, Agents: len(o.Agents), All: newKindStats(),
			Kinds: map[string]*KindStats{}, Transfers: TransferStats{Refused: map[string]int{}},
		},
	}
	for _, kw := range []struct {
		kind string
		w    int
	}{{KindRead, o.Mix.Read}, {KindPreview, o.Mix.Transfer}, {KindBatch, o.Mix.Batch}, {KindInvalid, o.Mix.Invalid}, {KindReplay, o.Mix.Replay}} {
		if kw.w > 0 {
			r.kinds = append(r.kinds, kw.kind)
			r.weights = append(r.weights, kw.w)
		}
	}
	if err := r.forge(); err != nil {
		return nil, err
	}
	// Tokens for about five seconds of load (at least 4 per agent),
	// signed before the timed phase and topped up during it.
	perSecond := o.Rate
	if perSecond == 0 {
		perSecond = o.Concurrency * 200
	}
	r.mint = newMinter(r.aud, o.Agents, min(5*perSecond, maxBuffered))
	if err := r.mint.fill(); err != nil {
		return nil, fmt.Errorf("loadgen: signing agent JWTs: %w", err)
	}
	mintCtx, stopMint := context.WithCancel(ctx)
	defer stopMint()
	r.mint.run(mintCtx, 2)

	attacker := vegeta.NewAttacker(
		vegeta.Client(newHTTPClient(o.Timeout, 4*o.Concurrency)),
		vegeta.Workers(uint64(o.Concurrency)),
		vegeta.MaxBody(64<<10),
	)
	pacer := vegeta.Pacer(vegeta.Rate{Freq: o.Rate, Per: time.Second})
	if o.Rate == 0 {
		r.sum.Mode, r.sum.Concurrency = "concurrency", o.Concurrency
		vegeta.MaxWorkers(uint64(o.Concurrency))(attacker)
	} else {
		r.sum.Mode, r.sum.Rate = "rate", o.Rate
	}
	go func() {
		select {
		case <-ctx.Done():
			attacker.Stop()
		case <-r.done:
		}
	}()
	start := time.Now()
	for res := range attacker.Attack(r.target, pacer, o.Duration, "agentcap-load") {
		r.result(res)
	}
	elapsed := time.Since(start)
	close(r.done)
	r.resolve(ctx)
	stopMint()
	r.mint.wg.Wait()
	return r.finish(elapsed), ctx.Err()
}

func newKindStats() *KindStats {
	return &KindStats{Status: map[string]int{}, Codes: map[string]int{}, Errors: map[string]int{}, Samples: map[string]string{}}
}

// forge signs the invalid tokens: one for another audience and one
// whose signature is broken (more are made per request from fresh
// tokens), and a malformed one.
func (r *runner) forge() error {
	a := r.o.Agents[0]
	other, err := a.SignJWT("https://elsewhere.example")
	if err != nil {
		return err
	}
	good, err := a.SignJWT(r.aud)
	if err != nil {
		return err
	}
	r.forged = []string{other, breakSignature(good), "not.a.jwt"}
	return nil
}

// breakSignature changes the first character of a JWT's signature.
func breakSignature(tok string) string {
	i := strings.LastIndexByte(tok, '.') + 1
	if i <= 0 || i >= len(tok) {
		return tok + "x"
	}
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	return tok[:i] + string(c) + tok[i+1:]
}

// target is the vegeta.Targeter: a follow-up (a transfer's execute or a
// retry) when one is waiting, else a new request of a kind drawn from
// the mix.
func (r *runner) target(t *vegeta.Target) error {
	var rq *request
	select {
	case rq = <-r.follow:
	default:
		rq = r.newRequest()
	}
	r.fill(t, rq)
	return nil
}

func (r *runner) newRequest() *request {
	r.mu.Lock()
	defer r.mu.Unlock()
	total := 0
	for _, w := range r.weights {
		total += w
	}
	n := r.rnd.IntN(total)
	kind := r.kinds[len(r.kinds)-1]
	for i, w := range r.weights {
		if n < w {
			kind = r.kinds[i]
			break
		}
		n -= w
	}
	rq := &request{kind: kind, agent: r.mint.nextAgent()}
	switch kind {
	case KindReplay:
		if len(r.replays) == 0 {
			rq.kind = KindRead
			break
		}
		rp := r.replays[r.rnd.IntN(len(r.replays))]
		rq.agent, rq.token = rp.agent, rp.token
	case KindInvalid:
		if i := r.rnd.IntN(len(r.forged) + 1); i < len(r.forged) {
			rq.token = r.forged[i]
		}
	case KindPreview:
		a := r.o.Agents[rq.agent]
		cents := 1 + r.rnd.IntN(100)
		amount := fmt.Sprintf("%d.%02d", cents/100, cents%100)
		args, _ := json.Marshal(map[string]any{
			"source_account": a.Source, "destination_account": a.Destination,
			"amount": json.Number(amount), "currency": "USD",
		})
		rq.tr = &transfer{agent: rq.agent, args: args, amount: amount, key: fmt.Sprintf("load-%x-%d", r.o.Seed, len(r.transfers)), state: stPreview}
		r.transfers = append(r.transfers, rq.tr)
	}
	return rq
}

// fill writes rq into t, with a fresh token unless rq carries one.
func (r *runner) fill(t *vegeta.Target, rq *request) {
	a := r.o.Agents[rq.agent]
	token := rq.token
	if token == "" {
		token = r.mint.take(rq.agent)
		if rq.kind == KindInvalid {
			token = breakSignature(token)
		}
	}
	if rq.kind != KindReplay && rq.kind != KindInvalid {
		rq.token = token
	}
	t.Method = http.MethodPost
	t.Header = http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}
	path, body := "/capability/execute", readBody(a, int(r.reads.Add(1)))
	switch rq.kind {
	case KindBatch:
		path = "/capability/batch-execute"
		body = []byte(`{"requests":[{"id":"balance","capability":"check_balance","arguments":{"account_id":` + strconv.Quote(a.Source) + `}},` +
			`{"id":"accounts","capability":"list_accounts","arguments":{}}]}`)
	case KindPreview:
		path = "/capability/preview"
		body = []byte(`{"capability":"transfer_money","arguments":` + string(rq.tr.args) + `}`)
	case KindTransfer:
		body = []byte(`{"capability":"transfer_money","arguments":` + string(rq.tr.args) + `,"confirmation_token":` + strconv.Quote(rq.tr.token) + `}`)
		t.Header.Set("Idempotency-Key", rq.tr.key)
	}
	t.Body = body
	r.mu.Lock()
	r.seq++
	n := r.seq
	r.pending[n] = rq
	r.mu.Unlock()
	// The fragment is never sent: it ties the answer to its request.
	t.URL = r.base + path + "#" + strconv.Itoa(n)
}

// readBody is the i-th read: list_accounts and check_balance in turn.
func readBody(a *Agent, i int) []byte {
	if i%2 == 0 {
		return []byte(`{"capability":"list_accounts","arguments":{}}`)
	}
	return []byte(`{"capability":"check_balance","arguments":{"account_id":` + strconv.Quote(a.Source) + `}}`)
}

// errorCode reads the error code of an answer body, if it has one.
func errorCode(body []byte) string {
	var b struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil || len(b.Error) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(b.Error, &s) == nil {
		return s
	}
	var o struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(b.Error, &o)
	return o.Code
}

// result accounts for one answer and sends what follows from it.
func (r *runner) result(res *vegeta.Result) {
	n, _ := strconv.Atoi(res.URL[strings.LastIndexByte(res.URL, '#')+1:])
	r.mu.Lock()
	rq := r.pending[n]
	delete(r.pending, n)
	r.mu.Unlock()
	if rq == nil {
		return
	}
	code := errorCode(res.Body)
	status := int(res.Code)
	ok := slices.Contains(expected[rq.kind], status)
	if ok && status == 409 && code != "insufficient_funds" {
		ok = false
	}
	errText := ""
	if status == 0 {
		errText = res.Error
	}
	r.count(rq.kind, res, code, errText, ok)
	if !ok {
		r.sample(rq.kind, status, code, res.Body)
	}
	if r.o.Observe != nil {
		r.o.Observe(Observation{Kind: rq.kind, Agent: r.o.Agents[rq.agent].ID, Start: res.Timestamp, Latency: res.Latency,
			Status: status, Code: code, Err: errText, Expected: ok})
	}
	switch rq.kind {
	case KindRead, KindBatch:
		if status == 200 {
			r.mu.Lock()
			rp := replayable{agent: rq.agent, token: rq.token}
			if len(r.replays) < 256 {
				r.replays = append(r.replays, rp)
			} else {
				r.replays[r.replayAt%len(r.replays)] = rp
				r.replayAt++
			}
			r.mu.Unlock()
		}
	case KindPreview:
		r.previewed(rq.tr, status, code, res.Body)
	case KindTransfer:
		r.executed(rq.tr, status, code, res.Body)
	}
}

func (r *runner) count(kind string, res *vegeta.Result, code, errText string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ks := r.sum.Kinds[kind]
	if ks == nil {
		ks = newKindStats()
		r.sum.Kinds[kind] = ks
	}
	for _, s := range []*KindStats{ks, r.sum.All} {
		s.m.Add(res)
		s.Requests++
		s.Status[strconv.Itoa(int(res.Code))]++
		if code != "" {
			s.Codes[code]++
		}
		if errText != "" {
			s.Errors[shorten(errText)]++
		}
		if !ok {
			s.Unexpected++
		}
	}
}

// sample keeps the first body of an unexpected answer.
func (r *runner) sample(kind string, status int, code string, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ks := r.sum.Kinds[kind]
	key := strconv.Itoa(status) + " " + code
	if _, ok := ks.Samples[key]; ok || len(ks.Samples) >= 8 {
		return
	}
	if len(body) > 300 {
		body = body[:300]
	}
	ks.Samples[key] = string(body)
}

// shorten keeps the end of a transport error, which names the cause,
// without the request's URL.
func shorten(e string) string {
	if i := strings.LastIndex(e, ": "); i >= 0 {
		e = e[i+2:]
	}
	if len(e) > 80 {
		e = e[:80]
	}
	return e
}

// retryable reports an answer after which a transfer may still run if
// sent again.
func retryable(status int, code string) bool {
	return status == 0 || status >= 500 || status == 429 || (status == 409 && code == "idempotency_in_progress")
}

// previewed handles a transfer's preview: its token makes the execute.
func (r *runner) previewed(tr *transfer, status int, code string, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tr.previews++
	if tr.previews == 1 {
		r.sum.Transfers.Started++
	}
	switch {
	case status == 200:
		var p struct {
			Confirmation struct {
				Token string `json:"token"`
			} `json:"confirmation"`
		}
		if json.Unmarshal(body, &p) != nil || p.Confirmation.Token == "" {
			tr.state = stDone
			r.sum.Transfers.Refused["200 preview without a confirmation token"]++
			return
		}
		tr.token, tr.state = p.Confirmation.Token, stExecute
		r.send(&request{kind: KindTransfer, agent: tr.agent, tr: tr}, 0)
	case retryable(status, code) && tr.previews <= r.o.Retries:
		// A preview changes nothing: it is simply asked again.
		r.send(&request{kind: KindPreview, agent: tr.agent, tr: tr}, backoff(tr.previews))
	default:
		tr.state = stDone
		r.sum.Transfers.Refused[strconv.Itoa(status)+" "+code]++
	}
}

// executed handles a transfer's answer.
func (r *runner) executed(tr *transfer, status int, code string, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tr.sends++
	switch {
	case status == 200:
		var res struct {
			Data struct {
				TransferID string `json:"transfer_id"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &res)
		tr.state = stDone
		a := r.o.Agents[tr.agent]
		r.sum.Transfers.Acknowledged++
		r.sum.Transfers.Acks = append(r.sum.Transfers.Acks, TransferAck{TransferID: res.Data.TransferID, Agent: a.ID,
			Source: a.Source, Destination: a.Destination, Amount: tr.amount, Key: tr.key})
	case retryable(status, code):
		tr.uncertain = true
		if tr.sends > r.o.Retries {
			tr.state = stDone
			r.sum.Transfers.Uncertain++
			r.sum.Transfers.UncertainKeys = append(r.sum.Transfers.UncertainKeys, tr.key)
			return
		}
		tr.state = stRetrying
		r.sum.Transfers.Retries++
		r.send(&request{kind: KindTransfer, agent: tr.agent, tr: tr}, backoff(tr.sends))
	case status == 409 && code == "confirmation_used" && tr.uncertain:
		// An earlier attempt consumed the token, and its answer was not
		// kept: it may have moved the money or failed after the token.
		tr.state = stDone
		r.sum.Transfers.Uncertain++
		r.sum.Transfers.UncertainKeys = append(r.sum.Transfers.UncertainKeys, tr.key)
	default:
		tr.state = stDone
		r.sum.Transfers.Refused[strconv.Itoa(status)+" "+code]++
	}
}

// backoff is the wait before the n-th retry: 100 ms doubling, at most 3 s.
func backoff(n int) time.Duration {
	return min(100*time.Millisecond<<min(n, 6), 3*time.Second)
}

// send queues a follow-up after wait, unless the timed phase is over
// (then resolve or finish deals with the transfer). r.mu is held.
func (r *runner) send(rq *request, wait time.Duration) {
	push := func() {
		select {
		case <-r.done:
		case r.follow <- rq:
		}
	}
	if wait == 0 {
		select {
		case r.follow <- rq:
		default:
			go push()
		}
		return
	}
	time.AfterFunc(wait, push)
}

// resolve sends, outside the timed phase and one at a time, the
// executes of transfers still awaiting a retry, until each has a final
// answer or ResolveFor has passed.
func (r *runner) resolve(ctx context.Context) {
	deadline := time.Now().Add(r.o.ResolveFor)
	hc := newHTTPClient(r.o.Timeout, 1)
	for {
		r.mu.Lock()
		var todo []*transfer
		for _, tr := range r.transfers {
			if tr.state == stRetrying {
				todo = append(todo, tr)
			}
		}
		r.mu.Unlock()
		if len(todo) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return
		}
		for _, tr := range todo {
			status, code, body := r.direct(ctx, hc, tr)
			r.mu.Lock()
			tr.sends = min(tr.sends, r.o.Retries-1) // keep retrying until the deadline
			r.mu.Unlock()
			r.executed(tr, status, code, body)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// direct sends a transfer's execute with a freshly signed token.
func (r *runner) direct(ctx context.Context, hc *http.Client, tr *transfer) (int, string, []byte) {
	a := r.o.Agents[tr.agent]
	tok, err := a.SignJWT(r.aud)
	if err != nil {
		return 0, "", nil
	}
	body := `{"capability":"transfer_money","arguments":` + string(tr.args) + `,"confirmation_token":` + strconv.Quote(tr.token) + `}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/capability/execute", strings.NewReader(body))
	if err != nil {
		return 0, "", nil
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", tr.key)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", nil
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, errorCode(buf.Bytes()), buf.Bytes()
}

// newHTTPClient returns the client requests go out with: keep-alive
// HTTP/1.1 with idle connections for conns requests in flight, no
// redirects, and no resending by the transport itself (see singleShot).
func newHTTPClient(timeout time.Duration, conns int) *http.Client {
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
	}
	return &http.Client{
		Timeout:       timeout,
		Transport:     singleShot{tr},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// singleShot keeps net/http's transport from sending a request again by
// itself. It does so when a reused connection breaks before the answer,
// for a POST too when the request has an Idempotency-Key header, and it
// sends the same agent JWT, which a location refuses as a replay: an
// execute that ran would look refused (401 invalid_jwt). Without the
// request's GetBody the transport cannot resend it; Run sends it again
// itself, with a fresh token.
type singleShot struct{ base http.RoundTripper }

func (s singleShot) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.GetBody == nil {
		return s.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.GetBody = nil
	return s.base.RoundTrip(r)
}

// finish closes the statistics.
func (r *runner) finish(elapsed time.Duration) *Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sum
	s.Seconds = elapsed.Seconds()
	for _, tr := range r.transfers {
		switch tr.state {
		case stExecute, stPreview:
			if tr.token != "" || tr.previews > 0 {
				s.Transfers.Abandoned++
			}
		case stRetrying:
			s.Transfers.Uncertain++
			s.Transfers.UncertainKeys = append(s.Transfers.UncertainKeys, tr.key)
		}
	}
	for _, ks := range append(mapsValues(s.Kinds), s.All) {
		ks.m.Close()
		l := ks.m.Latencies
		ks.Latency = Latency{P50: ms(l.P50), P90: ms(l.P90), P99: ms(l.P99), Max: ms(l.Max), Mean: ms(l.Mean)}
	}
	s.Requests = s.All.Requests
	if s.Seconds > 0 {
		s.Throughput = float64(s.All.Requests-s.All.Unexpected) / s.Seconds
	}
	s.TokenWaits, s.TokensDropped = r.mint.waits.Load(), r.mint.dropped.Load()
	return s
}

func mapsValues(m map[string]*KindStats) []*KindStats {
	out := make([]*KindStats, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
