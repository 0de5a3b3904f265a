package jobs_test

import (
	"testing"

	"github.com/agentcap/agentcap/jobs"
	"github.com/agentcap/agentcap/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Jobs(t, storetest.JobsFactory{
		New:    func(*testing.T) jobs.Store { return jobs.NewMemoryStore() },
		Reopen: func(_ *testing.T, s jobs.Store) jobs.Store { return s },
	})
}
