/**
 * The config keys of workspaces and context paths, and their checks.
 *
 * In an agent's `backend:`, `cwd` (MassGen's key; its value only names the
 * workspace: the folder is always `workspaces/<anonId>/` in the log
 * directory). In `orchestrator:`, `context_paths` (`[{path, permission:
 * read|write, protected_paths}]`), and MassGen's `snapshot_storage` and
 * `agent_temporary_workspace`, accepted for compatibility: snapshots are
 * always kept in the log directory (`domain/workspaces/facts.ts`). A relative
 * context path is taken from the directory the run starts in (the CLI makes
 * it absolute before the run records it). `workspace_limits` (massgen's own:
 * `{max_files, max_depth, max_bytes}`, positive integers) bounds what a
 * snapshot or final copy takes (`docs/workspaces.md`, Snapshots). Pure.
 */
import * as path from "node:path"
import { Schema } from "effect"
import { type ConfigProblem, oneOf, opt, PositiveInt } from "./schema.ts"

export const WorkspaceBackendFields = {
  cwd: opt(Schema.String.pipe(Schema.minLength(1, { message: () => "Expected a workspace name, found an empty string" }))),
}

export const ContextPathConfig = Schema.Struct({
  path: Schema.String.pipe(Schema.minLength(1, { message: () => "Expected a path, found an empty string" })),
  permission: opt(oneOf("read", "write")),
  protected_paths: opt(Schema.Array(Schema.String)),
}).annotations({ identifier: "a context path {path, permission, protected_paths}" })
export type ContextPathConfig = typeof ContextPathConfig.Type

export const WorkspaceLimitsConfig = Schema.Struct({
  max_files: opt(PositiveInt),
  max_depth: opt(PositiveInt),
  max_bytes: opt(PositiveInt),
}).annotations({ identifier: "workspace limits {max_files, max_depth, max_bytes}" })
export type WorkspaceLimitsConfig = typeof WorkspaceLimitsConfig.Type

/** The bounds of a copy of a workspace, each key not set taking its default. */
export interface WorkspaceLimits {
  readonly maxFiles: number
  readonly maxDepth: number
  readonly maxBytes: number
}

export const DEFAULT_WORKSPACE_LIMITS: WorkspaceLimits = { maxFiles: 100_000, maxDepth: 64, maxBytes: 1024 ** 3 }

export const workspaceLimitsOf = (c: WorkspaceLimitsConfig | undefined): WorkspaceLimits => ({
  maxFiles: c?.max_files ?? DEFAULT_WORKSPACE_LIMITS.maxFiles,
  maxDepth: c?.max_depth ?? DEFAULT_WORKSPACE_LIMITS.maxDepth,
  maxBytes: c?.max_bytes ?? DEFAULT_WORKSPACE_LIMITS.maxBytes,
})

export const WorkspaceOrchestratorFields = {
  workspace_limits: opt(WorkspaceLimitsConfig),
  context_paths: opt(Schema.Array(ContextPathConfig).annotations({ identifier: "a list of context paths" })),
  snapshot_storage: opt(Schema.String),
  agent_temporary_workspace: opt(Schema.String),
}

/** Protected paths must stay inside their context path; one folder may not be given twice. */
export const contextPathProblems = (paths: ReadonlyArray<ContextPathConfig> | undefined): ReadonlyArray<ConfigProblem> => {
  const problems: Array<ConfigProblem> = []
  const seen = new Set<string>()
  paths?.forEach((c, i) => {
    const at = `orchestrator.context_paths[${i}]`
    const key = path.normalize(c.path).replace(/[/\\]+$/, "")
    if (seen.has(key))
      problems.push({ path: `${at}.path`, message: `Expected each context path once, found ${JSON.stringify(c.path)} again` })
    seen.add(key)
    c.protected_paths?.forEach((p, j) => {
      if (p === "" || path.isAbsolute(p) || p.split(/[/\\]+/).includes("..")) {
        problems.push({
          path: `${at}.protected_paths[${j}]`,
          message: `Expected a path relative to the context path, without "..", found ${JSON.stringify(p)}`,
        })
      }
    })
  })
  return problems
}

/** The context paths with `path` made absolute from `cwd` (the directory the run starts in). */
export const absoluteContextPaths = <T extends { readonly path: string }>(paths: ReadonlyArray<T>, cwd: string): ReadonlyArray<T> =>
  paths.map((c) => ({ ...c, path: path.resolve(cwd, c.path) }))
