/**
 * The `execute_command` tool, the pure parts: its settings from an agent's
 * config, its arguments, what it refuses, the command lines of the sandbox
 * (`bwrap`) and of `docker run`, and the result the model is given. The
 * service that runs commands is `services/tools/command-line.ts`.
 *
 * What it refuses, before anything runs (MassGen's rules): a command that
 * matches none of `command_line_allowed_commands` (when there are any), one
 * that matches one of `command_line_blocked_commands`, each a regular
 * expression matched at the start of the command (Python's `re.match`), and
 * the dangerous commands MassGen refuses in every mode (`rm -rf /`, `dd`,
 * `sudo`, `su`, `chown`, `chmod`, writes to a disk device, a fork bomb).
 *
 * Words: the *workspace* is the directory a command runs in and the only one
 * it may write to in the sandbox; the *read-only paths* are the directories it
 * may read there besides the root filesystem's (context paths, the snapshots
 * of the answers it was shown); the *execution mode* is how commands run:
 * `local`, `sandbox` or `docker`.
 */
import type { BackendConfig } from "./config.ts"
import type { ExecutionMode } from "./config-tools.ts"
import type { ToolSpec } from "./llm.ts"

export const EXECUTE_COMMAND = "execute_command"
/** Seconds a command may run when the call names no `timeout` (MassGen's default); the tool runner's timeout bounds it too. */
export const DEFAULT_COMMAND_TIMEOUT_SECONDS = 60
/** Bytes of stdout and of stderr the result holds (the first ones); what is past them is counted, not kept. */
export const STDOUT_KEPT_BYTES = 20_000
export const STDERR_KEPT_BYTES = 8_000
/** MassGen's image for `docker` mode. */
export const DEFAULT_DOCKER_IMAGE = "massgen/mcp-runtime:latest"

export interface CommandLineSettings {
  readonly mode: ExecutionMode
  readonly allowed: ReadonlyArray<string>
  readonly blocked: ReadonlyArray<string>
  /** Whether a command may reach the network: in `sandbox` and `docker` modes it may not unless this is set. */
  readonly network: boolean
  readonly docker: {
    readonly image: string
    /** `none`, `bridge` or `host`: `command_line_docker_network_mode`, else `bridge` with `command_line_network`, else `none`. */
    readonly networkMode: string
    readonly memory: string | null
    readonly cpus: number | null
  }
}

/** The agent's `execute_command` settings, or null when it has no such tool (`enable_mcp_command_line` is not true). */
export const commandLineSettings = (backend: BackendConfig): CommandLineSettings | null => {
  if (backend.enable_mcp_command_line !== true) return null
  const network = backend.command_line_network === true
  return {
    mode: backend.command_line_execution_mode ?? "local",
    allowed: backend.command_line_allowed_commands ?? [],
    blocked: backend.command_line_blocked_commands ?? [],
    network,
    docker: {
      image: backend.command_line_docker_image ?? DEFAULT_DOCKER_IMAGE,
      networkMode: backend.command_line_docker_network_mode ?? (network ? "bridge" : "none"),
      memory: backend.command_line_docker_memory_limit ?? null,
      cpus: backend.command_line_docker_cpu_limit ?? null,
    },
  }
}

export const executeCommandSpec: ToolSpec = {
  name: EXECUTE_COMMAND,
  description:
    "Runs a shell command (/bin/sh -c) in your workspace and returns its exit code, stdout and stderr as JSON. " +
    "Pipes, redirection and && work. Every process it starts ends when it ends or times out.",
  parameters: {
    type: "object",
    properties: {
      command: { type: "string", description: "The command, e.g. `python test.py` or `ls -la`" },
      timeout: { type: "integer", description: `Seconds it may run (default ${DEFAULT_COMMAND_TIMEOUT_SECONDS})` },
      work_dir: { type: "string", description: "Where it runs, relative to your workspace (default: the workspace)" },
    },
    required: ["command"],
  },
}

export interface CommandArgs {
  readonly command: string
  readonly timeoutSeconds: number
  readonly workDir: string | null
}

/** The call's arguments, or what is wrong with them. */
export const commandArgs = (args: Record<string, unknown>): CommandArgs | string => {
  const { command, work_dir } = args
  // Models often send a number as a string ("30").
  const timeout = typeof args.timeout === "string" && args.timeout.trim() !== "" ? Number(args.timeout) : args.timeout
  if (typeof command !== "string" || command.trim() === "") return "command must be a non-empty string"
  if (timeout !== undefined && timeout !== null && (typeof timeout !== "number" || !(timeout > 0) || !Number.isFinite(timeout))) {
    return "timeout must be a number of seconds above 0"
  }
  if (work_dir !== undefined && work_dir !== null && typeof work_dir !== "string") return "work_dir must be a string"
  return {
    command,
    timeoutSeconds: typeof timeout === "number" ? timeout : DEFAULT_COMMAND_TIMEOUT_SECONDS,
    workDir: typeof work_dir === "string" && work_dir !== "" ? work_dir : null,
  }
}

/** MassGen's dangerous commands, refused in every mode. */
const DANGEROUS: ReadonlyArray<readonly [RegExp, string]> = [
  [/\brm\s+-rf\s+\//, "rm -rf /"],
  [/\bmv\b.*?\s+\/dev\/null/, "moving files to /dev/null"],
  [/\bdd\b/, "dd"],
  [/>\s*\/dev\/sd[a-z][1-9]?/, "writing to a disk device"],
  [/:\(\)\{\s*:\|:&\s*\};:/, "a fork bomb"],
  [/\bsudo\b/, "sudo"],
  [/\bsu\b/, "su"],
  [/\bchown\b/, "chown"],
  [/\bchmod\b/, "chmod"],
]

/** Whether `pattern` matches at the start of `command`, as Python's `re.match` does. */
const matchesAtStart = (pattern: string, command: string): boolean => new RegExp(`^(?:${pattern})`).test(command)

/** Why `command` is refused, or null when it may run. */
export const commandRefusal = (command: string, settings: Pick<CommandLineSettings, "allowed" | "blocked">): string | null => {
  for (const [pattern, what] of DANGEROUS) if (pattern.test(command)) return `a command using ${what} is never run`
  if (settings.allowed.length > 0 && !settings.allowed.some((p) => matchesAtStart(p, command))) {
    return `the command matches none of command_line_allowed_commands (${settings.allowed.join(", ")})`
  }
  const blocked = settings.blocked.find((p) => matchesAtStart(p, command))
  return blocked === undefined ? null : `the command matches command_line_blocked_commands pattern ${JSON.stringify(blocked)}`
}

/** Whether `path` is `root` or under it (both absolute and normalised). */
export const isWithin = (path: string, root: string): boolean => path === root || path.startsWith(root.endsWith("/") ? root : `${root}/`)

const depth = (path: string): number => path.split("/").filter((p) => p !== "").length

export interface Mounts {
  /** Absolute, real paths. */
  readonly workspace: string
  readonly readOnly: ReadonlyArray<string>
  /**
   * Folders the sandbox shows empty (the log directory: the other agents'
   * workspaces and snapshots, the run's files), with the workspace and the
   * read-only paths under them still there.
   */
  readonly hidden?: ReadonlyArray<string>
}

/** The binds of the workspace (writable) and the read-only paths, a parent before what is under it, so that the deeper one wins. */
const binds = (mounts: Mounts): ReadonlyArray<{ readonly path: string; readonly writable: boolean }> =>
  [{ path: mounts.workspace, writable: true }, ...[...new Set(mounts.readOnly)].filter((p) => p !== mounts.workspace).map((path) => ({ path, writable: false }))].sort(
    (a, b) => depth(a.path) - depth(b.path),
  )

/**
 * The `bwrap` arguments that run `/bin/sh -c command` in `cwd`: the root
 * filesystem read-only, a private `/tmp`, `/dev` and `/proc` of its own, the
 * hidden folders empty, the workspace writable, the read-only paths read-only, every namespace unshared
 * (the network too, unless `network`), no capabilities, and every process of
 * it killed when `bwrap` dies.
 */
export const bwrapArgs = (mounts: Mounts, network: boolean, cwd: string, command: string): ReadonlyArray<string> => [
  "--ro-bind", "/", "/",
  "--dev", "/dev",
  "--proc", "/proc",
  "--tmpfs", "/tmp",
  ...(mounts.hidden ?? []).flatMap((path) => ["--tmpfs", path]),
  ...binds(mounts).flatMap((b) => (b.writable ? ["--bind", b.path, b.path] : ["--ro-bind-try", b.path, b.path])),
  "--unshare-all",
  ...(network ? ["--share-net"] : []),
  "--cap-drop", "ALL",
  "--die-with-parent",
  "--new-session",
  "--chdir", cwd,
  "--",
  "/bin/sh", "-c", command,
]

export interface DockerRun {
  /** The container's name: `docker kill` stops it by this name. */
  readonly name: string
  readonly image: string
  readonly networkMode: string
  readonly memory: string | null
  readonly cpus: number | null
}

/** The `docker` arguments that run `/bin/sh -c command` in `cwd` in a new container, the paths mounted where they are on the host. */
export const dockerRunArgs = (run: DockerRun, mounts: Mounts, cwd: string, command: string): ReadonlyArray<string> => [
  "run", "--rm", "-i",
  "--name", run.name,
  "--network", run.networkMode,
  ...(run.memory !== null ? ["--memory", run.memory] : []),
  ...(run.cpus !== null ? ["--cpus", String(run.cpus)] : []),
  ...binds(mounts).flatMap((b) => ["-v", `${b.path}:${b.path}:${b.writable ? "rw" : "ro"}`]),
  "-w", cwd,
  run.image,
  "/bin/sh", "-c", command,
]

/** A stream's kept text, with a note when the stream brought more than was kept. */
export const keptOutput = (text: string, bytes: number, kept: number): string =>
  bytes > kept ? `${text}\n... (truncated: ${bytes - kept} more bytes)` : text

export interface CommandOutcome {
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
  readonly seconds: number
  readonly command: string
  /** The call's `work_dir`, or `.` for the workspace. */
  readonly workDir: string
}

/** The result the model is given: MassGen's fields, as JSON. */
export const commandResult = (o: CommandOutcome): string =>
  JSON.stringify({
    success: o.exitCode === 0,
    exit_code: o.exitCode,
    stdout: o.stdout,
    stderr: o.stderr,
    execution_time: Math.round(o.seconds * 1000) / 1000,
    command: o.command,
    work_dir: o.workDir,
  })
