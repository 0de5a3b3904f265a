package confirm_test

import (
	"testing"

	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Confirm(t, storetest.ConfirmFactory{
		New:    func(*testing.T) confirm.Store { return confirm.NewMemoryStore() },
		Reopen: func(_ *testing.T, s confirm.Store) confirm.Store { return s },
	})
}
