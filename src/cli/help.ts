/**
 * The help text, and the invocations that print it or the version
 * (`identity.ts`) without being parsed.
 *
 * `plainInvocation(argv)` tells `massgen --help`, `massgen --version` (and
 * `-h`, `-v`, `massgen COMMAND --help`) from everything else without loading
 * the parser (`cli/args/index.ts`) or Effect, so they start as fast as an empty program;
 * it answers only for argv that `parseInvocation` reads the same way, and
 * null for every other, which goes to the parser. The text lists every flag
 * the parser (`cli/args/index.ts`) takes.
 */

/** The web view's port when `--port` is not given. */
export const DEFAULT_PORT = 8000

/** `massgen serve`'s port when `--port` is not given (MassGen's). */
export const DEFAULT_SERVE_PORT = 4000

/** The largest question a run takes and `serve` accepts, in UTF-8 bytes, when `--max-question-bytes` is not given (1 MiB). */
export const DEFAULT_MAX_QUESTION_BYTES = 1024 * 1024

export const COMMANDS = ["resume", "replay", "status", "viewer", "doctor", "serve", "sessions", "batch", "worker"] as const

/** How a mistyped command is told from a question; the help and the README say it in these words. */
export const COMMAND_TYPO_RULE =
  "A first word a typo or two away from a command (stauts, resme, veiwer) is taken for a mistyped command when nothing, a flag or a path (a word with a / or a log_ name) follows it; put a one-word question like that after the options."

export const HELP = `massgen: several LLM agents answer one question, vote, and present the best answer.

Usage:
  massgen [options] --config FILE "question"
  massgen [options] --config FILE -           the question from standard input (also read
                                              when stdin is piped and no question is given)
  massgen [options] --config FILE --question-file FILE
  massgen --model MODEL "question"            one agent, backend inferred from the model
  massgen --models M1,M2,M3 "question"        one agent per model
  massgen --validate FILE [--json] [--strict] [--check-keys]
                                              check a config and print its problems, or "valid"
  massgen resume LOG_DIR [--automation]      continue a run whose process stopped (crash, kill, Ctrl+C)
  massgen replay LOG_DIR [--check] [--out DIR]
                                              make a recorded run's decisions again offline, from llm_log/;
                                              --check: exit 0 if the same, else 2 and the first difference
  massgen status LOG_DIR [--json]            rebuild status.json from events.jsonl and summarise the run
  massgen viewer [LOG_DIR] [--pick] [--replay-speed X] [--web [--port N] [--no-browser]]
                                              watch a run live, or replay a finished one (read-only);
                                              without LOG_DIR the newest run; --pick lists recent runs;
                                              --web serves the view on http://127.0.0.1:${DEFAULT_PORT}
  massgen doctor [--config FILE]             check this install: identity, log root, .env, API keys
                                              (masked), each configured base URL, sandbox tools
  massgen [options] --config FILE             on a terminal with no question: an interactive prompt,
                                              one turn per question (/help, /quit; Ctrl+C stops a turn)
  massgen [options] --config FILE --session-id ID "question"
                                              a turn of session ID (started if new): the agents see its
                                              earlier questions and answers; --continue: the latest session
  massgen sessions [--json]                  list sessions: id, turns, cost, last question
  massgen serve --config FILE | --config-dir DIR [--host H] [--port N] [--max-concurrent-runs N]
                [--max-queued N] [--api-key-env VAR] [--drain-seconds S] [--idle-timeout-seconds S]
                [--max-body-bytes N] [--max-question-bytes N] [--retry-window-seconds S]
                [--cancel-on-disconnect]
                                              an OpenAI-compatible endpoint (POST /v1/chat/completions,
                                              POST /v1/responses, GET /v1/models[/ID]) on
                                              http://127.0.0.1:${DEFAULT_SERVE_PORT} (docs/serve.md): each request
                                              is a run, once: a retry of it (while it runs or up to 600 s
                                              after) gets that run; a client that goes away does not stop
                                              it unless --cancel-on-disconnect; defaults: 4 runs at once,
                                              64 waiting, 30 s drain, 30 s idle, 8 MiB bodies, 1 MiB of text
  massgen batch ITEMS.jsonl --config FILE [--concurrency N] [--out DIR] [--automation] [--engine URL]
                                              one run per line {id, question} of ITEMS.jsonl, N at once (4);
                                              the same command again resumes the batch (docs/batch.md);
                                              --engine postgres://...: queue them for workers instead
  massgen batch status --engine URL NAME    a shared batch's progress across workers
  massgen batch export --engine URL NAME [--out DIR]
                                              its runs and results from Postgres into a local batch folder
  massgen worker --engine postgres://... [--concurrency N] [--takeover-seconds S]
                                              run queued batch items, any number of workers on any machines

Options:
  -c, --config FILE             YAML config (agents, orchestrator, timeout_settings)
      --model MODEL             quick start with one agent; repeat it for one agent per
                                --model, each name as written (commas and all)
      --models M1,M2            quick start with one agent per model (split on every comma)
      --backend TYPE            backend type for --model/--models (overrides inference)
      --base-url URL            base URL for --model/--models
      --system-message TEXT     system message for --model/--models agents
      --automation              quiet output for scripts: ~10 lines, status.json, exit codes
      --no-display              plain lines instead of the live terminal view
      --orchestrator-timeout S  overrides timeout_settings.orchestrator_timeout_seconds
      --question-file FILE      read the question from FILE
      --image FILE              send FILE (an image, audio, a PDF) with the question; repeatable (@path does the same)
      --max-question-bytes N    refuse a longer question (UTF-8 bytes; 1048576), before anything is written
      --session-id ID           the run is the next turn of session ID (.massgen/sessions/ID/)
      --continue                the run is the next turn of the most recent session
      --quick                   MassGen's quick mode: one answer per agent, no vote rounds
      --eval-criteria FILE      checklist criteria from a JSON file (voting_sensitivity: checklist_gated)
      --json                    with --validate: print the result as JSON
      --strict                  with --validate: warnings make the config invalid
      --check-keys              with --validate: a missing API key or unset \${VAR} is an error
  -v, --version                 print the version, commit, build date, Bun version and target
  -h, --help                    print this help

A question that starts with "-" goes after --: massgen --config FILE -- "-1 or 1?"
${COMMAND_TYPO_RULE}

Exit codes: 0 success, 1 configuration error, 2 execution error, 3 timeout or budget, 4 interrupted.
Logs: .massgen/massgen_logs/log_YYYYMMDD_HHMMSS_ffffff/ (MASSGEN_LOG_BASE_DIR overrides the root).`

/** The help or version invocation `argv` is, when it is plainly one; null for anything else (the parser decides). */
export const plainInvocation = (argv: ReadonlyArray<string>): "help" | "version" | null => {
  const [first, second] = argv
  if (argv.length === 1 && (first === "--version" || first === "-v")) return "version"
  if (argv.length === 1 && (first === "--help" || first === "-h")) return "help"
  const isCommand = (COMMANDS as ReadonlyArray<string | undefined>).includes(first)
  if (argv.length === 2 && isCommand && (second === "--help" || second === "-h")) return "help"
  return null
}
