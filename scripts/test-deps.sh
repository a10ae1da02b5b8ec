#!/usr/bin/env bash
# Installs the Debian packages the test suite drives, when missing: jq (the status.json
# recipes), tmux (the terminal view end to end) and chromium (the web view, through
# playwright-core) and postgresql (batches across machines: each test starts its own server
# on a temporary data directory, test/support/postgres.ts). Needs root or sudo; does nothing
# when all are present.
set -euo pipefail
need=()
command -v jq >/dev/null 2>&1 || need+=(jq)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
[ -x /usr/bin/chromium ] || need+=(chromium)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
[ "${#need[@]}" -eq 0 ] && exit 0
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
echo "installing ${need[*]}" >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
