/**
 * The floor plan of `src/`, enforced: the layer rule, the door rule, no import cycle between files, and no stale file reference.
 *
 * - Layers: `lib` <- `domain` <- `services` <- `cli` <- `main.ts`: a file
 *   imports only from its own layer or the ones before it; `lib` imports
 *   nothing from the rest of `src/`.
 * - Doors: a folder with an `index.ts` is one module with private parts,
 *   entered from outside only through its `index.ts` (but for the modules
 *   that load Postgres, which are imported by path so that nothing else
 *   loads them); no file imports its own folder's `index.ts`; an `index.ts`
 *   re-exports no module that loads Postgres or `yaml`; no file re-exports
 *   another folder's names.
 * - No cycle between files (type-only imports included).
 * - Every backticked `*.ts` path in a comment of `src/` or in the docs names
 *   a file that exists.
 * Imports are read with a regex: every import in `src/` is a static
 * `from "..."`, `import "..."` or `import("...")` string.
 */
import { describe, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import * as path from "node:path"

const ROOT = path.resolve(import.meta.dir, "..")
const SRC = path.join(ROOT, "src")
const BY_PATH = new Set(["services/event-store/postgres.ts", "services/run-files/shared-postgres.ts"].map((p) => path.join(SRC, p)))

const filesUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name)
    return statSync(full).isDirectory() ? filesUnder(full) : name.endsWith(".ts") ? [full] : []
  })

const sources = filesUnder(SRC)
const rel = (file: string): string => path.relative(SRC, file)

/** The relative imports of `file`, resolved to paths. */
const importsOf = (file: string, text: string = readFileSync(file, "utf8")): string[] =>
  [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+)["']/g)].map((m) =>
    path.normalize(path.join(path.dirname(file), m[1]!)),
  )

const LAYERS = ["lib", "domain", "services", "cli"] as const
const layerOf = (file: string): number => {
  const i = LAYERS.indexOf(rel(file).split(path.sep)[0] as (typeof LAYERS)[number])
  return i < 0 ? LAYERS.length : i
}

/** The outermost folder with an `index.ts` that holds `file`, among `doors`. */
const doorOf = (doors: ReadonlySet<string>, file: string): string | undefined => {
  let found: string | undefined
  for (let dir = path.dirname(file); dir.startsWith(SRC) && dir !== SRC; dir = path.dirname(dir)) if (doors.has(dir)) found = dir
  return found
}

/** The layer and door rules' violations in an import graph, one line each. */
const violations = (edges: ReadonlyMap<string, ReadonlyArray<string>>): string[] => {
  const doors = new Set(
    [...edges.keys(), ...[...edges.values()].flat()].filter((f) => path.basename(f) === "index.ts").map((f) => path.dirname(f)),
  )
  const out: string[] = []
  for (const [from, tos] of edges) {
    for (const to of tos.filter((t) => t.startsWith(SRC + path.sep))) {
      if (layerOf(to) > layerOf(from)) out.push(`layer: ${rel(from)} imports ${rel(to)}`)
      const door = doorOf(doors, to)
      if (door !== undefined && !from.startsWith(door + path.sep) && to !== path.join(door, "index.ts") && !BY_PATH.has(to))
        out.push(`door: ${rel(from)} imports ${rel(to)}, a private part of ${rel(door)}/`)
      if (path.basename(to) === "index.ts" && from !== to && path.dirname(from) === path.dirname(to))
        out.push(`own index: ${rel(from)} imports its folder's index.ts`)
    }
  }
  return out
}

/** The import cycles of a graph: each strongly connected set of more than one file (Tarjan). */
const cycles = (edges: ReadonlyMap<string, ReadonlyArray<string>>): string[][] => {
  let next = 0
  const stack: string[] = []
  const onStack = new Set<string>()
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const found: string[][] = []
  const visit = (v: string): void => {
    index.set(v, next)
    low.set(v, next++)
    stack.push(v)
    onStack.add(v)
    for (const w of edges.get(v) ?? []) {
      if (!edges.has(w)) continue
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) !== index.get(v)) return
    const part: string[] = []
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w)
      part.push(w)
      if (w === v) break
    }
    if (part.length > 1) found.push(part)
  }
  for (const v of edges.keys()) if (!index.has(v)) visit(v)
  return found
}

const graph = new Map(sources.map((f) => [f, importsOf(f)]))

describe("the floor plan of src/", () => {
  test("every relative import names a file that exists", () => {
    const missing = [...graph].flatMap(([from, tos]) =>
      tos.filter((t) => !existsSync(t)).map((t) => `${rel(from)} -> ${path.relative(ROOT, t)}`),
    )
    expect(missing).toEqual([])
  })

  test("imports follow lib <- domain <- services <- cli, and enter a folder with an index.ts only through it", () => {
    expect(violations(graph)).toEqual([])
  })

  test("no import cycle between files", () => {
    expect(cycles(graph).map((c) => c.map(rel).sort().join(", "))).toEqual([])
  })

  test("no index.ts re-exports a module that loads Postgres or yaml, and no file re-exports another folder's names", () => {
    const heavy = new Set(
      sources.filter((f) =>
        /from ["'](yaml|pg-boss)["']|\bSQL\b.*from ["']bun["']|from ["']bun["'].*\bSQL\b/.test(readFileSync(f, "utf8")),
      ),
    )
    const bad = sources.flatMap((f) =>
      [...readFileSync(f, "utf8").matchAll(/export\s+(?:type\s+)?(?:\*|\{[^}]*\})\s+from\s+["'](\.{1,2}\/[^"']+)["']/g)]
        .map((m) => path.normalize(path.join(path.dirname(f), m[1]!)))
        .filter((t) => path.dirname(t) !== path.dirname(f) || heavy.has(t))
        .map((t) => `${rel(f)} re-exports ${rel(t)}`),
    )
    expect(bad).toEqual([])
  })

  test("src/domain has at most six files at its top level", () => {
    expect(readdirSync(path.join(SRC, "domain")).filter((n) => n.endsWith(".ts")).length).toBeLessThanOrEqual(6)
  })

  test("every backticked *.ts path in comments and docs exists", () => {
    const docs = [
      path.join(ROOT, "README.md"),
      path.join(ROOT, "CONTEXT.md"),
      ...readdirSync(path.join(ROOT, "docs"))
        .filter((n) => n.endsWith(".md"))
        .map((n) => path.join(ROOT, "docs", n)),
    ]
    const stale = [...sources, ...docs].flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(/`((?:src\/)?(?:lib|domain|services|cli)\/[\w./-]+\.ts)(?::\d+(?:-\d+)?)?`/g)]
        .map((m) => m[1]!)
        .filter((p) => !existsSync(path.join(ROOT, p.startsWith("src/") ? p : `src/${p}`)))
        .map((p) => `${path.relative(ROOT, file)}: ${p}`),
    )
    expect(stale).toEqual([])
  })
})

describe("each rule fails when broken", () => {
  const f = (p: string) => path.join(SRC, p)
  test("an import against the layers, one through a door's side, one of a file's own index, and a cycle are each found", () => {
    const broken = new Map<string, string[]>([
      [f("domain/a.ts"), [f("services/b.ts")]],
      [f("cli/c.ts"), [f("domain/state/evolve.ts")]],
      [f("domain/state/evolve.ts"), [f("domain/state/index.ts")]],
      [f("lib/x.ts"), [f("lib/y.ts")]],
      [f("lib/y.ts"), [f("lib/x.ts")]],
      [f("cli/d.ts"), [f("services/event-store/postgres.ts")]],
    ])
    expect(violations(broken).sort()).toEqual([
      "door: cli/c.ts imports domain/state/evolve.ts, a private part of domain/state/",
      "layer: domain/a.ts imports services/b.ts",
      "own index: domain/state/evolve.ts imports its folder's index.ts",
    ])
    expect(cycles(broken).map((c) => c.map(rel).sort())).toEqual([["lib/x.ts", "lib/y.ts"]])
  })
})
