package loadgen

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// minted is an agent JWT signed ahead of its request.
type minted struct {
	token string
	at    time.Time
}

// maxTokenAge is the age past which a minted token is dropped rather
// than sent: agent JWTs live 60 s, and a request may wait in a retry.
const maxTokenAge = 40 * time.Second

// minter keeps, for every agent, a buffer of fresh agent JWTs, so that
// no request waits for a signature.
type minter struct {
	aud    string
	agents []*Agent
	tokens []chan minted // by agent index
	// need wakes the signer of an agent whose buffer was drawn from:
	// agent i belongs to signer i % len(need).
	need    []chan struct{}
	next    atomic.Uint64
	waits   atomic.Int64
	dropped atomic.Int64
	errs    atomic.Int64
	wg      sync.WaitGroup
}

// newMinter buffers about total tokens, at least 4 per agent.
func newMinter(aud string, agents []*Agent, total int) *minter {
	per := max(4, total/len(agents))
	m := &minter{aud: aud, agents: agents, tokens: make([]chan minted, len(agents)), need: []chan struct{}{make(chan struct{}, 1)}}
	for i := range m.tokens {
		m.tokens[i] = make(chan minted, per)
	}
	return m
}

// fill signs until every buffer is full.
func (m *minter) fill() error {
	for i, ch := range m.tokens {
		for len(ch) < cap(ch) {
			t, err := m.mint(i)
			if err != nil {
				return err
			}
			ch <- t
		}
	}
	return nil
}

func (m *minter) mint(i int) (minted, error) {
	tok, err := m.agents[i].SignJWT(m.aud)
	return minted{token: tok, at: time.Now()}, err
}

// run keeps the buffers full with workers signers until ctx ends, each
// looking after every workers-th agent and sleeping while its buffers
// are full. It must be called once, before take.
func (m *minter) run(ctx context.Context, workers int) {
	workers = min(workers, len(m.agents))
	m.need = make([]chan struct{}, workers)
	for w := range m.need {
		m.need[w] = make(chan struct{}, 1)
	}
	for w := range workers {
		m.wg.Go(func() {
			for {
				full := true
				for i := w; i < len(m.agents); i += workers {
					ch := m.tokens[i]
					if len(ch) == cap(ch) {
						continue
					}
					full = false
					t, err := m.mint(i)
					if err != nil {
						m.errs.Add(1)
						continue
					}
					select {
					case ch <- t:
					default:
					}
				}
				if full {
					select {
					case <-ctx.Done():
						return
					case <-m.need[w]:
					}
				} else if ctx.Err() != nil {
					return
				}
			}
		})
	}
}

// next returns the index of the next agent in turn.
func (m *minter) nextAgent() int { return int(m.next.Add(1) % uint64(len(m.agents))) }

// wake tells agent i's signer that its buffer has room.
func (m *minter) wake(i int) {
	select {
	case m.need[i%len(m.need)] <- struct{}{}:
	default:
	}
}

// take returns a token of agent i minted less than maxTokenAge ago,
// waiting for one if its buffer ran dry (which Summary.TokenWaits
// counts).
func (m *minter) take(i int) string {
	ch := m.tokens[i]
	for {
		var t minted
		select {
		case t = <-ch:
		default:
			m.waits.Add(1)
			m.wake(i)
			t = <-ch
		}
		m.wake(i)
		if time.Since(t.at) < maxTokenAge {
			return t.token
		}
		m.dropped.Add(1)
	}
}
