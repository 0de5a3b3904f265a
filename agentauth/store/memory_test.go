package store_test

import (
	"testing"

	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Provider(t, func(t *testing.T) store.Store {
		s := store.NewMemory(nil)
		t.Cleanup(func() { s.Close() })
		return s
	})
}
