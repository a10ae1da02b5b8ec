/**
 * The run configuration: MassGen's YAML keys, decoded with Effect Schema.
 *
 * `decodeConfig(raw, env)` takes the parsed YAML document and the environment,
 * expands `${VAR}` in every string (a value that is one whole `${VAR}` where a
 * number or a boolean is expected is read as one), and returns either a `Config` or the list of
 * `ConfigProblem`s, each naming the key's path (`agents[1].backend.type`), what
 * was expected and what was found. It is pure: the environment comes in as a map.
 * A problem never shows what a `${VAR}` expanded to (`env.ts`).
 * `analyzeConfig` is the same read with every problem, warnings too.
 *
 * This file is the reading; the parts live beside it and are re-exported here:
 * the schema (`file.ts`), references and masking (`env.ts`), the
 * settings a config makes (`settings.ts`), the problems of the document
 * as written (`document.ts`), and the keys of tools, workspaces and
 * MassGen's unsupported features (`tools.ts`, `gemini.ts`, `workspaces.ts`,
 * `compat.ts`).
 */
export * from "./analyze.ts"
export * from "./cli-agents.ts"
export { COORDINATION_KEYS, criteriaOf, type KeySpec, VOTING_KEYS, verdictOf } from "./coordination.ts"
export { unknownKeys } from "./document.ts"
export { expandEnv, maskSecrets } from "./env.ts"
export { AgentConfig, BackendConfig, DISPLAY_TYPES, Price, ScriptStep } from "./file.ts"
export { type ThinkingConfig, thinkingOf } from "./gemini.ts"
export * from "./mcp.ts"
export { MediaBackendFields, type Upload, UploadFile, uploadsOf } from "./media.ts"
export * from "./presets.ts"
export { BACKEND_TYPES, type BackendType } from "./presets.ts"
export * from "./pricing.ts"
export { absolutePythonTools, BUILTIN_TOOLS, type BuiltinTool, PYTHON_TOOL_PREFIX, type PythonTool } from "./python-tools.ts"
export { type ConfigProblem, formatProblem, type ProblemKind } from "./schema.ts"
export { type Agent, type Config, DEFAULT_SETTINGS, quickSettings } from "./settings.ts"
export * from "./tools.ts"
export { CLAUDE_EFFORTS, CommandToolConfig, McpServerEntry, McpServers, REASONING_EFFORTS } from "./tools.ts"
export * from "./workspaces.ts"
