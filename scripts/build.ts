/**
 * `bun run build`: massgen for this machine, stamped, as `dist/massgen`
 * (what `package.json`'s `bin` names and the end-to-end tests run): the one
 * file it leaves in `dist/` (its source maps are inside it; `scripts/compile.ts`).
 */
import * as nodePath from "node:path"
import { buildDate, checkoutCommit, compile, hostTarget, ROOT } from "./compile.ts"

const outfile = nodePath.join(ROOT, "dist", "massgen")
await compile({ target: hostTarget(), outfile, commit: checkoutCommit(), built: buildDate() })
console.log(`built ${nodePath.relative(ROOT, outfile)} (${hostTarget()})`)
