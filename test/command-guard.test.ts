/**
 * The dangerous-command guard (`domain/tools/command-guard.ts`), a guard against
 * accidents: a dangerous program is refused however the command reaches it
 * (after `;`, `&&`, a pipe, in `$(...)` or backquotes, behind assignments and
 * wrappers, quoted, backslashed, by its full path), the classic accidents are
 * refused (fork bombs, `find / -delete`, `rm -rf ~`), and a dangerous word that
 * is only an argument (`echo su`, `ln -s /x dd`) is not.
 */
import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import { dangerousCommand, simpleCommands } from "../src/domain/tools/command-guard.ts"
import { commandRefusal } from "../src/domain/tools/command-line.ts"

const PROGRAMS = ["dd", "sudo", "su", "doas", "chown", "chmod", "mkfs.ext4"] as const

/** The ways to write a program's name that the shell reads as the name. */
const spelled = (name: string): fc.Arbitrary<string> =>
  fc.oneof(
    fc.constant(name),
    fc.constant(`'${name}'`),
    fc.constant(`"${name}"`),
    fc.constant(`/usr/bin/${name}`),
    fc.integer({ min: 1, max: name.length - 1 }).map((i) => `${name.slice(0, i)}''${name.slice(i)}`),
    fc.integer({ min: 0, max: name.length - 1 }).map((i) => `${name.slice(0, i)}\\${name.slice(i)}`),
  )
/** What may come before a program in a command line. */
const before = fc.constantFrom(
  "",
  "ls; ",
  "true && ",
  "false || ",
  "echo x | ",
  "(",
  "$(",
  "`",
  "{ ",
  "X=1 ",
  "env -i ",
  "nohup ",
  "exec ",
  "timeout 5 ",
  "nice -n 5 ",
  "\n",
)
const after = fc.constantFrom("", " -h", " x y", " if=/dev/zero of=out", "; echo done", " &", ")")

describe("the dangerous-command guard", () => {
  test("property: a dangerous program is refused however it is written and wherever it stands", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...PROGRAMS).chain((p) => fc.tuple(fc.constant(p), spelled(p), before, after)),
        ([program, name, pre, post]) => {
          const command = `${pre}${name}${post}`
          const why = dangerousCommand(command)
          expect({ command, refused: why !== null }).toEqual({ command, refused: true })
          expect(commandRefusal(command, { allowed: [], blocked: [] })).toBe(`a command using ${why} is never run`)
          expect(why).toBe(program.startsWith("mkfs") ? "mkfs" : program)
        },
      ),
      { numRuns: 400 },
    )
  })

  test("property: a dangerous word that is only an argument, a file name or part of a word is let through", () => {
    const harmless = fc.constantFrom(
      "echo W",
      "ln -s /x W",
      "grep W notes.txt",
      "cat W.txt",
      "man W",
      "ls -la W",
      "touch W",
      "echo 'W x'",
      "git log --grep=W",
      "printf '%s' W | wc -c",
      "mkdir W_dir",
      "python3 W.py",
    )
    fc.assert(
      fc.property(harmless, fc.constantFrom(...PROGRAMS), before, (template, word, pre) => {
        const command = `${pre}${template.replaceAll("W", word)}`
        expect({ command, why: dangerousCommand(command) }).toEqual({ command, why: null })
      }),
      { numRuns: 300 },
    )
  })

  test("the classic accidents are refused; their harmless neighbours are not", () => {
    const refused: ReadonlyArray<readonly [string, string]> = [
      [":(){ :|: & };:", "a fork bomb"],
      [":(){ :|:& };:", "a fork bomb"],
      ["b(){ b|b& };b", "a fork bomb"],
      ["bomb() { bomb | bomb & }; bomb", "a fork bomb"],
      ["function f { f|f & }; f", "a fork bomb"],
      ["find / -delete", "find / -delete"],
      ["find ~ -name '*.o' -delete", "find / -delete"],
      ["rm -rf /", "rm -rf /"],
      ["rm -fr /*", "rm -rf /"],
      ["rm -r -f ~", "rm -rf /"],
      ['rm -rf "$HOME"', "rm -rf /"],
      ["cd /tmp && rm --recursive --force /", "rm -rf /"],
      ["echo x > /dev/sda", "writing to a disk device"],
      ["cat img >> /dev/nvme0n1", "writing to a disk device"],
      ["mv notes.txt /dev/null", "moving files to /dev/null"],
    ]
    for (const [command, what] of refused) expect({ command, why: dangerousCommand(command) }).toEqual({ command, why: what })
    for (const command of [
      "rm -rf ./build",
      "rm -rf /tmp/scratch",
      "find . -name '*.o' -delete",
      "find / -name x",
      "echo x > /dev/null",
      "f(){ echo hi; }; f | cat",
      "ls; rm x",
      "mv a b",
    ]) {
      expect({ command, why: dangerousCommand(command) }).toEqual({ command, why: null })
    }
  })

  test("simple commands: split where the shell splits, quotes and backslashes taken out", () => {
    expect(simpleCommands(`a 'b c' "d" e\\ f; g|h && i 2>/dev/null $(j) \`k\``)).toEqual([
      ["a", "b c", "d", "e f"],
      ["g"],
      ["h"],
      ["i", "2", ">", "/dev/null", "$"],
      ["j"],
      ["k"],
    ])
  })
})
