package audit_test

import (
	"testing"

	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/audit/audittest"
)

func TestMemoryConformance(t *testing.T) {
	audittest.Run(t, func(t *testing.T) audit.Store { return audit.NewMemory(nil) })
}
