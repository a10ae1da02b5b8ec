/**
 * Headless Chromium for the web view's tests: Debian's `chromium` (installed
 * by `scripts/test-deps.sh`), with the flags that keep it off the network and
 * quiet: no sandbox (tests run as root), no GPU, no QUIC, no first-run or
 * background requests, no component updates, no sync.
 */
export const CHROMIUM = "/usr/bin/chromium"

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
]
