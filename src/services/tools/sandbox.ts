/**
 * Execution modes: how a command of `execute_command` is started, checked once at the start of a run.
 *
 * `startExecutor(settings, env, agent)` makes sure the mode can run commands
 * here, or fails with a `CommandLineStartError` (the run stops before its
 * first event, exit 1, naming the agent, the mode and why):
 * - `local`: `/bin/sh -c` on the host, contained (`containedCommand`: a PID
 *   namespace of its own where `unshare` can make one); nothing to check.
 * - `sandbox`: `bwrap` (bubblewrap) must be on the `PATH` and able to make a
 *   sandbox here (it needs user namespaces, or root): it is tried once. What
 *   of the host it shows is looked at once then (`hostView`): which of the
 *   system folders (`SYSTEM_PATHS`) are folders and which symlinks, what
 *   under `/etc` no ordinary user may read (`/etc/shadow`, `/etc/ssl/private`:
 *   as root, the sandbox would read them), and where `/etc/resolv.conf` leads
 *   when it is a symlink out of the system folders (into `/run`). `bwrap`
 *   loads the seccomp filter of `sandbox-seccomp.ts` (no Unix socket), which
 *   a shell opens on descriptor 3 before it becomes `bwrap`.
 * - `docker`: the `docker` CLI must be on the `PATH`, its daemon must answer,
 *   and the image must be there (it is pulled once when it is not).
 * The `Executor` it gives turns a command and its environment into the
 * program, arguments and environment that run it (`domain/tools/command-line.ts`
 * builds them), and says what else stopping it takes (a container outlives
 * the `docker` CLI: it is killed by name). A container gets only the
 * variables the config names (`containerEnvNames`), passed by name through
 * the CLI's environment, so their values are on no command line.
 *
 * Words: the *execution mode* is `command_line_execution_mode`; the *sandbox*
 * is what `bwrap` makes (docs/commands.md says what it allows).
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { Effect, Schema } from "effect"
import type { ExecutionMode } from "../../domain/config/index.ts"
import {
  bwrapArgs,
  type CommandLineSettings,
  containerEnvNames,
  dockerRunArgs,
  type HostView,
  isWithin,
  type Mounts,
  SYSTEM_PATHS,
} from "../../domain/tools/command-line.ts"
import { containedCommand, forgetGroup, killGroup, readTail, spawnInGroup } from "./child-process.ts"
import { filterFile, SANDBOX_FILTER_FD } from "./sandbox-seccomp.ts"

export class CommandLineStartError extends Schema.TaggedError<CommandLineStartError>()("CommandLineStartError", {
  agent: Schema.String,
  mode: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `agent ${this.agent}: command_line_execution_mode ${this.mode}: ${this.detail}`
  }
}

export interface Launch {
  readonly program: string
  readonly args: ReadonlyArray<string>
  readonly env: Record<string, string>
  /** Stops what killing the program's process group does not (a container); null when that is enough. */
  readonly stop: (() => void) | null
}

export interface Executor {
  readonly mode: ExecutionMode
  /** How to run `command` in `cwd` (a real path within the mounts) with the command environment `env` (`commandEnvironment`). */
  readonly launch: (mounts: Mounts, cwd: string, command: string, env: Record<string, string>) => Launch
}

/** How long a check of the mode (`bwrap` tried once, `docker version`, `docker image inspect`) may take; a pull, `PULL_MS`. */
const PROBE_MS = 20_000
const PULL_MS = 600_000

interface Probe {
  readonly ok: boolean
  readonly why: string
}

/** Runs `program args` to its end (or `ms`); whether it exited 0, and else the last line of its stderr, or how it ended. */
const probe = (program: string, args: ReadonlyArray<string>, env: Record<string, string>, ms: number): Effect.Effect<Probe> =>
  Effect.promise(async () => {
    const proc = spawnInGroup(program, args, { cwd: "/", env, stdin: "ignore" })
    const timer = setTimeout(() => killGroup(proc.pid), ms)
    const [code, err] = await Promise.all([proc.exited, readTail(proc.stderr, 2_000), new Response(proc.stdout).arrayBuffer()])
    clearTimeout(timer)
    killGroup(proc.pid)
    forgetGroup(proc.pid)
    const line =
      err
        .trim()
        .split("\n")
        .filter((l) => l.trim() !== "")
        .pop() ?? ""
    const how = proc.signalCode !== null ? `was stopped after ${ms / 1000} s` : `exited with ${code}`
    return { ok: code === 0, why: line !== "" ? line.trim() : how }
  })

const local: Executor = {
  mode: "local",
  launch: (_mounts, _cwd, command, env) => {
    const [program, ...args] = containedCommand("/bin/sh", ["-c", command])
    return { program: program!, args, env, stop: null }
  },
}

/** Entries under `dir` whose mode lets no ordinary user read them (a folder: enter it), not followed into. */
const unreadable = (dir: string, out: Array<{ path: string; folder: boolean }>, depth = 0): void => {
  let entries: Array<fs.Dirent>
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true })
  } catch {
    return
  }
  for (const entry of entries) {
    const path = nodePath.join(dir, entry.name)
    if (!entry.isDirectory() && !entry.isFile()) continue
    let mode: number
    try {
      mode = fs.lstatSync(path).mode
    } catch {
      continue
    }
    const folder = entry.isDirectory()
    if ((mode & 0o004) === 0 || (folder && (mode & 0o001) === 0)) out.push({ path, folder })
    else if (folder && depth < 8) unreadable(path, out, depth + 1)
  }
}

/** What of this host the sandbox shows (`HostView`), looked at now. */
export const hostView = (): HostView => {
  const shown: Array<string> = []
  const links: Array<readonly [string, string]> = []
  for (const path of SYSTEM_PATHS) {
    try {
      const st = fs.lstatSync(path)
      if (st.isSymbolicLink()) links.push([path, fs.readlinkSync(path)])
      else if (st.isDirectory()) shown.push(path)
    } catch {
      // Not on this host.
    }
  }
  const masked: Array<{ path: string; folder: boolean }> = []
  if (shown.includes("/etc")) unreadable("/etc", masked)
  try {
    const resolv = fs.realpathSync("/etc/resolv.conf")
    if (!shown.some((root) => isWithin(resolv, root))) shown.push(resolv)
  } catch {
    // No resolver file, or a dangling link: nothing to show.
  }
  return { shown, links, masked }
}

let containers = 0
const containerName = (): string => `massgen-cmd-${process.pid}-${Date.now().toString(36)}-${(containers++).toString(36)}`

/** The executor of `settings.mode` for `agent`, once the mode is known to work here. */
export const startExecutor = (
  settings: CommandLineSettings,
  env: Record<string, string>,
  agent: string,
): Effect.Effect<Executor, CommandLineStartError> =>
  Effect.gen(function* () {
    const fail = (detail: string) => new CommandLineStartError({ agent, mode: settings.mode, detail })
    const which = (name: string) => Bun.which(name, { PATH: env.PATH ?? "" })
    switch (settings.mode) {
      case "local":
        return local
      case "sandbox": {
        const bwrap = which("bwrap")
        if (bwrap === null)
          return yield* fail(
            "bwrap is not on the PATH: install bubblewrap (apt-get install bubblewrap), or use command_line_execution_mode local",
          )
        const view = hostView()
        const filter = filterFile()
        const sandboxed = (mounts: Mounts, network: boolean, cwd: string, command: string) => {
          const args = bwrapArgs(view, mounts, network, cwd, command, filter === null ? null : SANDBOX_FILTER_FD)
          // bwrap reads the filter from descriptor 3: a shell opens it there, then becomes bwrap (the same process).
          return filter === null
            ? { program: bwrap, args }
            : { program: "/bin/sh", args: ["-c", `f=$1; shift; exec "$@" ${SANDBOX_FILTER_FD}<"$f"`, "sh", filter, bwrap, ...args] }
        }
        const test = sandboxed({ workspace: "/tmp", readOnly: [] }, false, "/", "true")
        const tried = yield* probe(test.program, test.args, env, PROBE_MS)
        if (!tried.ok) return yield* fail(`bwrap cannot make a sandbox here (it needs user namespaces, or root): ${tried.why}`)
        return {
          mode: "sandbox",
          launch: (mounts, cwd, command, commandEnv) => ({
            ...sandboxed(mounts, settings.network, cwd, command),
            env: commandEnv,
            stop: null,
          }),
        }
      }
      case "docker": {
        const docker = which("docker")
        if (docker === null)
          return yield* fail("the docker CLI is not on the PATH: install Docker, or use command_line_execution_mode sandbox or local")
        const server = yield* probe(docker, ["version", "--format", "{{.Server.Version}}"], env, PROBE_MS)
        if (!server.ok) return yield* fail(`the Docker daemon does not answer: ${server.why}`)
        const image = settings.docker.image
        const present = yield* probe(docker, ["image", "inspect", image], env, PROBE_MS)
        if (!present.ok) {
          const pulled = yield* probe(docker, ["pull", image], env, PULL_MS)
          if (!pulled.ok) return yield* fail(`image ${image} is not here and cannot be pulled: ${pulled.why}`)
        }
        return {
          mode: "docker",
          launch: (mounts, cwd, command, commandEnv) => {
            const name = containerName()
            const envNames = containerEnvNames(settings, commandEnv)
            const { memory, cpus, networkMode } = settings.docker
            return {
              program: docker,
              args: dockerRunArgs({ name, image, networkMode, memory, cpus, envNames }, mounts, cwd, command),
              env: { ...env, ...Object.fromEntries(envNames.map((n) => [n, commandEnv[n]!])) },
              stop: () => {
                const kill = spawnInGroup(docker, ["kill", name], { cwd: "/", env, stdin: "ignore" })
                void kill.exited.then(() => forgetGroup(kill.pid))
              },
            }
          },
        }
      }
    }
  })
