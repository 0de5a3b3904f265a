package jobs_test

import (
	"testing"

	"github.com/agentcap/agentcap/jobs"
	"github.com/agentcap/agentcap/jobs/jobstest"
)

func TestMemoryStore(t *testing.T) {
	jobstest.Run(t, jobstest.Factory{
		New:    func(*testing.T) jobs.Store { return jobs.NewMemoryStore() },
		Reopen: func(_ *testing.T, s jobs.Store) jobs.Store { return s },
	})
}
