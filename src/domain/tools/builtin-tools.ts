/**
 * MassGen's own tools that massgen provides itself, written anew: their schema and what a call gives.
 *
 * A config names them as MassGen does, by the file of MassGen's package they
 * are in and their function (`domain/config/python-tools.ts`, `BUILTIN_TOOLS`);
 * they need no Python. Each takes MassGen's arguments and gives MassGen's text.
 * `runBuiltin` gives the result text, or the one-line reason the call failed,
 * as a Python tool's failure says it. Pure.
 *
 * - `two_num_tool(x, y)`: "The sum of x and y is x+y" (MassGen's sample math tool).
 */
import type { BuiltinTool } from "../config/index.ts"
import type { ToolSpec } from "../llm.ts"
import type { MediaTool } from "./media-tools.ts"

/** The built-in tools run here; the media ones need files and a model (`services/tools/media-tools.ts`, `media-generation.ts`). */
export type PlainBuiltin = Exclude<BuiltinTool, MediaTool | "generate_media">

interface Builtin {
  readonly description: string
  readonly parameters: ToolSpec["parameters"]
  readonly run: (
    args: Readonly<Record<string, unknown>>,
  ) => { readonly ok: true; readonly text: string } | { readonly ok: false; readonly error: string }
}

/** A number as Python's `str` writes it: a float keeps its `.0`. */
const pythonNumber = (n: number, float: boolean): string => (float && Number.isInteger(n) ? `${n}.0` : String(n))

const BUILTINS: Readonly<Record<PlainBuiltin, Builtin>> = {
  two_num_tool: {
    description: "Add two numbers together.",
    parameters: {
      type: "object",
      properties: { x: { type: "integer", description: "First number" }, y: { type: "integer", description: "Second number" } },
      required: ["x", "y"],
    },
    run: (args) => {
      const { x, y } = args
      if (typeof x !== "number" || typeof y !== "number") return { ok: false, error: "TypeError: two_num_tool adds two numbers, x and y" }
      const float = !Number.isInteger(x) || !Number.isInteger(y)
      return { ok: true, text: `The sum of ${pythonNumber(x, float)} and ${pythonNumber(y, float)} is ${pythonNumber(x + y, float)}` }
    },
  },
}

/** The parameters a built-in tool takes and its own description. */
export const builtinSchema = (tool: PlainBuiltin): { readonly description: string; readonly parameters: ToolSpec["parameters"] } =>
  BUILTINS[tool]

/** One call of a built-in tool with its arguments (the preset ones under the model's); a name it does not take fails it, as in MassGen. */
export const runBuiltin = (
  tool: PlainBuiltin,
  args: Readonly<Record<string, unknown>>,
): { readonly ok: true; readonly text: string } | { readonly ok: false; readonly error: string } => {
  const builtin = BUILTINS[tool]
  const takes = Object.keys(builtin.parameters.properties)
  const extra = Object.keys(args).filter((k) => !takes.includes(k))
  if (extra.length > 0) return { ok: false, error: `${tool} takes no argument ${extra.join(", ")} (it takes ${takes.join(", ")})` }
  const missing = builtin.parameters.required.filter((k) => !(k in args))
  if (missing.length > 0) return { ok: false, error: `TypeError: ${tool} is missing the argument ${missing.join(", ")}` }
  return builtin.run(args)
}
