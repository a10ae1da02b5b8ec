/**
 * A run's question, read from where the command line says (`QuestionSource`).
 *
 * Contract: the words after the options are the question as given; `-` reads
 * standard input to its end; with no question at all, standard input is read
 * when it is not a terminal (`echo "2+2?" | massgen ...`), and a terminal gets
 * today's usage error; `--question-file FILE` reads FILE. The text is trimmed;
 * an empty question, or a file that cannot be read (named, with why), is a
 * usage error (exit 1). The whole question goes into the events and
 * status.json; only the `QUESTION:` line folds and cuts it
 * (`automation-output.ts`).
 */
import { readFileSync } from "node:fs"
import { Effect } from "effect"
import { type QuestionSource, UsageError } from "../args/index.ts"
import { isatty } from "../process/tty.ts"
import { readProblem } from "./load-config.ts"

export interface StdinSource {
  readonly isTTY: boolean
  /** Standard input to its end; "" when it is empty or closed. */
  readonly read: () => Promise<string>
}

/** The process's standard input. */
export const processStdin: StdinSource = {
  // Asked when a question is to be read from it, not when this module loads.
  get isTTY() {
    return isatty(0)
  },
  read: () => Bun.stdin.text().catch(() => ""),
}

const MISSING = 'a question is required, e.g. massgen --config team.yaml "What is 2+2?" (or - to read it from standard input)'

const missing = (detail: string) => new UsageError({ reason: "missing_question", detail })

export const readQuestion = (source: QuestionSource, stdin: StdinSource): Effect.Effect<string, UsageError> => {
  switch (source._tag) {
    case "words":
      return Effect.succeed(source.text)
    case "file":
      return Effect.suspend(() => {
        let text: string
        try {
          text = readFileSync(source.path, "utf8")
        } catch (e) {
          return Effect.fail(new UsageError({ reason: "bad_value", detail: `--question-file ${source.path}: ${readProblem(e)}` }))
        }
        return text.trim() === ""
          ? Effect.fail(missing(`--question-file ${source.path}: the file is empty, no question in it`))
          : Effect.succeed(text.trim())
      })
    case "stdin":
      if (!source.explicit && stdin.isTTY) return Effect.fail(missing(MISSING))
      return Effect.flatMap(
        Effect.promise(() => stdin.read()),
        (text) =>
          text.trim() !== ""
            ? Effect.succeed(text.trim())
            : Effect.fail(missing(source.explicit ? "the question read from standard input is empty" : MISSING)),
      )
  }
}
