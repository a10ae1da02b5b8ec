/**
 * The request side of the native Gemini backend: an `LlmRequest` as `generateContent` parameters.
 *
 * `geminiContents(messages)` turns the transcript into Gemini contents: user text
 * as `user` turns, an assistant message as a `model` turn (its recorded parts,
 * which hold the whole turn with its thought signatures, when it has them; else
 * its text and its tool calls as `functionCall` parts), tool results as
 * `functionResponse` parts of a `user` turn (`{output}`, or `{error}` for a
 * failed call); consecutive turns of one role are merged. `geminiParams(request,
 * opts)` adds the system instruction, the request's tools as function
 * declarations (JSON schema as written) after the provider tools the config
 * turns on (`google_search`, `code_execution`), the function-calling mode
 * (`AUTO` unless the config says), the thinking settings and the sampling
 * settings. `extra_body` goes to the SDK as `httpOptions.extraBody`, merged into
 * the body last. A user turn's files go in `userParts` as inline data.
 *
 * Words: a *synthetic id* is the id massgen gives a function call the API sent
 * without one (`SYNTHETIC_ID_PREFIX`); it is never sent back to the API.
 */
import type { Content, FunctionCallingConfigMode, GenerateContentParameters, Part, ThinkingLevel, Tool } from "@google/genai"
import type { ThinkingConfig } from "../../domain/config/index.ts"
import type { LlmMessage, LlmRequest, MediaPart } from "../../domain/llm.ts"
import type { SdkBackendOptions } from "./sdk-stream.ts"

/** What the Gemini backend takes beyond every SDK backend's options. */
export interface GeminiOptions extends SdkBackendOptions {
  /** The `thinkingConfig` of every call (`thinkingOf` in the config); null sends none. */
  readonly thinking?: ThinkingConfig | null | undefined
  /** `function_calling_mode`, upper case; absent: `AUTO`. */
  readonly functionCallingMode?: "AUTO" | "ANY" | "NONE" | undefined
}

/** Ids massgen makes for function calls the API sent without one start so. */
export const SYNTHETIC_ID_PREFIX = "gemini-fc-"

const realId = (id: string): { id?: string } => (id.startsWith(SYNTHETIC_ID_PREFIX) ? {} : { id })

const parseArgs = (args: string): Record<string, unknown> => {
  try {
    const value: unknown = JSON.parse(args)
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}

/** A user turn's parts: its text (images, when they come, go here too). */
/** A user turn's parts: its files as inline data (the only form massgen sends Gemini: no links), then its text. */
const userParts = (text: string, media: ReadonlyArray<MediaPart> = []): Array<Part> => [
  ...media.flatMap((m): Array<Part> => (m.data === undefined ? [] : [{ inlineData: { mimeType: m.mediaType, data: m.data } }])),
  ...(text === "" ? [] : [{ text }]),
]

const toTurn = (m: LlmMessage): Content => {
  switch (m.role) {
    case "user":
      return { role: "user", parts: userParts(m.content, m.media) }
    case "assistant":
      if (m.parts !== undefined && m.parts.length > 0) return { role: "model", parts: m.parts as Array<Part> }
      return {
        role: "model",
        parts: [
          ...(m.content === "" ? [] : [{ text: m.content }]),
          ...(m.toolCalls ?? []).map((c) => ({ functionCall: { ...realId(c.id), name: c.name, args: parseArgs(c.arguments) } })),
        ],
      }
    case "tool":
      return {
        role: "user",
        parts: [
          {
            functionResponse: {
              ...realId(m.toolCallId),
              name: m.name,
              response: m.isError ? { error: m.content } : { output: m.content },
            },
          },
        ],
      }
  }
}

/** The transcript as Gemini contents: turns of one role merged, empty ones dropped. */
export const geminiContents = (messages: ReadonlyArray<LlmMessage>): Array<Content> => {
  const out: Array<{ role: string; parts: Array<Part> }> = []
  for (const turn of messages.map(toTurn)) {
    const parts = turn.parts ?? []
    if (parts.length === 0) continue
    const last = out[out.length - 1]
    if (last !== undefined && last.role === turn.role) last.parts.push(...parts)
    else out.push({ role: turn.role ?? "user", parts: [...parts] })
  }
  return out
}

/** The provider's own tools the config turns on. */
const hostedTools = (opts: SdkBackendOptions): Array<Tool> => [
  ...(opts.provider?.webSearch === true ? [{ googleSearch: {} }] : []),
  ...(opts.provider?.codeExecution === true ? [{ codeExecution: {} }] : []),
]

const thinkingConfig = (t: ThinkingConfig) => ({
  ...(t.include_thoughts === undefined ? {} : { includeThoughts: t.include_thoughts }),
  ...(t.thinking_budget === undefined ? {} : { thinkingBudget: t.thinking_budget }),
  ...(t.thinking_level === undefined ? {} : { thinkingLevel: t.thinking_level.toUpperCase() as ThinkingLevel }),
})

/** The parameters of one call, without its abort signal and transport. */
export const geminiParams = (request: LlmRequest, opts: GeminiOptions): GenerateContentParameters => {
  const tools: Array<Tool> = [
    ...hostedTools(opts),
    ...(request.tools.length === 0
      ? []
      : [
          {
            functionDeclarations: request.tools.map((t) => ({
              name: t.name,
              description: t.description,
              parametersJsonSchema: { ...t.parameters, required: [...t.parameters.required] },
            })),
          },
        ]),
  ]
  const p = opts.provider
  return {
    model: opts.model,
    contents: geminiContents(request.messages),
    config: {
      ...(request.system === "" ? {} : { systemInstruction: request.system }),
      ...(tools.length > 0 ? { tools } : {}),
      ...(request.tools.length > 0
        ? { toolConfig: { functionCallingConfig: { mode: (opts.functionCallingMode ?? "AUTO") as FunctionCallingConfigMode } } }
        : {}),
      ...(opts.thinking === null || opts.thinking === undefined ? {} : { thinkingConfig: thinkingConfig(opts.thinking) }),
      ...(opts.temperature === undefined ? {} : { temperature: opts.temperature }),
      ...(p?.topP === undefined ? {} : { topP: p.topP }),
      ...(opts.maxTokens === undefined ? {} : { maxOutputTokens: opts.maxTokens }),
      ...(p?.extraBody === undefined ? {} : { httpOptions: { extraBody: { ...p.extraBody } } }),
    },
  }
}
