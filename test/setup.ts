// Test preload: bun 1.4.4 reads no timeout from bunfig.toml, so it is set here.
import { setDefaultTimeout } from "bun:test"

setDefaultTimeout(30_000)
