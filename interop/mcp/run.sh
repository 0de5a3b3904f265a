#!/usr/bin/env bash
# Runs agentcap's MCP interop suite: installs the pinned TypeScript MCP SDK
# and MCP Inspector CLI, then runs the Go tests built with the
# "mcpinterop" tag, which start the example bank, agentcap and an mcpx
# server on loopback and drive them with those clients.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq nodejs npm >/dev/null
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
	echo "mcp interop: Node $(node --version) is too old; the MCP SDK needs Node 20 or later" >&2
	exit 1
fi

npm ci --no-audit --no-fund --loglevel=error

dir=$PWD
cd ../..
AGENTCAP_MCP_INTEROP="$dir" go test -race -count=1 -tags mcpinterop -run '^TestMCPInterop' "$@" ./examples/bank/
