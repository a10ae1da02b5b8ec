/**
 * Issue 25: `massgen batch status` and `batch export` on a database no
 * batch ever used (a Postgres server of the test's own, fresh: no
 * `massgen_batch_results`, no pg-boss schema) is one line saying the
 * database holds no batch, exit 1 (the argument named the wrong database),
 * never an internal error; nothing is exported, and the URL's credentials
 * stay masked.
 */
import { describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { cleanupSandboxes, runCli, sandbox } from "./support/cli.ts"
import { postgresForFile, type TestPostgres } from "./support/postgres.ts"

let pg: TestPostgres
postgresForFile((server) => (pg = server), cleanupSandboxes)

describe("a shared batch read from a database without the batch tables", () => {
  test("batch status and batch export: one line, exit 1", async () => {
    const cwd = sandbox()
    const masked = pg.url.replace(/\/\/[^@]*@/, "//***@")
    for (const args of [
      ["status", "b"],
      ["export", "b", "--out", "exported"],
    ]) {
      const r = await runCli("source", ["batch", ...args, "--engine", pg.url], { cwd, timeoutMs: 40_000 })
      expect({ args, code: r.exitCode, stdout: r.stdout, stderr: r.stderr }).toEqual({
        args,
        code: 1,
        stdout: "",
        stderr: `massgen: no batches in the database ${masked}: its batch tables do not exist (massgen batch ITEMS.jsonl --engine URL queues one, a worker runs it)\n`,
      })
    }
    expect(fs.existsSync(nodePath.join(cwd, "exported"))).toBe(false)
  }, 60_000)
})
