/**
 * The `execute_command` tool, the pure parts: its settings from an agent's
 * config, its arguments, what it refuses, the environment a command gets, the
 * command lines of the sandbox (`bwrap`) and of `docker run`, and the result
 * the model is given. The service that runs commands is
 * `services/tools/command-line.ts`.
 *
 * What it refuses, before anything runs: a command that matches none of
 * `command_line_allowed_commands` (when there are any), one that matches one
 * of `command_line_blocked_commands`, each a regular expression matched at the
 * start of the command (Python's `re.match`, as MassGen), and the dangerous
 * commands (`command-guard.ts`), in every mode. Both are guards against
 * accidents that keep a model on a track, not a boundary: the sandbox is.
 *
 * The environment (`commandEnvironment`) is an allow-list, the same in every
 * mode: `PATH`, `LANG`, `LC_*`, `TERM` and `TZ` from massgen's own, `HOME` set
 * to the workspace, the variables `command_line_pass_env` names (when set and
 * not a key), and `command_line_env`; never a value that is one of the run's
 * keys. A `docker` container gets only the config's (`containerEnvNames`).
 *
 * What the sandbox shows (`bwrapArgs`, given the `HostView` of
 * `services/tools/sandbox.ts`): an empty root of its own, read-only, holding
 * only the host's system folders (`/usr`, `/bin`, `/sbin`, `/lib*`, `/etc`,
 * `/opt`) read-only, less what no ordinary user may read in them
 * (`/etc/shadow`), a private `/tmp`, a `/dev` and `/proc` of its own, the
 * workspace read-write and the read-only paths read-only, each at its host
 * path. Everything else is not there: the user's home, the working directory
 * and its `.env`, the log root with the other runs, `/run`, `/var`, `/srv`,
 * `/mnt`, the host's `/tmp` and every Unix socket in them. An allow-list of
 * what to show, not a list of what to hide: a folder the list does not name
 * (a new socket folder, `/work`) stays hidden without anyone thinking of it.
 * `/etc` is shown because programs need it (`passwd` and `group` for `id`
 * and `ls -l`, `ld.so.cache`, `ssl/certs`, `alternatives`); it holds no
 * socket, and what in it is secret is what no ordinary user may read.
 *
 * Words: the *workspace* is the directory a command runs in and the only one
 * it may write to in the sandbox; the *read-only paths* are the directories it
 * may read there besides the system folders (context paths); the *execution
 * mode* is how commands run: `local`, `sandbox` or `docker`.
 */
import type { BackendConfig, ExecutionMode } from "../config/index.ts"
import type { ToolSpec } from "../llm.ts"
import { dangerousCommand } from "./command-guard.ts"

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
  /** `command_line_env`: variables every command gets, as written. */
  readonly env: Readonly<Record<string, string>>
  /** `command_line_pass_env`: variables passed from massgen's environment when it has them. */
  readonly passEnv: ReadonlyArray<string>
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
    env: Object.fromEntries(Object.entries(backend.command_line_env ?? {}).map(([k, v]) => [k, String(v)])),
    passEnv: backend.command_line_pass_env ?? [],
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

/** Whether `pattern` matches at the start of `command`, as Python's `re.match` does. */
const matchesAtStart = (pattern: string, command: string): boolean => new RegExp(`^(?:${pattern})`).test(command)

/** Why `command` is refused, or null when it may run. */
export const commandRefusal = (command: string, settings: Pick<CommandLineSettings, "allowed" | "blocked">): string | null => {
  const dangerous = dangerousCommand(command)
  if (dangerous !== null) return `a command using ${dangerous} is never run`
  if (settings.allowed.length > 0 && !settings.allowed.some((p) => matchesAtStart(p, command))) {
    return `the command matches none of command_line_allowed_commands (${settings.allowed.join(", ")})`
  }
  const blocked = settings.blocked.find((p) => matchesAtStart(p, command))
  return blocked === undefined ? null : `the command matches command_line_blocked_commands pattern ${JSON.stringify(blocked)}`
}

/** Whether `path` is `root` or under it (both absolute and normalised). */
export const isWithin = (path: string, root: string): boolean => path === root || path.startsWith(root.endsWith("/") ? root : `${root}/`)

const depth = (path: string): number => path.split("/").filter((p) => p !== "").length

/** Variables of massgen's environment every command gets, whatever the config says (`LC_*` too). */
const PASSED: ReadonlySet<string> = new Set(["PATH", "LANG", "TERM", "TZ"])
const passed = (name: string): boolean => PASSED.has(name) || name.startsWith("LC_")

/**
 * The environment of a command run in `home` (its workspace): the allow-list
 * of the file's docstring, from `source` (massgen's environment, already
 * without key variables and secret-looking names), never a value in `secrets`.
 */
export const commandEnvironment = (
  source: Readonly<Record<string, string | undefined>>,
  settings: Pick<CommandLineSettings, "env" | "passEnv">,
  home: string,
  secrets: ReadonlyArray<string> = [],
): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(source))
    if (value !== undefined && (passed(name) || settings.passEnv.includes(name))) out[name] = value
  Object.assign(out, settings.env, { HOME: home })
  const hidden = new Set(secrets.filter((s) => s !== ""))
  for (const [name, value] of Object.entries(out)) if (hidden.has(value)) delete out[name]
  return out
}

/** The variables a `docker` container gets from the docker CLI's environment (`-e NAME`): the config's alone, the image keeps its `PATH` and `HOME`. */
export const containerEnvNames = (
  settings: Pick<CommandLineSettings, "env" | "passEnv">,
  env: Readonly<Record<string, string>>,
): ReadonlyArray<string> =>
  [...new Set([...settings.passEnv, ...Object.keys(settings.env)])].filter((name) => env[name] !== undefined).sort()

export interface Mounts {
  /** Absolute, real paths. */
  readonly workspace: string
  readonly readOnly: ReadonlyArray<string>
}

/** The host's system folders the sandbox shows, read-only, where they are folders (symlinks, as `/bin -> usr/bin`, are made again). */
export const SYSTEM_PATHS: ReadonlyArray<string> = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"]

/** What of the host the sandbox shows besides the mounts: found on the host by `services/tools/sandbox.ts`. */
export interface HostView {
  /** Folders (and files) shown read-only at their host path: the system folders that are folders. */
  readonly shown: ReadonlyArray<string>
  /** Symlinks made in the sandbox's root: `[path, target]`, as on the host. */
  readonly links: ReadonlyArray<readonly [string, string]>
  /** Entries under `shown` that no ordinary user may read (`/etc/shadow`): shown empty and unreadable. */
  readonly masked: ReadonlyArray<{ readonly path: string; readonly folder: boolean }>
}

/** The binds of the workspace (writable) and the read-only paths, a parent before what is under it, so that the deeper one wins. */
const binds = (mounts: Mounts): ReadonlyArray<{ readonly path: string; readonly writable: boolean }> =>
  [
    { path: mounts.workspace, writable: true },
    ...[...new Set(mounts.readOnly)].filter((p) => p !== mounts.workspace).map((path) => ({ path, writable: false })),
  ].sort((a, b) => depth(a.path) - depth(b.path))

/**
 * The `bwrap` arguments that run `/bin/sh -c command` in `cwd`, showing what
 * the file's docstring says and nothing else: `view`'s system folders, a
 * private `/tmp`, `/dev` and `/proc` of its own, the workspace writable, the
 * read-only paths read-only, the root read-only; every namespace unshared (the
 * network too, unless `network`), no capabilities, a session of its own, and
 * every process of it killed when `bwrap` dies. With `filterFd`, the seccomp
 * filter `bwrap` reads from that descriptor (`services/tools/sandbox-seccomp.ts`:
 * no Unix socket) is loaded before the command starts.
 */
export const bwrapArgs = (
  view: HostView,
  mounts: Mounts,
  network: boolean,
  cwd: string,
  command: string,
  filterFd: number | null = null,
): ReadonlyArray<string> => [
  ...view.links.flatMap(([path, target]) => ["--symlink", target, path]),
  ...view.shown.flatMap((path) => ["--ro-bind", path, path]),
  // A device node is unreadable where bwrap mounts it (nodev): a masked file reads as "Permission denied".
  ...view.masked.flatMap((m) => (m.folder ? ["--tmpfs", m.path, "--remount-ro", m.path] : ["--ro-bind", "/dev/null", m.path])),
  "--dev",
  "/dev",
  "--proc",
  "/proc",
  "--tmpfs",
  "/tmp",
  ...binds(mounts).flatMap((b) => (b.writable ? ["--bind", b.path, b.path] : ["--ro-bind-try", b.path, b.path])),
  "--remount-ro",
  "/",
  "--unshare-all",
  ...(network ? ["--share-net"] : []),
  "--cap-drop",
  "ALL",
  "--die-with-parent",
  "--new-session",
  ...(filterFd === null ? [] : ["--seccomp", String(filterFd)]),
  "--chdir",
  cwd,
  "--",
  "/bin/sh",
  "-c",
  command,
]

export interface DockerRun {
  /** The container's name: `docker kill` stops it by this name. */
  readonly name: string
  readonly image: string
  readonly networkMode: string
  readonly memory: string | null
  readonly cpus: number | null
  /** Variables the container takes from the CLI's environment (`containerEnvNames`). */
  readonly envNames: ReadonlyArray<string>
}

/** The `docker` arguments that run `/bin/sh -c command` in `cwd` in a new container, the paths mounted where they are on the host. */
export const dockerRunArgs = (run: DockerRun, mounts: Mounts, cwd: string, command: string): ReadonlyArray<string> => [
  "run",
  "--rm",
  "-i",
  "--name",
  run.name,
  "--network",
  run.networkMode,
  ...(run.memory !== null ? ["--memory", run.memory] : []),
  ...(run.cpus !== null ? ["--cpus", String(run.cpus)] : []),
  ...binds(mounts).flatMap((b) => ["-v", `${b.path}:${b.path}:${b.writable ? "rw" : "ro"}`]),
  ...run.envNames.flatMap((name) => ["-e", name]),
  "-w",
  cwd,
  run.image,
  "/bin/sh",
  "-c",
  command,
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
