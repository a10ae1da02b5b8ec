/**
 * A PostgreSQL server of the test's own: `initdb` on a fresh temporary data
 * directory, `pg_ctl start` on a free loopback port, trust authentication,
 * never a shared system instance.
 *
 * Debian's `postgresql` package (`scripts/test-deps.sh` installs it) puts the
 * programs in `/usr/lib/postgresql/<major>/bin/`; the newest there is used.
 * PostgreSQL refuses to run as root, so under root every program runs as the
 * `postgres` system user (`runuser -u postgres --`), which owns the data
 * directory; any other user runs them as itself.
 *
 * `startPostgres()` gives the server's `url` (`postgres://...@127.0.0.1:PORT/postgres`),
 * `restart()` (a fast shutdown, then a start on the same port and data: the
 * clients' connections break), `psql(sql)` (synchronous, for fixtures) and
 * `stop()` (which removes the data directory). `postgresForFile` starts one
 * for a test file (before its tests, stopped after them) and hands it over.
 */
import { afterAll, beforeAll } from "bun:test"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as nodePath from "node:path"

const binDir = (): string => {
  const root = "/usr/lib/postgresql"
  const majors = fs.existsSync(root)
    ? fs
        .readdirSync(root)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : []
  for (const major of majors) {
    const dir = nodePath.join(root, major, "bin")
    if (fs.existsSync(nodePath.join(dir, "initdb"))) return dir
  }
  throw new Error("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run scripts/test-deps.sh")
}

const asRoot = process.getuid?.() === 0
const USER = asRoot ? "postgres" : os.userInfo().username

/** argv run as the user PostgreSQL runs as. */
const asServerUser = (argv: ReadonlyArray<string>): Array<string> => (asRoot ? ["runuser", "-u", "postgres", "--", ...argv] : [...argv])

const run = (argv: ReadonlyArray<string>, what: string): string => {
  const r = Bun.spawnSync(asServerUser(argv), { stdout: "pipe", stderr: "pipe" })
  if (r.exitCode !== 0) throw new Error(`${what} failed (${r.exitCode}): ${r.stderr.toString()}${r.stdout.toString()}`)
  return r.stdout.toString()
}

/** A port nothing listens on now. */
const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

const runAsIs = (argv: ReadonlyArray<string>, what: string): string => {
  const r = Bun.spawnSync([...argv], { stdout: "pipe", stderr: "pipe" })
  if (r.exitCode !== 0) throw new Error(`${what} failed (${r.exitCode}): ${r.stderr.toString()}${r.stdout.toString()}`)
  return r.stdout.toString()
}

export interface TestPostgres {
  readonly url: string
  readonly port: number
  /** Runs SQL through psql and returns its unaligned, tuples-only output. */
  readonly psql: (sql: string) => string
  readonly restart: () => void
  readonly stop: () => void
}

export const startPostgres = async (): Promise<TestPostgres> => {
  const bin = binDir()
  const root = fs.mkdtempSync(nodePath.join(os.tmpdir(), "massgen-pg-"))
  const data = nodePath.join(root, "data")
  fs.mkdirSync(data, { mode: 0o700 })
  if (asRoot) {
    // The server user must reach its data directory through the temporary directory.
    fs.chmodSync(root, 0o755)
    run(["true"], "runuser")
    Bun.spawnSync(["chown", "-R", "postgres:postgres", root])
  }
  run([nodePath.join(bin, "initdb"), "-D", data, "-A", "trust", "-U", USER, "--no-sync", "-E", "UTF8"], "initdb")
  const port = await freePort()
  const options = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200`
  const start = () =>
    run(
      [nodePath.join(bin, "pg_ctl"), "-D", data, "-o", options, "-l", nodePath.join(root, "server.log"), "-w", "-t", "30", "start"],
      "pg_ctl start",
    )
  start()
  const url = `postgres://${USER}@127.0.0.1:${port}/postgres`
  let stopped = false
  return {
    url,
    port,
    // psql is a client: it runs as any user (the server alone refuses root).
    psql: (sql) =>
      runAsIs(
        [
          nodePath.join(bin, "psql"),
          "-X",
          "-q",
          "-A",
          "-t",
          "-v",
          "ON_ERROR_STOP=1",
          "-h",
          "127.0.0.1",
          "-p",
          String(port),
          "-U",
          USER,
          "-d",
          "postgres",
          "-c",
          sql,
        ],
        "psql",
      ),
    restart: () => {
      run([nodePath.join(bin, "pg_ctl"), "-D", data, "-m", "fast", "-w", "stop"], "pg_ctl stop")
      start()
    },
    stop: () => {
      if (stopped) return
      stopped = true
      try {
        run([nodePath.join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"], "pg_ctl stop")
      } finally {
        fs.rmSync(root, { recursive: true, force: true })
      }
    },
  }
}

/** A server for the whole test file: given to `use` before the first test, stopped (then `after`) once the file is done. */
export const postgresForFile = (use: (pg: TestPostgres) => void, after: () => void = () => undefined): void => {
  let pg: TestPostgres | undefined
  beforeAll(async () => {
    pg = await startPostgres()
    use(pg)
  }, 60_000)
  afterAll(() => {
    pg?.stop()
    after()
  })
}
