#!/usr/bin/env bash
# Runs agentcap's interop suite against the Agent Auth reference provider:
# installs the pinned Node packages, starts the harness on loopback, runs
# the Go tests built with the "interop" tag, and stops the harness.
set -euo pipefail
cd "$(dirname "$0")"

# shellcheck source=/dev/null
. ./node.sh "interop"

# Two free loopback ports: the harness, and the agentcap location the
# harness lists for its agentcap_echo capability (the Go tests serve it).
read -r port location_port < <(node -e '
const net = require("node:net");
const grab = () => new Promise((ok) => { const s = net.createServer(); s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => ok(p)); }); });
Promise.all([grab(), grab()]).then(([a, b]) => console.log(a, b));
')

log=$(mktemp)
node harness.mjs --port "$port" --location "http://127.0.0.1:$location_port/capability/execute" >"$log" 2>&1 &
harness=$!
cleanup() {
	kill "$harness" 2>/dev/null || true
	wait "$harness" 2>/dev/null || true
	rm -f "$log"
}
trap cleanup EXIT

for _ in $(seq 1 600); do
	if grep -q '^ready ' "$log"; then
		break
	fi
	if ! kill -0 "$harness" 2>/dev/null; then
		echo "interop: the harness exited:" >&2
		cat "$log" >&2
		exit 1
	fi
	sleep 0.1
done
if ! grep -q '^ready ' "$log"; then
	echo "interop: the harness did not start within 60 s:" >&2
	cat "$log" >&2
	exit 1
fi

cd ..
status=0
AGENTCAP_INTEROP_URL="http://127.0.0.1:$port" go test -race -count=1 -tags interop "$@" ./interop/... || status=$?
if [ "$status" -ne 0 ]; then
	echo "interop: harness log:" >&2
	cat "$log" >&2
fi
exit "$status"
