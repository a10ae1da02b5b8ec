/**
 * `denseLog(answers, ids)`: a synthetic log of one run in which `answers`
 * answers come from the agents `ids` in turn, each in a round of its own (two
 * events per answer, a second apart), every round shown the latest answer of
 * each agent. What test/fold-linear.test.ts counts the fold's work on and
 * bench/fold.ts times it on.
 */
import type { Event } from "../../src/domain/events/index.ts"
import { at, runStarted } from "./given.ts"

export const denseLog = (answers: number, ids: ReadonlyArray<string> = ["a", "b", "c"]): Array<Event> => {
  const events: Array<Event> = [{ ...runStarted(ids), time: at(0) }]
  const count = new Map(ids.map((id) => [id, 0]))
  const latest = new Map<string, string>()
  for (let n = 0; n < answers; n++) {
    const i = n % ids.length
    const id = ids[i]!
    const round = count.get(id)! + 1
    count.set(id, round)
    const shown = ids.flatMap((x) => (latest.has(x) ? [latest.get(x)!] : []))
    const time = at(1 + n)
    events.push({ _tag: "round_started", time, agent: id, round, shown, vote_only: false, restart: false })
    const label = `agent${i + 1}.${round}`
    events.push({ _tag: "answer_submitted", time, agent: id, round, label, content: `answer ${n}` })
    latest.set(id, label)
  }
  return events
}
