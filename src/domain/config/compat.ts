/**
 * MassGen's config keys that massgen does not implement, said as such.
 *
 * A MassGen config either runs as it did or is refused with a precise reason:
 * `featureProblems(unknown)` turns the keys the config schema does not know
 * (`document.ts`, `unknownKeys`) into one problem per unsupported *feature*
 * ("memory: not supported"), listing the keys that name it, and leaves the
 * rest as unknown keys (a warning each, with the known key it may stand for).
 * A feature that would change what the agents do or answer is *refused* (an
 * error); one that only changes a check or a view is a warning.
 * Every unknown key in a `permissions:` block is refused too, whatever it
 * is: a rule the config states must not go unread.
 * `UNSUPPORTED_BACKENDS` says what to use instead of MassGen's agent
 * frameworks (`ag2`, `codex`, ...). Pure.
 *
 * Words: a key's *shape* is its path with every index written `[]`
 * (`agents[].backend.upload_files`); `agent.` is read as `agents[].`.
 */

import { closest } from "../../lib/did-you-mean.ts"
import type { ConfigProblem } from "./schema.ts"

interface Feature {
  readonly name: string
  /** Key shapes that belong to the feature. */
  readonly keys: ReadonlyArray<string>
  readonly refused: boolean
  readonly instead?: string
}

const backend = (...keys: ReadonlyArray<string>) => keys.map((k) => `agents[].backend.${k}`)
/** Where a `permissions:` block may be: every key in it that the schema does not know is refused, never ignored. */
const PERMISSIONS_AT = ["permissions", "agents[].backend.permissions"] as const
const inPermissions = (shape: string): boolean => PERMISSIONS_AT.some((at) => shape.startsWith(`${at}.`))
const orchestrator = (...keys: ReadonlyArray<string>) => keys.map((k) => `orchestrator.${k}`)

/** MassGen features massgen does not have. Workspace and command-line keys are not listed: they are massgen's own. */
export const UNSUPPORTED_FEATURES: ReadonlyArray<Feature> = [
  { name: "memory", keys: ["memory"], refused: true, instead: "remove the memory section" },
  {
    name: "permissions under orchestrator",
    keys: ["orchestrator.permissions"],
    refused: true,
    instead: "put the permissions block on each agent's backend (MassGen's place) or at the top of the config (docs/permissions.md)",
  },
  {
    name: "approval files outside the log directory (permissions.approval_dir)",
    keys: PERMISSIONS_AT.map((at) => `${at}.approval_dir`),
    refused: true,
    instead:
      "remove approval_dir: with approval_mode: file, requests are written in the run's log directory, permissions/requests/ (docs/permissions.md)",
  },
  {
    name: "kept approvals (permissions.settings_path)",
    keys: PERMISSIONS_AT.map((at) => `${at}.settings_path`),
    refused: true,
    instead: "remove settings_path and write the approvals as allow rules",
  },
  {
    name: "the auto-approval budget (permissions.max_consecutive_auto)",
    keys: PERMISSIONS_AT.map((at) => `${at}.max_consecutive_auto`),
    refused: true,
    instead: "remove max_consecutive_auto; use approval_mode: file or automation_default: deny-all to have every ask answered",
  },
  {
    name: "tool filtering on a backend",
    keys: backend("allowed_tools", "exclude_tools", "disallowed_tools"),
    refused: true,
    instead: "set allowed_tools or exclude_tools on each MCP server entry (mcp_servers)",
  },
  {
    name: "Claude Code settings",
    keys: backend("permission_mode", "append_system_prompt", "system_prompt", "max_thinking_tokens", "use_default_prompt"),
    refused: true,
    instead: "use type claude, with the agent's system_message",
  },
  {
    name: "AG2 agents",
    keys: backend("agent_config", "group_config"),
    refused: true,
    instead: "use an LLM backend type (openai, claude, chatcompletion, ...)",
  },
  {
    name: "audio, video and file generation",
    keys: backend("enable_audio_generation", "enable_video_generation", "enable_file_generation"),
    refused: true,
    instead: "remove it: massgen makes images only (enable_image_generation on type openai); docs/backends.md",
  },
  { name: "Anthropic beta headers (betas)", keys: backend("betas"), refused: true },
  {
    name: "code-based tools and tool execution settings",
    keys: backend("enable_code_based_tools", "concurrent_tool_execution", "exclude_file_operation_mcps"),
    refused: true,
  },
  {
    name: "sampling settings outside the config schema",
    keys: backend("top_k", "chat_template_kwargs"),
    refused: true,
    instead: "put them under extra_body",
  },
  { name: "debug shortcuts", keys: orchestrator("debug_final_answer", "skip_coordination_rounds"), refused: true },
  { name: "question paraphrasing (dspy)", keys: orchestrator("dspy"), refused: true },
  {
    // The voting keys beside orchestrator.coordination are read one by one (coordination.ts).
    name: "decomposition mode and checklists",
    keys: orchestrator(
      "coordination_mode",
      "presenter_agent",
      "checklist_require_gap_report",
      "gap_report_mode",
      "max_checklist_calls_per_round",
      "enable_nlip",
      "nlip_config",
    ),
    refused: true,
  },
  {
    name: "MassGen v1 config keys",
    keys: ["models", "model_configs", "num_agents", "max_rounds", "consensus_threshold", "voting_enabled", "enable_voting"],
    refused: true,
    instead: "write agents: [{id, backend: {type, model}}]",
  },
  {
    name: "MCP server security settings",
    keys: ["agents[].backend.mcp_servers[].security", "agents[].backend.mcp_servers.security"],
    refused: false,
  },
]

/** MassGen backend types massgen does not have, and what to use instead. */
export const UNSUPPORTED_BACKENDS: Readonly<Record<string, string>> = {
  ag2: "type ag2 (AG2/AutoGen agents) is not supported: use an LLM backend type (openai, claude, chatcompletion, ...); run code with an MCP server or a command tool",
  autogen:
    "type autogen (AG2/AutoGen agents) is not supported: use an LLM backend type (openai, claude, chatcompletion, ...); run code with an MCP server or a command tool",
  codex: "type codex (the Codex CLI agent) is not supported: use type openai with the same model",
  gemini_cli: "type gemini_cli (the Gemini CLI agent) is not supported: use type gemini with the same model",
  copilot: "type copilot (GitHub Copilot) is not supported: use type openai or claude",
}

/** A key's shape: indexes as `[]`, MCP entries of a mapping as `mcp_servers.`, `agent.` as `agents[].`. */
export const shapeOf = (path: string): string =>
  path
    .replace(/\[\d+\]/g, "[]")
    .replace(/^agent\./, "agents[].")
    .replace(/\.mcp_servers\.[^.[]+\./, ".mcp_servers.")

export interface UnknownKey {
  readonly path: string
  /** The keys the schema knows where this one is. */
  readonly known: ReadonlyArray<string>
}

/**
 * Unknown keys as problems: one per unsupported feature found (refused ones
 * are errors), naming its keys, and a warning for every other key, with the
 * known key it may be a typo of.
 */
export const featureProblems = (unknown: ReadonlyArray<UnknownKey>): ReadonlyArray<ConfigProblem> => {
  const byFeature = new Map<Feature, Array<string>>()
  const problems: Array<ConfigProblem> = []
  for (const key of unknown) {
    const shape = shapeOf(key.path)
    const feature = UNSUPPORTED_FEATURES.find((f) => f.keys.includes(shape))
    if (feature !== undefined) {
      byFeature.set(feature, [...(byFeature.get(feature) ?? []), key.path])
      continue
    }
    const name = key.path.split(/[.[]/).at(-1) ?? key.path
    const near = closest(name, key.known)
    if (inPermissions(shape)) {
      // A permission the config states is never ignored: a misplaced deny list would leave its commands unchecked.
      const verdict = ["allow", "ask", "deny"].includes(name) && !shape.includes(".rules.")
      problems.push({
        path: key.path,
        message: `unknown permissions key, refused${key.known.length > 0 ? ` (known keys here: ${key.known.join(", ")})` : ""}`,
        ...(verdict
          ? { suggestion: `write it under rules: (rules: {${name}: [...]})` }
          : near !== null
            ? { suggestion: `did you mean ${near}?` }
            : {}),
      })
      continue
    }
    problems.push({
      path: key.path,
      // A long list (orchestrator.coordination knows 80 keys) helps less than the near key.
      message: `unknown key, ignored${key.known.length > 0 && key.known.length <= 50 ? ` (known keys here: ${key.known.join(", ")})` : ""}`,
      ...(near !== null ? { suggestion: `did you mean ${near}?` } : {}),
      kind: "warning",
    })
  }
  const features = [...byFeature].map(
    ([feature, paths]): ConfigProblem => ({
      path: paths[0]!,
      message: `${feature.name}: not supported${feature.refused ? "" : ", ignored"}${paths.length > 1 ? ` (${paths.join(", ")})` : ""}`,
      ...(feature.instead !== undefined ? { suggestion: feature.instead } : {}),
      ...(feature.refused ? {} : { kind: "warning" as const }),
    }),
  )
  return [...features, ...problems]
}
