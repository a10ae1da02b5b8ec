/**
 * A small, safe Markdown to HTML renderer for the final answer in the web view.
 *
 * Contract: `markdownToHtml(text)` never emits markup from its input: every
 * character of the text is HTML-escaped before any tag is added, so raw HTML
 * in an answer shows as text. Links keep only `http:`, `https:` and `mailto:`
 * targets (anything else renders as plain text) and open with
 * `rel="noopener noreferrer"`. Supported: ATX headings, paragraphs, fenced
 * code blocks, `-`/`*`/`+` and `1.` lists (one level), block quotes,
 * horizontal rules, and inline code, bold, italic and links. Whatever it does
 * not know renders as text.
 */

export const escapeHtml = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")

const SAFE_URL = /^(https?:\/\/|mailto:)[^\s"'<>]*$/i

/** Inline markup of one escaped-on-the-way line. */
export const renderInline = (text: string): string => {
  const codes: Array<string> = []
  // Inline code first, so nothing inside it is read as markup.
  let out = text.replace(/`([^`]+)`/g, (_, code: string) => {
    codes.push(`<code>${escapeHtml(code)}</code>`)
    return `\u0000${codes.length - 1}\u0000`
  })
  out = escapeHtml(out)
  out = out.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (whole, label: string, url: string) => {
    const raw = url.replace(/&amp;/g, "&")
    return SAFE_URL.test(raw) ? `<a href="${escapeHtml(raw)}" rel="noopener noreferrer" target="_blank">${label}</a>` : whole
  })
  out = out.replace(/\*\*(?=\S)([^*]*?\S)\*\*/g, "<strong>$1</strong>").replace(/__(?=\S)([^_]*?\S)__/g, "<strong>$1</strong>")
  out = out
    .replace(/(^|[^*\w])\*(?=\S)([^*]*?\S)\*(?!\*)/g, "$1<em>$2</em>")
    .replace(/(^|[^_\w])_(?=\S)([^_]*?\S)_(?![_\w])/g, "$1<em>$2</em>")
  return out.replace(/\u0000(\d+)\u0000/g, (_, i: string) => codes[Number(i)] ?? "")
}

type Block = { readonly kind: "p" | "ul" | "ol" | "quote"; readonly lines: Array<string> }

export const markdownToHtml = (text: string): string => {
  const lines = text.replace(/\r\n?/g, "\n").split("\n")
  const html: Array<string> = []
  let block: Block | null = null
  const close = () => {
    if (block === null) return
    const b: Block = block
    block = null
    if (b.kind === "p") html.push(`<p>${b.lines.map(renderInline).join("<br>")}</p>`)
    else if (b.kind === "quote") html.push(`<blockquote>${markdownToHtml(b.lines.join("\n"))}</blockquote>`)
    else html.push(`<${b.kind}>${b.lines.map((l) => `<li>${renderInline(l)}</li>`).join("")}</${b.kind}>`)
  }
  const add = (kind: Block["kind"], line: string) => {
    if (block?.kind !== kind) close()
    block ??= { kind, lines: [] }
    block.lines.push(line)
  }
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const fence = /^\s*(```|~~~)\s*([\w+-]*)\s*$/.exec(line)
    if (fence) {
      close()
      const code: Array<string> = []
      let j = i + 1
      while (j < lines.length && !lines[j]!.trim().startsWith(fence[1]!)) code.push(lines[j++]!)
      const lang = fence[2] ? ` class="language-${escapeHtml(fence[2])}"` : ""
      html.push(`<pre><code${lang}>${escapeHtml(code.join("\n"))}</code></pre>`)
      i = j
      continue
    }
    const heading = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line)
    const ul = /^\s{0,3}[-*+]\s+(.*)$/.exec(line)
    const ol = /^\s{0,3}\d+[.)]\s+(.*)$/.exec(line)
    const quote = /^\s{0,3}>\s?(.*)$/.exec(line)
    if (line.trim() === "") close()
    else if (heading) {
      close()
      const n = heading[1]!.length
      html.push(`<h${n}>${renderInline(heading[2]!)}</h${n}>`)
    } else if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      close()
      html.push("<hr>")
    } else if (ul) add("ul", ul[1]!)
    else if (ol) add("ol", ol[1]!)
    else if (quote) add("quote", quote[1]!)
    else if (block !== null && (block as Block).kind !== "p" && /^\s+\S/.test(line)) {
      const b = block as Block
      b.lines[b.lines.length - 1] += ` ${line.trim()}`
    } else add("p", line.trim())
  }
  close()
  return html.join("\n")
}
