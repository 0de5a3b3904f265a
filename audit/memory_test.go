package audit_test

import (
	"testing"

	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Audit(t, func(t *testing.T) audit.Store { return audit.NewMemory(nil) })
}
