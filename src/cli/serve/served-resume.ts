/**
 * A served run's request fields, recorded with the run and given back to its presenter when it is resumed.
 *
 * Contract: `servedMetadata(fields)` is what `execution_metadata.yaml` keeps
 * of a request's sampling and answer format: `serve_request: {api, fields}`,
 * the fields as the client gave them (nothing for a request without any).
 * `resumedBackends(logDir, backends, config, env)` gives the backends a
 * resume of the run in `logDir` uses: those the served run had
 * (`presenterBackends`), with the fields read again from its metadata; without
 * a `serve_request`, `backends` as they are. A recorded request that no longer
 * reads (hand-edited) is a `RunDirError` naming it.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { parse as parseYaml } from "yaml"
import type { Config } from "../../domain/config/index.ts"
import { METADATA_FILE } from "../../domain/run-paths.ts"
import type { Backend } from "../../services/backends/index.ts"
import { RunDirError } from "../run/run-dir.ts"
import { presenterBackends } from "./presenter-backends.ts"
import { type Api, type RequestFields, readRequestFields } from "./request-fields.ts"
import { isObject } from "./wire-error.ts"

export const servedMetadata = (fields: RequestFields): Record<string, unknown> =>
  fields.given ? { serve_request: { api: fields.given.api, fields: fields.given.fields } } : {}

export const resumedBackends = (
  logDir: string,
  backends: ReadonlyMap<string, Backend>,
  config: Config,
  env: Readonly<Record<string, string | undefined>>,
) =>
  Effect.gen(function* () {
    let meta: unknown = null
    try {
      meta = parseYaml(readFileSync(join(logDir, METADATA_FILE), "utf8"))
    } catch {}
    const recorded = isObject(meta) ? meta.serve_request : undefined
    if (recorded === undefined || recorded === null) return backends
    const fail = (detail: string) =>
      new RunDirError({ reason: "bad_config", path: logDir, detail: `execution_metadata.yaml: serve_request: ${detail}` })
    if (!isObject(recorded) || (recorded.api !== "chat" && recorded.api !== "responses") || !isObject(recorded.fields))
      return yield* fail("expected {api: chat or responses, fields}")
    const fields = readRequestFields(recorded.fields, recorded.api as Api)
    if ("status" in fields) return yield* fail(fields.message)
    return yield* presenterBackends(backends, config, env, logDir, fields)
  })
