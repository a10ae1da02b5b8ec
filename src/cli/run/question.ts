/**
 * A run's question, read from where the command line says (`QuestionSource`).
 *
 * Contract: the words after the options are the question as given; `-` reads
 * standard input to its end; with no question at all, standard input is read
 * when it is not a terminal (`echo "2+2?" | massgen ...`), and a terminal gets
 * today's usage error; `--question-file FILE` reads FILE, a regular file
 * (`input-file.ts`: a pipe, a device or a directory is refused before it is
 * opened). The text is trimmed; an empty question (standard input that was
 * piped but empty is said as such; `/dev/null` is no standard input), a file
 * that cannot be read (named, with why), or a question over
 * `--max-question-bytes` (its UTF-8 bytes, counted as `serve` and a batch
 * count them: `utf8-bytes.ts`) is a usage error (exit 1), before anything is written.
 * Standard input and the file are read only to a little over the limit. The
 * whole question goes into the events and status.json; only the `QUESTION:`
 * line folds and cuts it (`automation-output.ts`).
 */
import * as fs from "node:fs"
import { Effect } from "effect"
import { utf8Bytes } from "../../lib/utf8-bytes.ts"
import { formatBytes, readInputFile } from "../../services/input-file.ts"
import { type QuestionSource, UsageError } from "../args/index.ts"
import { isatty } from "../process/tty.ts"

/** Whitespace read beyond the limit, so that a question at the limit with a newline or two around it still fits. */
const TRIM_ALLOWANCE = 4096

export interface StdinSource {
  readonly isTTY: boolean
  /** Whether standard input is a pipe or a file (not a terminal, not `/dev/null` or another device). */
  readonly isPiped: boolean
  /** Standard input to its end, or its first `maxBytes` and more when it is longer; "" when it is empty or closed. */
  readonly read: (maxBytes: number) => Promise<string>
}

/** Reads a stream to its end, or stops once it has more than `maxBytes`. */
const readBounded = async (stream: ReadableStream<Uint8Array>, maxBytes: number): Promise<string> => {
  const reader = stream.getReader()
  const chunks: Array<Uint8Array> = []
  let total = 0
  try {
    while (total <= maxBytes) {
      const { done, value } = await reader.read()
      if (done) break
      chunks.push(value)
      total += value.length
    }
  } finally {
    await reader.cancel().catch(() => undefined)
  }
  return Buffer.concat(chunks, total).toString("utf8")
}

const stdinIsPiped = (): boolean => {
  try {
    const stat = fs.fstatSync(0)
    return stat.isFIFO() || stat.isFile() || stat.isSocket()
  } catch {
    return false
  }
}

/** The process's standard input. */
export const processStdin: StdinSource = {
  // Asked when a question is to be read from it, not when this module loads.
  get isTTY() {
    return isatty(0)
  },
  get isPiped() {
    return stdinIsPiped()
  },
  read: (maxBytes) => readBounded(Bun.stdin.stream(), maxBytes).catch(() => ""),
}

const MISSING = 'a question is required, e.g. massgen --config team.yaml "What is 2+2?" (or - to read it from standard input)'

const missing = (detail: string) => new UsageError({ reason: "missing_question", detail })

/** `where`: what is too large, as the sentence's subject ("the question", "--question-file q.txt:"). */
const tooLarge = (where: string, maxBytes: number) =>
  new UsageError({
    reason: "bad_value",
    detail: `${where} is over the question limit of ${formatBytes(maxBytes)} (--max-question-bytes ${maxBytes})`,
  })

/** The question, trimmed, when it fits the limit. */
const bounded = (text: string, where: string, maxBytes: number): Effect.Effect<string, UsageError> => {
  const question = text.trim()
  return utf8Bytes(question) > maxBytes ? Effect.fail(tooLarge(where, maxBytes)) : Effect.succeed(question)
}

export const readQuestion = (source: QuestionSource, stdin: StdinSource, maxBytes: number): Effect.Effect<string, UsageError> => {
  switch (source._tag) {
    case "words":
      return bounded(source.text, "the question", maxBytes)
    case "file":
      return Effect.suspend(() => {
        const where = `--question-file ${source.path}:`
        const read = readInputFile(source.path, maxBytes + TRIM_ALLOWANCE, "file", "for a question")
        if (read._tag === "refused")
          return Effect.fail(
            read.reason === "too_large"
              ? tooLarge(where, maxBytes)
              : new UsageError({ reason: "bad_value", detail: `${where} ${read.problem}` }),
          )
        return read.text.trim() === ""
          ? Effect.fail(missing(`${where} the file is empty, no question in it`))
          : bounded(read.text, where, maxBytes)
      })
    case "stdin": {
      if (!source.explicit && stdin.isTTY) return Effect.fail(missing(MISSING))
      const piped = stdin.isPiped
      return Effect.flatMap(
        Effect.promise(() => stdin.read(maxBytes + TRIM_ALLOWANCE)),
        (text) =>
          text.trim() !== ""
            ? bounded(text, "the question read from standard input", maxBytes)
            : Effect.fail(
                missing(
                  source.explicit
                    ? "the question read from standard input is empty"
                    : piped
                      ? 'the standard input was empty: no question in it (give one as words, e.g. massgen --config team.yaml "What is 2+2?")'
                      : MISSING,
                ),
              ),
      )
    }
  }
}
