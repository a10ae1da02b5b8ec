/**
 * The run configs among MassGen's shipped configs: `massgenConfigFiles(root)` lists every YAML file
 * under `root` (MassGen's `massgen/configs/`), sorted, leaving out `rate_limits/`, which holds no run
 * config. Read by `measure-massgen-configs.ts` and `test/massgen-configs.test.ts`, so both count the same files.
 */
import { readdirSync, statSync } from "node:fs"
import { join } from "node:path"

export const massgenConfigFiles = (root: string): ReadonlyArray<string> => {
  const files: Array<string> = []
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) {
        if (name !== "rate_limits") walk(path)
      } else if (/\.ya?ml$/.test(name)) files.push(path)
    }
  }
  walk(root)
  return files.sort()
}
