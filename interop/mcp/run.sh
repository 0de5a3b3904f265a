#!/usr/bin/env bash
# Runs agentcap's MCP interop suite: installs the pinned TypeScript MCP SDK
# and MCP Inspector CLI, then runs the Go tests built with the
# "mcpinterop" tag, which start the example bank, agentcap and an mcpx
# server on loopback and drive them with those clients; the SDK's OAuth
# client consents through headless Chromium.
set -euo pipefail
cd "$(dirname "$0")"

# shellcheck source=/dev/null
. ../node.sh "mcp interop"

dir=$PWD
cd ../..
AGENTCAP_MCP_INTEROP="$dir" go test -race -count=1 -tags mcpinterop -run '^TestMCPInterop' "$@" ./examples/bank/
