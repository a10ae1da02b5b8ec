/**
 * What `massgen batch --automation` prints on stdout, and nothing else:
 *
 * - at the start `BATCH_DIR: <dir>`, `RESULTS: <dir>/results.jsonl` and
 *   `ITEMS: <n> (<k> with a result already)`;
 * - `ITEM: <id> <finish reason> <exit code>` as each item gets its result;
 * - at the end `BATCH: <outcome>` (`completed`, `failed`, `budget`, `timeout`,
 *   `interrupted`) and `DONE: <items with a result>/<n>, <completed> completed`.
 *
 * docs/batch.md lists the same lines; a script reads `results.jsonl` for the rest.
 */
import { join } from "node:path"
import type { BatchOutcome, BatchResult } from "../../domain/batch.ts"
import { RESULTS_FILE } from "../../services/batch/batch-folder.ts"

export const batchHeader = (dir: string, total: number, already: number): ReadonlyArray<string> => [
  `BATCH_DIR: ${dir}`,
  `RESULTS: ${join(dir, RESULTS_FILE)}`,
  `ITEMS: ${total} (${already} with a result already)`,
]

export const itemLine = (r: BatchResult): string => `ITEM: ${r.id} ${r.finish_reason} ${r.exit_code}`

export const batchFooter = (outcome: BatchOutcome, total: number, results: ReadonlyArray<BatchResult>): ReadonlyArray<string> => [
  `BATCH: ${outcome}`,
  `DONE: ${results.length}/${total}, ${results.filter((r) => r.finish_reason === "completed").length} completed`,
]
