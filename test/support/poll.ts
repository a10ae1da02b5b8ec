/**
 * `waitFor(what, probe)`: polls a condition on files a child process writes, for the moments no event
 * of the test's own process can tell (a bounded loop of tiny awaits, not a timing assumption): resolves
 * with the first value `probe` gives, fails naming `what` after `timeoutMs`.
 */
export const waitFor = async <T>(what: string, probe: () => T | undefined, timeoutMs = 30_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const found = probe()
    if (found !== undefined) return found
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await Bun.sleep(5)
  }
}
