/**
 * The dangerous-command guard of `execute_command`: a guard against the
 * classic accidents of a model at a shell (`rm -rf /`, a fork bomb), refused
 * before anything runs, in every mode. It is not a boundary: a command that
 * means harm can always be written so that it does not see it (a script file,
 * `python -c`, a variable holding the name). What confines a command is the
 * execution mode (`sandbox`, `docker`); docs/commands.md says what each holds.
 *
 * `dangerousCommand(command)` names the accident a command is, or null. It
 * reads the command as the shell would split it, roughly: into simple
 * commands at `;`, `&`, `|`, newlines, parentheses, braces and backquotes
 * (so `ls; chmod x` and `$(sudo id)` are seen), each into words with quotes
 * and backslashes taken out (so `ch''mod` and `s\udo` are `chmod` and
 * `sudo`). A simple command's *program* is its first word once variable
 * assignments (`X=1`) and wrappers (`env`, `nohup`, `exec`, `timeout 5`, ...)
 * are skipped, by its last path component (`/usr/bin/dd` is `dd`). It is
 * dangerous when its program is `dd`, `sudo`, `su`, `doas`, `chown`, `chmod`
 * or `mkfs*`; when it is `rm` recursive, `find ... -delete` or `mv` onto the
 * root or the home (`/`, `/*`, `~`, `$HOME`), or `mv` to `/dev/null`; when it
 * redirects into a disk device (`> /dev/sda`). A fork bomb is a function
 * that pipes itself into itself (`:(){ :|: & };:`, `b(){ b|b& };b`). A word
 * that is only an argument (`echo su`, `ln -s /x dd`) is not a program.
 */

const PROGRAMS: ReadonlyMap<string, string> = new Map([
  ["dd", "dd"],
  ["sudo", "sudo"],
  ["su", "su"],
  ["doas", "doas"],
  ["chown", "chown"],
  ["chmod", "chmod"],
])
/** Words a program runs another program after: the program is the first word after them and their options. */
export const WRAPPERS: ReadonlySet<string> = new Set([
  "env",
  "command",
  "builtin",
  "exec",
  "nohup",
  "nice",
  "time",
  "setsid",
  "timeout",
  "xargs",
  "stdbuf",
  "ionice",
])
/** What `rm -r`, `find -delete` and `mv` must never be given: the root, everything under it, the home. */
const ROOTS: ReadonlySet<string> = new Set([
  "/",
  "/*",
  "/.",
  "~",
  "~/",
  "~/*",
  "$HOME",
  "$HOME/",
  "$HOME/*",
  "${HOME}",
  "${HOME}/",
  "${HOME}/*",
])
const DISK_DEVICE = /^\/dev\/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d)/
/** `name(){ ... name | name ... }`, or `function name { ... }`: a function that pipes itself into itself. */
const FORK_BOMB =
  /(?:^|[\s;&|(){}])(?:function\s+)?([^\s;&|(){}'"`]+)\s*(?:\(\s*\))?\s*\{[^}]*?(?:^|[\s;&|({])\1\s*\|&?\s*\1(?=[\s;&|)}]|$)/

const SEPARATORS = new Set([";", "&", "|", "\n", "(", ")", "{", "}", "`"])

/** The command's simple commands, each as its words (quotes and backslashes removed); a redirection is a word of its own (`>`). */
export const simpleCommands = (command: string): ReadonlyArray<ReadonlyArray<string>> => {
  const out: Array<Array<string>> = [[]]
  let word: string | null = null
  const endWord = () => {
    if (word !== null) out[out.length - 1]!.push(word)
    word = null
  }
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!
    if (c === "\\") {
      word = (word ?? "") + (command[i + 1] ?? "")
      i++
    } else if (c === "'" || c === '"') {
      const end = command.indexOf(c, i + 1)
      const stop = end === -1 ? command.length : end
      word = (word ?? "") + command.slice(i + 1, stop)
      i = stop
    } else if (c === "$" && command[i + 1] === "{") {
      const end = command.indexOf("}", i)
      const stop = end === -1 ? command.length : end
      word = (word ?? "") + command.slice(i, stop + 1)
      i = stop
    } else if (c === " " || c === "\t") {
      endWord()
    } else if (SEPARATORS.has(c)) {
      endWord()
      if (out[out.length - 1]!.length > 0) out.push([])
    } else if (c === ">" || c === "<") {
      // `2>` and `&>` keep their digit in the word before; only the target matters.
      endWord()
      out[out.length - 1]!.push(c)
    } else {
      word = (word ?? "") + c
    }
  }
  endWord()
  return out.filter((words) => words.length > 0)
}

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/
const base = (word: string): string => word.slice(word.lastIndexOf("/") + 1)

/** The index of a simple command's program: past assignments, wrappers and their options and numbers. */
const programIndex = (words: ReadonlyArray<string>): number => {
  let i = 0
  let wrapped = false
  while (i < words.length) {
    const w = words[i]!
    if (ASSIGNMENT.test(w) || (wrapped && (w.startsWith("-") || /^\d/.test(w)))) i++
    else if (WRAPPERS.has(base(w))) (wrapped = true), i++
    else break
  }
  return i
}

const recursive = (args: ReadonlyArray<string>): boolean => args.some((a) => /^-[a-zA-Z]*[rR]/.test(a) || a === "--recursive")

/** What accident one simple command is, or null. */
const accident = (words: ReadonlyArray<string>): string | null => {
  for (let i = 0; i < words.length - 1; i++) {
    if (words[i] === ">" && DISK_DEVICE.test(words[i + 1]!)) return "writing to a disk device"
  }
  const at = programIndex(words)
  if (at >= words.length) return null
  const program = base(words[at]!)
  const args = words.slice(at + 1)
  const named = PROGRAMS.get(program)
  if (named !== undefined) return named
  if (program.startsWith("mkfs")) return "mkfs"
  if (program === "rm" && recursive(args) && args.some((a) => ROOTS.has(a))) return "rm -rf /"
  if (program === "find" && args.includes("-delete") && args.some((a) => ROOTS.has(a))) return "find / -delete"
  if (program === "mv" && args.some((a) => a === "/dev/null")) return "moving files to /dev/null"
  if (program === "mv" && args.some((a) => ROOTS.has(a))) return "moving the root or the home"
  return null
}

/** The accident `command` is (`a fork bomb`, `chmod`), or null when the guard lets it run. */
export const dangerousCommand = (command: string): string | null => {
  if (FORK_BOMB.test(command)) return "a fork bomb"
  for (const words of simpleCommands(command)) {
    const what = accident(words)
    if (what !== null) return what
  }
  return null
}
