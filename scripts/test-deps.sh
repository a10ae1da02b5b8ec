#!/usr/bin/env bash
# Installs the Debian packages the test suite drives, when missing: jq (the status.json
# recipes), tmux (the terminal view end to end), chromium (the web view, through
# playwright-core), bubblewrap (bwrap: the sandbox of execute_command), curl, wget and shellcheck (install.sh), qemu-user-static and
# libc6-arm64-cross (the linux-arm64 release binary, run under qemu-aarch64-static -L
# /usr/aarch64-linux-gnu) and postgresql (batches across machines: each test starts its own
# server on a temporary data directory, test/support/postgres.ts). Needs root or sudo; does
# nothing when all are present.
set -euo pipefail
need=()
command -v jq >/dev/null 2>&1 || need+=(jq)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v wget >/dev/null 2>&1 || need+=(wget)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
[ -x /usr/bin/qemu-aarch64-static ] || need+=(qemu-user-static)
[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] || need+=(libc6-arm64-cross)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
[ "${#need[@]}" -eq 0 ] && exit 0
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
echo "installing ${need[*]}" >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
