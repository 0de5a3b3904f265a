package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Changes is a count of the writes to a provider's records, shared by
// every instance whose store reads it: sqlstore's DB.SetChanges takes
// it, so that an instance keeps the agents and hosts it reads for as
// long as no instance has written since. It is the Redis string key
// Config.Prefix + "changes" (with Config.Prefixes, Prefixes.Replay +
// "changes"), holding a decimal integer that INCR moves on.
//
// A count that Redis lost (a restart without persistence, a flush)
// starts again from a random value between 2^32 and 2^52 rather than
// from zero, so that it does not pass again through the values the
// instances' copies were read at. Like every key of the Store, it must
// not be evicted. It is safe for concurrent use.
type Changes struct {
	client redis.UniversalClient
	key    string
}

// startScript sets the count to ARGV[1] unless it is set, moves it on
// by one when ARGV[2] is 1, and returns it as Redis holds it, a string
// (a Lua number is a double).
var startScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SET', KEYS[1], ARGV[1]) end
if ARGV[2] == '1' then redis.call('INCR', KEYS[1]) end
return redis.call('GET', KEYS[1])
`)

// randomStart is where a lost count starts again: below 2^52, so that
// every count stays exact even as a double.
func randomStart() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return 1<<32 + binary.LittleEndian.Uint64(b[:])%(1<<52-1<<32)
}

// Count returns the count now: one GET, or, when the key is missing, a
// script that starts it.
func (c *Changes) Count(ctx context.Context) (uint64, error) {
	n, err := c.client.Get(ctx, c.key).Uint64()
	if errors.Is(err, redis.Nil) {
		n, err = startScript.Run(ctx, c.client, []string{c.key}, randomStart(), 0).Uint64()
	}
	if err != nil {
		return 0, fmt.Errorf("redisstore: reading the count of changes: %w", err)
	}
	return n, nil
}

// Add moves the count on by one, starting it first if it is missing.
func (c *Changes) Add(ctx context.Context) error {
	if err := startScript.Run(ctx, c.client, []string{c.key}, randomStart(), 1).Err(); err != nil {
		return fmt.Errorf("redisstore: moving the count of changes on: %w", err)
	}
	return nil
}
