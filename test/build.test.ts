/**
 * The build leaves the binary alone (`scripts/compile.ts`): `compile` puts
 * only the executable at its `outfile`, with no `.map` file or anything else
 * beside it, and no `.bun-build` temporary in the repository; and the
 * binary runs.
 */
import { afterAll, describe, expect, test } from "bun:test"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import pkg from "../package.json" with { type: "json" }
import { compile, hostTarget, ROOT } from "../scripts/compile.ts"
import { cleanupSandboxes, sandbox } from "./support/cli.ts"

afterAll(cleanupSandboxes)

const temporaries = (dir: string): Array<string> => fs.readdirSync(dir).filter((name) => name.endsWith(".bun-build"))

describe("compile", () => {
  test("leaves only the executable in its outfile's directory, and no .bun-build in the repository", async () => {
    const before = temporaries(ROOT)
    const dir = nodePath.join(sandbox(), "dist")
    const outfile = nodePath.join(dir, "massgen")
    await compile({ target: hostTarget(), outfile, commit: "test", built: "2025-01-01T00:00:00Z" })
    expect(fs.readdirSync(dir)).toEqual(["massgen"])
    expect(temporaries(ROOT)).toEqual(before)
    const version = Bun.spawnSync([outfile, "--version"], { cwd: dir, stdout: "pipe", stderr: "pipe" })
    expect({ code: version.exitCode, first: version.stdout.toString().split("\n")[0] }).toEqual({
      code: 0,
      first: `massgen ${pkg.version}`,
    })
  }, 300_000)
})
