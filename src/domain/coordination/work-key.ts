/**
 * The key of a piece of work: `agent#round` for a round, `agent#present` for a presentation, `agent#evaluate` for its evaluation.
 *
 * The orchestrator names a work's fiber, request and call times by it, and
 * replay its rounds in flight and the rounds a new answer cancelled. Pure.
 */
export const workKey = (agent: string, round: number | "present" | "evaluate"): string => `${agent}#${round}`
