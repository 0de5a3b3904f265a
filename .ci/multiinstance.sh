#!/usr/bin/env bash
# The multi-instance harness, short form: three banks in provider mode on
# one PostgreSQL and one Redis behind a round-robin balancer, held to the
# invariants of each scenario under load (examples/bank/multi_*_test.go,
# build tag multiinstance; RELIABILITY.md describes it).
#
# It needs AGENTCAP_POSTGRES_DSN (the harness works in its own database,
# agentcap_multi, created on that server, one schema a run) and
# AGENTCAP_REDIS_ADDR. The faults scenario restarts that Redis when
# AGENTCAP_MULTI_REDIS_RESTART=1, and that PostgreSQL when
# AGENTCAP_MULTI_PG_CTL (the pg_ctl program) and AGENTCAP_MULTI_PG_DATA
# (the server's data directory) are set; each restart is skipped, with
# the reason, otherwise. AGENTCAP_ARTIFACTS, when set, receives the
# figures.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${AGENTCAP_POSTGRES_DSN:?the harness needs AGENTCAP_POSTGRES_DSN}"
: "${AGENTCAP_REDIS_ADDR:?the harness needs AGENTCAP_REDIS_ADDR}"
if [ -n "${AGENTCAP_ARTIFACTS:-}" ]; then
	mkdir -p "$AGENTCAP_ARTIFACTS"
	export AGENTCAP_MULTI_REPORT="$AGENTCAP_ARTIFACTS/multiinstance.txt"
fi

# Files behind a build tag escape the untagged checks of .ci/run.
go vet -tags multiinstance ./examples/bank/
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags multiinstance ./examples/bank/
go test -tags multiinstance -short -count=1 -timeout 20m -run '^TestMultiInstance$' -v ./examples/bank/
