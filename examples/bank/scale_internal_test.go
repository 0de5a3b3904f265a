package main

import "testing"

// Without -redis the stores get no Redis client at all: an interface
// holding a nil *redis.Client would pass their nil checks and panic on
// the first confirmation token or idempotency key.
func TestNoRedisClient(t *testing.T) {
	var s shared
	if c := s.redisClient(); c != nil {
		t.Fatalf("redisClient() = %#v, want nil", c)
	}
}
