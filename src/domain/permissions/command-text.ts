/**
 * A shell command's text read as the shell would run it, as far as text can tell: what the permission rules match.
 *
 * `readCommand(text)` splits the text into its *simple commands* (at `;`,
 * `&&`, `||`, `|`, `&`, newlines, parentheses and braces), each into words
 * with quotes and backslashes taken out (`r''m` and `\rm` are `rm`), and
 * reads into what runs inside: command substitutions (`$(...)`, backquotes),
 * `eval`'s words and the script of `sh -c`/`bash -c` (any shell, options
 * before `-c` too). A simple command's *program* is its first word past
 * variable assignments and wrappers (`env`, `sudo`, `nohup`, `timeout 5`, ...);
 * `forms(command)` gives the texts a rule is matched against: its words as
 * written, and from its program on with the program's last path component
 * (`/bin/rm -rf x` is `rm -rf x`), words joined by one space.
 *
 * What text cannot tell is said, not guessed: a program computed when the
 * command runs (`$X -rf y`, `$(echo rm) y`) makes the command `computed`, and
 * nesting past `MAX_DEPTH` makes the reading `partial`. What a program does
 * with its own arguments (`python3 -c "..."`, a script file, `find -exec`) is
 * beyond any reading of the command's text: docs/permissions.md says so.
 * Pure, and never throws.
 */

import { WRAPPERS as GUARD_WRAPPERS } from "../tools/command-guard.ts"

export interface SimpleCommand {
  /** Its words, quotes and escapes taken out; expansions kept as written (`$HOME`). */
  readonly words: ReadonlyArray<string>
  /** Where its program is in `words` (`words.length` when it has none). */
  readonly program: number
  /** Whether its program is computed when it runs (an expansion or a substitution). */
  readonly computed: boolean
}

export interface CommandReading {
  readonly commands: ReadonlyArray<SimpleCommand>
  /** Whether some text was nested too deep to be read. */
  readonly partial: boolean
}

export const MAX_DEPTH = 8

const SHELLS: ReadonlySet<string> = new Set(["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "yash", "fish", "busybox"])
/** Words that run the program after them (with their options and numbers): the guard's, and those that run it as another user or root. */
const WRAPPERS: ReadonlySet<string> = new Set([...GUARD_WRAPPERS, "sudo", "doas", "chroot", "unbuffer"])
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/
const VARIABLE = /^\$(\{[^}]*\}?|[A-Za-z_][A-Za-z0-9_]*|[0-9#?*@$!-])/
const SEPARATORS = ";&|\n(){}"

export const baseName = (word: string): string => word.slice(word.lastIndexOf("/") + 1)

/** The index of the `)` closing the `(` at `open`, quotes inside skipped; the text's length when there is none. */
const closing = (src: string, open: number): number => {
  let depth = 0
  for (let i = open; i < src.length; i++) {
    const c = src[i]!
    if (c === "\\") i++
    else if (c === "'" || c === '"') {
      const end = src.indexOf(c, i + 1)
      i = end === -1 ? src.length : end
    } else if (c === "(") depth++
    else if (c === ")" && --depth === 0) return i
  }
  return src.length
}

interface Word {
  text: string
  dynamic: boolean
}

export const readCommand = (text: string): CommandReading => {
  const commands: Array<SimpleCommand> = []
  let partial = false

  const finish = (words: ReadonlyArray<Word>, depth: number) => {
    let at = 0
    let wrapped = false
    while (at < words.length) {
      const w = words[at]!
      if (ASSIGNMENT.test(w.text) || (wrapped && (w.text.startsWith("-") || /^\d/.test(w.text)))) at++
      else if (!w.dynamic && WRAPPERS.has(baseName(w.text))) (wrapped = true), at++
      else break
    }
    const program = words[at]
    commands.push({ words: words.map((w) => w.text), program: at, computed: program?.dynamic === true })
    if (program === undefined || program.dynamic) return
    const name = baseName(program.text)
    const args = words.slice(at + 1)
    if (name === "eval") walk(args.map((w) => w.text).join(" "), depth + 1)
    if (SHELLS.has(name)) {
      const flag = args.findIndex((w) => /^-[A-Za-z]*c[A-Za-z]*$/.test(w.text))
      const script = flag === -1 ? undefined : args.slice(flag + 1).find((w) => !w.text.startsWith("-"))
      if (script !== undefined) walk(script.text, depth + 1)
    }
  }

  const walk = (src: string, depth: number): void => {
    if (depth > MAX_DEPTH) {
      partial = true
      return
    }
    let words: Array<Word> = []
    let word: Word | null = null
    const add = (s: string, dynamic = false) => {
      word ??= { text: "", dynamic: false }
      word.text += s
      if (dynamic) word.dynamic = true
    }
    const endWord = () => {
      if (word !== null) words.push(word)
      word = null
    }
    const endCommand = () => {
      endWord()
      if (words.length > 0) finish(words, depth)
      words = []
    }
    /** A `$` at `i`: a substitution (read into) or a variable; the index after it. */
    const dollar = (i: number): number => {
      if (src[i + 1] === "(") {
        const end = closing(src, i + 1)
        const inner = src.slice(i + 2, end)
        // `$((1 + 2))` is arithmetic: nothing runs.
        if (!inner.startsWith("(")) walk(inner, depth + 1)
        add(src.slice(i, end + 1), true)
        return end + 1
      }
      const m = VARIABLE.exec(src.slice(i))
      if (m === null) {
        add("$")
        return i + 1
      }
      add(m[0], true)
      return i + m[0].length
    }
    const backquote = (i: number): number => {
      const end = src.indexOf("`", i + 1)
      const stop = end === -1 ? src.length : end
      walk(src.slice(i + 1, stop), depth + 1)
      add(src.slice(i, stop + 1), true)
      return stop + 1
    }
    let i = 0
    while (i < src.length) {
      const c = src[i]!
      if (c === "\\") {
        if (src[i + 1] !== "\n") add(src[i + 1] ?? "")
        i += 2
      } else if (c === "'") {
        const end = src.indexOf("'", i + 1)
        const stop = end === -1 ? src.length : end
        add(src.slice(i + 1, stop))
        i = stop + 1
      } else if (c === '"') {
        add("")
        i++
        while (i < src.length && src[i] !== '"') {
          const d = src[i]!
          if (d === "\\" && '$`"\\\n'.includes(src[i + 1] ?? "")) {
            if (src[i + 1] !== "\n") add(src[i + 1]!)
            i += 2
          } else if (d === "$") i = dollar(i)
          else if (d === "`") i = backquote(i)
          else add(d), i++
        }
        i++
      } else if (c === "$") i = dollar(i)
      else if (c === "`") i = backquote(i)
      else if (c === " " || c === "\t" || c === "\r") endWord(), i++
      else if (c === "#" && word === null) {
        const end = src.indexOf("\n", i)
        i = end === -1 ? src.length : end
      } else if (SEPARATORS.includes(c)) endCommand(), i++
      else if (c === "<" || c === ">") {
        endWord()
        words.push({ text: c, dynamic: false })
        i++
      } else add(c), i++
    }
    endCommand()
  }

  walk(text, 0)
  return { commands, partial }
}

/** A simple command from its program on, the program by its base name (`rm -rf x`); its words as written when it has no program. */
export const namedForm = (command: SimpleCommand): string => {
  const rest = command.words.slice(command.program)
  return rest.length === 0 ? command.words.join(" ") : [baseName(rest[0]!), ...rest.slice(1)].join(" ")
}

/** The texts a rule is matched against for one simple command: as written, from its program on by its base name, and as written from its program on. */
export const forms = (command: SimpleCommand): ReadonlyArray<string> => [
  ...new Set([command.words.join(" "), namedForm(command), command.words.slice(command.program).join(" ")]),
]

/** Whether text alone cannot tell what the command runs: a computed program, or nesting too deep. */
export const isOpaque = (reading: CommandReading): boolean => reading.partial || reading.commands.some((c) => c.computed)
