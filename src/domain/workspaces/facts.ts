/**
 * Workspaces as facts: where an agent's files live in the log directory, what a run knows of them, and how a person is shown them.
 *
 * Layout, relative to the log directory (the run stays one folder, and
 * `resume` finds everything):
 * - `workspaces/<anonId>/`: the live workspace of an agent whose backend sets
 *   `cwd` (named by its anonymous id, so that a path an answer quotes names
 *   no config id);
 * - `snapshot_storage/<label>/`: the snapshot of answer `label`, a copy of
 *   the workspace at that answer, never written again;
 * - `final/<agent>/workspace/`: the winner's files.
 *
 * `WorkspaceFacts` is what the fold keeps (`domain/state/index.ts`): the snapshots by
 * label, the final copy, and the writes to context paths (intended, then
 * done). `workspaceLine` is the short line the views show. Pure.
 *
 * Words: a *workspace* is an agent's private folder; a *snapshot* is the copy
 * of it taken when the agent submits an answer; a *context path* is a folder
 * of the user's (`orchestrator.context_paths`) that agents read and only the
 * presenter writes to, after the vote.
 */

import { count } from "../../lib/text.ts"
import type { ContextChange, ContextPathSetting, Event } from "../events/index.ts"

export const WORKSPACES_DIR = "workspaces"
export const SNAPSHOTS_DIR = "snapshot_storage"

/** The live workspace of the agent with anonymous id `anonId`, relative to the log directory. */
export const workspaceDir = (anonId: string): string => `${WORKSPACES_DIR}/${anonId}`
/** The snapshot of answer `label`, relative to the log directory. */
export const snapshotDir = (label: string): string => `${SNAPSHOTS_DIR}/${label}`
/** The winner's files, relative to the log directory. */
export const finalWorkspaceDir = (agent: string): string => `final/${agent}/workspace`
/** The files `workspace_finalized` lists, at most (its `files` counts them all). */
export const FINAL_LISTING_MAX = 200

export interface SnapshotFact {
  readonly agent: string
  readonly path: string
  readonly files: number
  readonly bytes: number
}

export interface ContextWrite {
  readonly toolCall: number
  readonly callId: string
  readonly agent: string
  readonly path: string
  readonly bytes: number
  readonly sha256: string
  readonly change: ContextChange
  /** False while the write is only intended. */
  readonly done: boolean
}

export interface WorkspaceFacts {
  readonly snapshots: Readonly<Record<string, SnapshotFact>>
  readonly final:
    | (SnapshotFact & { readonly label: string; readonly source: "workspace" | "snapshot"; readonly listing: ReadonlyArray<string> })
    | null
  readonly contextWrites: ReadonlyArray<ContextWrite>
}

export const noWorkspaceFacts: WorkspaceFacts = { snapshots: {}, final: null, contextWrites: [] }

type WorkspaceEvent = Extract<
  Event,
  { _tag: "workspace_snapshotted" | "workspace_finalized" | "context_write_intended" | "context_path_written" }
>

/** The facts after one workspace event; the same object when the event does not fit (a second snapshot of a label, a second final copy). */
export const evolveWorkspaces = (facts: WorkspaceFacts, event: WorkspaceEvent): WorkspaceFacts => {
  switch (event._tag) {
    case "workspace_snapshotted":
      if (event.label in facts.snapshots) return facts
      return {
        ...facts,
        snapshots: { ...facts.snapshots, [event.label]: { agent: event.agent, path: event.path, files: event.files, bytes: event.bytes } },
      }
    case "workspace_finalized":
      if (facts.final !== null) return facts
      return {
        ...facts,
        final: {
          agent: event.agent,
          label: event.label,
          source: event.source,
          path: event.path,
          files: event.files,
          bytes: event.bytes,
          listing: event.listing,
        },
      }
    case "context_write_intended":
    case "context_path_written": {
      const done = event._tag === "context_path_written"
      const write: ContextWrite = {
        toolCall: event.tool_call,
        callId: event.call_id,
        agent: event.agent,
        path: event.path,
        bytes: event.bytes,
        sha256: event.sha256,
        change: event.change,
        done,
      }
      if (!done) return { ...facts, contextWrites: [...facts.contextWrites, write] }
      const at = facts.contextWrites.findIndex((w) => pendingFor(w, event.agent, event.path) && w.sha256 === event.sha256)
      if (at < 0) return facts
      return { ...facts, contextWrites: facts.contextWrites.map((w, i) => (i === at ? write : w)) }
    }
  }
}

const pendingFor = (w: ContextWrite, agent: string, path: string): boolean => !w.done && w.agent === agent && w.path === path

/**
 * The newest write of `path` by the model's tool call `callId` of `agent`,
 * done or only intended: a call run again after a stop finds the write it
 * made (or meant to make) before the stop.
 */
export const earlierContextWrite = (facts: WorkspaceFacts, agent: string, callId: string, path: string): ContextWrite | undefined =>
  facts.contextWrites.findLast((w) => w.agent === agent && w.callId === callId && w.path === path)

/**
 * Why a file fact does not fit the run where it stands, or null: a snapshot
 * belongs right after its answer, a final copy to an answer of its agent, a
 * context write to a tool call of its agent in flight (`openToolCalls`, tool
 * call to agent), and a done write to its intent.
 */
export const workspaceEventProblem = (
  state: { readonly answers: Readonly<Record<string, { readonly agent: string }>>; readonly workspaces: WorkspaceFacts },
  event: WorkspaceEvent,
  openToolCalls: ReadonlyMap<number, string>,
): string | null => {
  switch (event._tag) {
    case "workspace_snapshotted":
      if (state.answers[event.label]?.agent !== event.agent) return `${event.agent} has no answer ${event.label} to snapshot here`
      return event.label in state.workspaces.snapshots ? `${event.label} was snapshotted already` : null
    case "workspace_finalized":
      if (state.answers[event.label]?.agent !== event.agent) return `${event.agent} has no answer ${event.label} whose files could be final`
      return state.workspaces.final !== null ? "the final workspace was copied already" : null
    case "context_write_intended":
      return openToolCalls.get(event.tool_call) === event.agent
        ? null
        : `${event.agent} has no tool call ${event.tool_call} in flight to write ${event.path}`
    case "context_path_written":
      return state.workspaces.contextWrites.some((w) => pendingFor(w, event.agent, event.path) && w.sha256 === event.sha256)
        ? null
        : `${event.agent} intended no write of ${event.path} with this content`
  }
}

/** The files written to context paths, each once, in the order they were first written. */
export const changedFiles = (
  facts: WorkspaceFacts,
): ReadonlyArray<{ readonly path: string; readonly change: ContextChange; readonly bytes: number }> => {
  const out = new Map<string, { path: string; change: ContextChange; bytes: number }>()
  for (const w of facts.contextWrites) {
    if (!w.done) continue
    const before = out.get(w.path)
    out.set(w.path, { path: w.path, change: before?.change ?? w.change, bytes: w.bytes })
  }
  return [...out.values()]
}

/** The `workspaces` block of status.json: paths are under `logDir` (relative when it is empty), context paths absolute. */
export interface WorkspacesJson {
  /** Answer label to its snapshot's folder. */
  readonly snapshots: Readonly<Record<string, string>>
  /** The winner's files, once copied. */
  readonly final_workspace: string | null
  readonly context_paths: ReadonlyArray<{ readonly path: string; readonly permission: "read" | "write" }>
  /** The files written to context paths, each once. */
  readonly changed_files: ReadonlyArray<{ readonly path: string; readonly change: ContextChange; readonly bytes: number }>
}

/** `{workspaces}` for status.json, or nothing for a run with no workspace facts and no context path. */
export const workspacesJson = (
  facts: WorkspaceFacts,
  contextPaths: ReadonlyArray<ContextPathSetting>,
  logDir: string,
): { readonly workspaces?: WorkspacesJson } => {
  if (facts === noWorkspaceFacts && contextPaths.length === 0) return {}
  const under = (p: string) => (logDir === "" ? p : `${logDir.replace(/[/\\]+$/, "")}/${p}`)
  return {
    workspaces: {
      snapshots: Object.fromEntries(Object.entries(facts.snapshots).map(([label, s]) => [label, under(s.path)])),
      final_workspace: facts.final === null ? null : under(facts.final.path),
      context_paths: contextPaths.map((c) => ({ path: c.path, permission: c.permission })),
      changed_files: changedFiles(facts),
    },
  }
}

/** The line a view shows for a workspace event. */
export const workspaceLine = (event: Exclude<WorkspaceEvent, { _tag: "context_write_intended" }>): string => {
  switch (event._tag) {
    case "workspace_snapshotted":
      return `workspace snapshot for ${event.label}: ${count(event.files, "file")}, ${event.bytes} bytes (${event.path})`
    case "workspace_finalized":
      return `final workspace: ${count(event.files, "file")}, ${event.bytes} bytes (${event.path})`
    case "context_path_written":
      return `wrote ${event.path} (${event.change}, ${event.bytes} bytes)`
  }
}
