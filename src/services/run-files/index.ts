/**
 * The files of a log directory other than `events.jsonl` and `status.json`.
 *
 * `RunFiles` writes what a run leaves for people and scripts: each agent's
 * streamed output and reasoning (`agent_outputs/<agent_id>.txt`, appended as
 * it arrives), the final answer and what the winner saw (`final/<agent>/answer.txt`,
 * `context.txt`, each written whole before the event that announces them),
 * every call's request and reply (`llm_log/<n>.json`, its long texts in
 * `blobs/`, see `blobs.ts`), and whole files derived
 * at the end (`execution_metadata.yaml`, `coordination_events.json`, ...).
 * Paths are relative to the log directory; an agent's come from `agentFile`
 * (`domain/run-paths.ts`). The memory layer keeps everything in a map for tests.
 *
 * `write` has the file in place when it returns: a call's log exists before
 * its `call_end` is appended, and replay relies on it. A call log
 * (`llm_log/<n>.json`) is a line of `llm_log/calls.jsonl` on disk
 * (`call-logs.ts`), appended through a descriptor held open until the
 * layer's scope closes. `append` only
 * queues the text: a file's appends are written from the next turn of the
 * event loop, with one write in flight at a time, each taking every text
 * queued until it starts, so that a stream of small appends never holds up
 * the run (at 200 agents, some 800 writes become 400); appends to one file
 * land in the order made, and `flush`, which a run does before its final
 * status, waits for them all.
 *
 * A call's log is appended in one write (no file made per call, no temporary
 * file and rename: each cost a millisecond or more on a busy virtual disk), not
 * atomically: that write comes before the `call_end` that makes the log
 * readable to replay, so a cut line can only belong to a call the events
 * never closed, which replay does not read. A line a crash cut is ended
 * before the next process appends. A tool call's whole result (`tool_log/`)
 * is written in place too; every other whole file is written atomically.
 *
 * Every directory and file it makes is private (0700, 0600), as the log
 * directory is (`services/log-dir/create.ts`).
 */

export * from "./blobs.ts"
export * from "./call-logs.ts"
export * from "./derived-files.ts"
export * from "./run-files.ts"
export * from "./shared.ts"
export * from "./status-writer.ts"
