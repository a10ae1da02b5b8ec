/**
 * The files of a log directory other than `events.jsonl` and `status.json`.
 *
 * `RunFiles` writes what a run leaves for people and scripts: each agent's
 * streamed output (`agent_outputs/<agent_id>.txt`, appended as it arrives),
 * the final answer and what the winner saw (`final/<agent>/answer.txt`,
 * `context.txt`, each written whole before the event that announces them),
 * every call's request and reply (`llm_log/<n>.json`), and whole files derived
 * at the end (`execution_metadata.yaml`, `coordination_events.json`, ...).
 * Paths are relative to the log directory. The memory layer keeps everything
 * in a map for tests.
 */
import { appendFileSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { Context, Effect, Layer } from "effect"
import { writeFileAtomicSync } from "./status-writer.ts"

export interface RunFilesApi {
  readonly appendOutput: (agent: string, text: string) => Effect.Effect<void>
  /** Writes a whole file, atomically, creating its directory. */
  readonly write: (relativePath: string, text: string) => Effect.Effect<void>
}

export class RunFiles extends Context.Tag("massgen/RunFiles")<RunFiles, RunFilesApi>() {}

const ignoreFailure = (label: string, f: () => void): Effect.Effect<void> =>
  Effect.try(f).pipe(Effect.catchAll((e) => Effect.logWarning(`${label}: ${String(e)}`)))

export const liveRunFiles = (logDir: string): Layer.Layer<RunFiles> =>
  Layer.sync(RunFiles, () => {
    const outputs = join(logDir, "agent_outputs")
    const madeDirs = new Set<string>()
    return {
      appendOutput: (agent, text) =>
        ignoreFailure("agent output", () => {
          if (!madeDirs.has(outputs)) {
            mkdirSync(outputs, { recursive: true })
            madeDirs.add(outputs)
          }
          appendFileSync(join(outputs, `${agent}.txt`), text)
        }),
      write: (relativePath, text) => ignoreFailure(relativePath, () => writeFileAtomicSync(join(logDir, relativePath), text, madeDirs)),
    }
  })

export interface MemoryRunFiles extends RunFilesApi {
  readonly files: Map<string, string>
}

export const memoryRunFiles = (): { readonly layer: Layer.Layer<RunFiles>; readonly files: Map<string, string> } => {
  const files = new Map<string, string>()
  const api: RunFilesApi = {
    appendOutput: (agent, text) =>
      Effect.sync(() => {
        const path = `agent_outputs/${agent}.txt`
        files.set(path, (files.get(path) ?? "") + text)
      }),
    write: (relativePath, text) => Effect.sync(() => void files.set(relativePath, text)),
  }
  return { layer: Layer.succeed(RunFiles, api), files }
}
