package store_test

import (
	"testing"

	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/storetest"
)

func BenchmarkMemory(b *testing.B) {
	storetest.BenchProvider(b, func(b *testing.B) store.Store { return store.NewMemory(nil) })
}
