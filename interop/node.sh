# Sourced by the interop scripts: makes sure Node 20 or later and npm are
# there, installing them with apt-get (as CI runs, as root) when they are
# not, then installs the pinned packages of the current folder with npm ci.
# $1 names the suite in messages.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq nodejs npm >/dev/null
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
	echo "$1: Node $(node --version) is too old; Node 20 or later is needed" >&2
	exit 1
fi

npm ci --no-audit --no-fund --loglevel=error
