#!/bin/sh
# massgen installer: downloads the massgen binary for this machine, checks it
# against the release's SHA256SUMS, and installs it as `massgen`.
#
#   sh install.sh
#
# Environment:
#   MASSGEN_INSTALL_BASE  where the release's files are (default: the latest
#                         GitHub release, $DEFAULT_BASE below); the binaries and
#                         SHA256SUMS are fetched from "$MASSGEN_INSTALL_BASE/<file>".
#   MASSGEN_INSTALL_DIR   where to install (default: ~/.local/bin).
#
# It finds the OS (Linux, macOS, Windows under MSYS/Cygwin), the architecture
# (x64, arm64) and, on Linux, the C library (glibc or musl), and picks the
# file SHA256SUMS lists for that platform (massgen-<version>-<os>-<arch>). The
# download goes to a temporary directory and is installed only once its SHA-256
# matches; a mismatch installs nothing and exits 1. Nothing downloaded is ever
# run by a shell. Needs curl or wget, and sha256sum, shasum or openssl.
set -eu

DEFAULT_BASE="https://github.com/massgen/massgen-ts/releases/latest/download"
BASE="${MASSGEN_INSTALL_BASE:-$DEFAULT_BASE}"
BASE="${BASE%/}"
DIR="${MASSGEN_INSTALL_DIR:-${HOME:?HOME is not set; set MASSGEN_INSTALL_DIR}/.local/bin}"

say() { printf '%s\n' "$*"; }
fail() {
  printf 'massgen install: %s\n' "$*" >&2
  exit 1
}

detect_os() {
  case "$(uname -s)" in
    Linux) echo linux ;;
    Darwin) echo darwin ;;
    MINGW* | MSYS* | CYGWIN* | Windows_NT) echo windows ;;
    *) fail "no massgen binary for this operating system ($(uname -s)); there are binaries for Linux, macOS and Windows, see $BASE" ;;
  esac
}

detect_arch() {
  case "$(uname -m)" in
    x86_64 | amd64 | AMD64) echo x64 ;;
    aarch64 | arm64 | ARM64) echo arm64 ;;
    *) fail "no massgen binary for this architecture ($(uname -m)); there are binaries for x86-64 and arm64, see $BASE" ;;
  esac
}

# musl (Alpine) or glibc: what ldd says it is, else whether a musl loader is the only one.
is_musl() {
  if command -v ldd >/dev/null 2>&1; then
    ldd --version 2>&1 | grep -qi musl
    return
  fi
  for loader in /lib/ld-musl-*; do
    [ -e "$loader" ] && return 0
  done
  return 1
}

download() { # URL FILE
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 2 -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1"
  else
    fail "needs curl or wget to download"
  fi
}

sha256_of() { # FILE
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d ' ' -f 1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d ' ' -f 1
  elif command -v openssl >/dev/null 2>&1; then
    openssl dgst -sha256 "$1" | sed 's/^.*= *//'
  else
    fail "needs sha256sum, shasum or openssl to check the download"
  fi
}

os="$(detect_os)"
arch="$(detect_arch)"
platform="$os-$arch"
if [ "$os" = linux ] && is_musl; then
  [ "$arch" = x64 ] || fail "no massgen binary for musl on $arch (there is one for musl on x86-64, and glibc builds for arm64); see $BASE"
  platform="linux-x64-musl"
fi
exe=""
[ "$os" = windows ] && exe=".exe"

tmp="$(mktemp -d 2>/dev/null || mktemp -d -t massgen)"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

say "massgen install: $platform, from $BASE"
download "$BASE/SHA256SUMS" "$tmp/SHA256SUMS" || fail "could not download $BASE/SHA256SUMS"

# The line of SHA256SUMS for this platform: "<sha256>  massgen-<version>-<platform>[.exe]".
line="$(grep -E "^[0-9a-f]{64}  massgen-[^ ]*-$platform$exe\$" "$tmp/SHA256SUMS" | head -n 1 || true)"
[ -n "$line" ] || fail "SHA256SUMS at $BASE lists no massgen binary for $platform"
expected="${line%% *}"
file="${line##* }"

download "$BASE/$file" "$tmp/$file" || fail "could not download $BASE/$file"
actual="$(sha256_of "$tmp/$file")"
if [ "$actual" != "$expected" ]; then
  fail "checksum mismatch for $file: expected $expected, got $actual; nothing was installed"
fi

mkdir -p "$DIR" || fail "cannot create $DIR"
target="$DIR/massgen$exe"
# Into the directory first, then renamed over any older massgen: never a half-written file under its name.
partial="$DIR/.massgen.partial.$$"
if ! { cp "$tmp/$file" "$partial" && chmod 755 "$partial" && mv -f "$partial" "$target"; }; then
  rm -f "$partial"
  fail "cannot install $target"
fi

say "massgen install: installed $file as $target (sha256 $actual)"
case ":${PATH:-}:" in
  *":$DIR:"*) say "Run: massgen --version" ;;
  *)
    say "$DIR is not on your PATH. Add it, then open a new terminal:"
    case "${SHELL:-}" in
      */zsh) say "  echo 'export PATH=\"$DIR:\$PATH\"' >> ~/.zshrc" ;;
      */fish) say "  fish_add_path $DIR" ;;
      *) say "  echo 'export PATH=\"$DIR:\$PATH\"' >> ~/.profile" ;;
    esac
    say "Or run it as: $target --version"
    ;;
esac
