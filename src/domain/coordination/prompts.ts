/**
 * What an agent is asked: the messages and workflow tools of a round or a presentation.
 *
 * `roundRequest` builds an answer round: the question and the latest answer of
 * every agent under its anonymous label, with `new_answer` (unless the agent
 * reached its answer cap) and `vote` (limited to agents whose answer is shown).
 * `presentationRequest` builds the winner's final call: every answer by agent,
 * the votes and their reasons, and what the strategy asks for. `retryMessage`
 * is what a reply that used no valid tool gets back. Pure: the same state gives
 * the same request, which replay relies on.
 *
 * A run that continues a conversation (`conversation`, earlier questions and
 * the council's final answers) shows it first, in MassGen's form: a
 * `<CONVERSATION_HISTORY>` block of `User:` / `Assistant:` lines before the
 * original message, and a note closing the system message
 * (`conversationHistory`, `CONVERSATION_NOTE`).
 *
 * MassGen's `voting_sensitivity` sets the bar a current answer must clear for
 * a vote (`lenient`: it addresses the message well; `balanced`: strong and
 * complete; `strict`: excellent, reference quality), and its
 * `answer_novelty_requirement` how different a new answer must be (`balanced`:
 * meaningfully; `strict`: substantially, else vote); the sentences are in
 * `docs/coordination.md`. `noveltyProblem` is the check behind the second: word-set
 * overlap (Jaccard) with a shown answer above 0.70 (`balanced`) or 0.50
 * (`strict`) refuses the answer.
 *
 * Words: the *original message* is the user's question; *current answers* are
 * the latest labelled answers a round shows; the *conversation* is what came
 * before the question.
 */
import type { ConversationMessage, FinalAnswerStrategy, Strictness } from "../events/index.ts"
import type { LlmMessage, LlmRequest, ShownAnswer, ToolSpec } from "../llm.ts"

export const newAnswerTool: ToolSpec = {
  name: "new_answer",
  description: "Submit a new and improved answer to the original message",
  parameters: {
    type: "object",
    properties: {
      content: { type: "string", description: "Your complete improved answer; it replaces your previous one." },
    },
    required: ["content"],
    additionalProperties: false,
  },
}

export const voteTool = (validIds: ReadonlyArray<string>): ToolSpec => ({
  name: "vote",
  description: "Vote for the agent whose answer is best, to present the final answer",
  parameters: {
    type: "object",
    properties: {
      agent_id: {
        type: "string",
        enum: [...validIds],
        description: `Anonymous id of the agent to vote for (one of ${validIds.join(", ")})`,
      },
      reason: { type: "string", description: "Brief reason why this agent has the best answer" },
    },
    required: ["agent_id", "reason"],
    additionalProperties: false,
  },
})

/** When to vote, by `voting_sensitivity`. */
export const VOTING_BARS: Readonly<Record<Strictness, string>> = {
  lenient:
    "Judge them as a critic, not as a collaborator. If the best current answer fully addresses the original message, call `vote` for its agent.",
  balanced:
    "Judge them as a critic, not as a collaborator: is the best current answer accurate, complete and comprehensive, or could it be meaningfully improved, refined or expanded? Has it weaknesses, gaps, or a better approach it missed? Call `vote` for its agent only if it is strong and complete.",
  strict:
    "Judge them as a critic, not as a collaborator, and hold the best current answer to a high standard: does it cover every aspect and edge case, is it accurate and well reasoned, does it justify what it says, has it no significant gap, could it serve as a reference? Call `vote` for its agent only if it meets that standard.",
}

/** What a new answer must bring, by `answer_novelty_requirement` (nothing more for `lenient`). */
export const NOVELTY_RULES: Readonly<Record<Strictness, string>> = {
  lenient: "",
  balanced:
    "A new answer must be meaningfully different from the current ones: not a rephrasing, but new insights, approaches or tools, or substantive improvements. One too close to a current answer is refused.",
  strict:
    "A new answer must be substantially different from the current ones: another approach or method, other tools or techniques, or much more depth. If you cannot give such an answer, vote. One too close to a current answer is refused.",
}

/** What a round offers when voting waits for every agent's first answer (`defer_voting_until_all_answered`). */
export const DEFERRED_VOTING = "No vote is taken yet: every agent first gives its own answer. Call `new_answer` with yours."

const coordinationSystem = (voteOnly: boolean, sensitivity: Strictness, novelty: Strictness, answerOnly: boolean): string =>
  [
    "You are one of several agents answering the same message. You see the other agents' current answers under anonymous ids.",
    answerOnly ? DEFERRED_VOTING : VOTING_BARS[sensitivity],
    answerOnly
      ? ""
      : voteOnly
        ? "You have reached your limit of answers: you must call `vote`."
        : "Otherwise write a better answer yourself and call `new_answer` with it. Call exactly one of the two tools.",
    voteOnly ? "" : NOVELTY_RULES[novelty],
  ]
    .filter((line) => line !== "")
    .join("\n")

/** The share of words two texts have in common: the words (split on white space, lower case) of both over those of either. */
export const wordOverlap = (a: string, b: string): number => {
  const words = (text: string) =>
    new Set(
      text
        .toLowerCase()
        .split(/\s+/)
        .filter((w) => w !== ""),
    )
  const x = words(a)
  const y = words(b)
  const union = new Set([...x, ...y]).size
  if (union === 0) return 1
  let both = 0
  for (const w of x) if (y.has(w)) both++
  return both / union
}

/** The overlap above which `answer_novelty_requirement` refuses a new answer. */
export const NOVELTY_LIMITS: Readonly<Record<"balanced" | "strict", number>> = { balanced: 0.7, strict: 0.5 }

/** Why `content` is not new enough against the answers shown, or null: MassGen's word-set overlap check. */
export const noveltyProblem = (content: string, shown: ReadonlyArray<ShownAnswer>, novelty: "balanced" | "strict"): string | null => {
  const limit = NOVELTY_LIMITS[novelty]
  const close = shown.find((a) => wordOverlap(content, a.content) > limit)
  if (close === undefined) return null
  const percent = Math.round(limit * 100)
  return novelty === "strict"
    ? `Your answer is too similar to ${close.label} (more than ${percent}% of its words in common). Take a fundamentally different approach, other tools or techniques, or vote for an existing answer.`
    : `Your answer is too similar to ${close.label} (more than ${percent}% of its words in common). Give a meaningfully different answer with new insights, approaches or tools, or vote for an existing answer.`
}

/** MassGen's refusal of an answer identical to one already shown. */
export const duplicateProblem = (label: string): string =>
  `Answer already provided by ${label}. Provide different answer or vote for existing one.`

const withAgentMessage = (base: string, systemMessage: string | null): string =>
  systemMessage === null || systemMessage.trim() === "" ? base : `${systemMessage.trim()}\n\n${base}`

const withSections = (system: string, sections: ReadonlyArray<string>): string => [system, ...sections.filter((s) => s !== "")].join("\n\n")

/** What closes the system message of a run that continues a conversation (MassGen's `system_message_with_context`). */
export const CONVERSATION_NOTE =
  "IMPORTANT: You are responding to the latest message in an ongoing conversation. Consider the full conversation context when evaluating answers and providing your response."

const withConversationNote = (system: string, conversation: ReadonlyArray<ConversationMessage>): string =>
  conversation.length === 0 ? system : `${system}\n\n${CONVERSATION_NOTE}`

/** The conversation before the question, as MassGen shows it (`format_conversation_history`); "" when there is none. */
export const conversationHistory = (conversation: ReadonlyArray<ConversationMessage>): string =>
  conversation.length === 0
    ? ""
    : [
        "<CONVERSATION_HISTORY>",
        ...conversation.map((m) => `${m.role === "user" ? "User" : "Assistant"}: ${m.content}`),
        "<END OF CONVERSATION_HISTORY>",
      ].join("\n")

/** The original message, after the conversation's history when there is one. */
const originalMessage = (question: string, conversation: ReadonlyArray<ConversationMessage>): string => {
  const block = `<ORIGINAL MESSAGE>\n${question}\n<END OF ORIGINAL MESSAGE>`
  return conversation.length === 0 ? block : `${conversationHistory(conversation)}\n\n${block}`
}

const NO_CONVERSATION: ReadonlyArray<ConversationMessage> = []

/** One answer as a request shows it; `note` follows its opening label. */
const answerBlock = (a: ShownAnswer, note = ""): string => `<${a.label}>${note}\n${a.content}\n<end of ${a.label}>`

const answersBlock = (shown: ReadonlyArray<ShownAnswer>): string =>
  shown.length === 0 ? "(no answers available yet)" : shown.map((a) => answerBlock(a)).join("\n")

export const roundUserMessage = (
  question: string,
  shown: ReadonlyArray<ShownAnswer>,
  conversation: ReadonlyArray<ConversationMessage> = [],
): string =>
  [originalMessage(question, conversation), `<CURRENT ANSWERS from the agents>\n${answersBlock(shown)}\n<END OF CURRENT ANSWERS>`].join(
    "\n\n",
  )

/** The ids of each list of shown answers: every reply of a round, and every round shown one list, asks for them. */
const votableOf = new WeakMap<ReadonlyArray<ShownAnswer>, ReadonlyArray<string>>()

/** The anonymous ids a vote may name: the agents whose answer the round shows (the same array for the same list). */
export const votableIds = (shown: ReadonlyArray<ShownAnswer>): ReadonlyArray<string> => {
  let ids = votableOf.get(shown)
  if (ids === undefined) votableOf.set(shown, (ids = [...new Set(shown.map((a) => a.anonId))]))
  return ids
}

/** What the rounds shown one list of answers (the same array) have in common: built once, not once per agent. */
interface SharedParts {
  readonly question: string
  readonly conversation: ReadonlyArray<ConversationMessage>
  readonly user: string
  readonly tools: { readonly [voteOnly: string]: ReadonlyArray<ToolSpec> }
}
const shared = new WeakMap<ReadonlyArray<ShownAnswer>, SharedParts>()

const sharedParts = (
  question: string,
  shown: ReadonlyArray<ShownAnswer>,
  conversation: ReadonlyArray<ConversationMessage>,
): SharedParts => {
  const known = shared.get(shown)
  if (known !== undefined && known.question === question && known.conversation === conversation) return known
  const ids = votableIds(shown)
  const tools = (voteOnly: boolean): ReadonlyArray<ToolSpec> => [
    ...(voteOnly ? [] : [newAnswerTool]),
    ...(ids.length > 0 ? [voteTool(ids)] : []),
  ]
  const parts = {
    question,
    conversation,
    user: roundUserMessage(question, shown, conversation),
    tools: { true: tools(true), false: tools(false) },
  }
  shared.set(shown, parts)
  return parts
}

export const roundRequest = (input: {
  readonly agentId: string
  readonly selfAnonId: string
  readonly systemMessage: string | null
  readonly question: string
  readonly conversation?: ReadonlyArray<ConversationMessage>
  readonly shown: ReadonlyArray<ShownAnswer>
  readonly voteOnly: boolean
  readonly votingSensitivity?: Strictness
  readonly novelty?: Strictness
  readonly answerOnly?: boolean
  /** Sections that close the system message (skills, memory: `domain/skills/sections.ts`), in order; empty ones are left out. */
  readonly sections?: ReadonlyArray<string>
}): LlmRequest => {
  const conversation = input.conversation ?? NO_CONVERSATION
  const parts = sharedParts(input.question, input.shown, conversation)
  const novelty = input.novelty ?? "lenient"
  const answerOnly = input.answerOnly === true && !input.voteOnly
  return {
    agentId: input.agentId,
    system: withConversationNote(
      withSections(
        withAgentMessage(
          coordinationSystem(input.voteOnly, input.votingSensitivity ?? "lenient", novelty, answerOnly),
          input.systemMessage,
        ),
        input.sections ?? [],
      ),
      conversation,
    ),
    messages: [{ role: "user", content: parts.user }],
    tools: answerOnly ? [newAnswerTool] : parts.tools[String(input.voteOnly)]!,
    context: {
      kind: "round",
      selfAnonId: input.selfAnonId,
      shown: input.shown,
      voteOnly: input.voteOnly,
      ...(novelty !== "lenient" ? { novelty } : {}),
      ...(answerOnly ? { answerOnly } : {}),
    },
  }
}

/**
 * The message that brings new answers into a round in flight (injection): the
 * answers `shown` has that `before` did not, each with the label it replaces.
 */
export const updateMessage = (before: ReadonlyArray<ShownAnswer>, shown: ReadonlyArray<ShownAnswer>): string => {
  const had = new Set(before.map((a) => a.label))
  const fresh = shown.filter((a) => !had.has(a.label))
  const block = fresh
    .map((a) => {
      const replaced = before.find((b) => b.anonId === a.anonId)
      return answerBlock(a, replaced ? ` (replaces ${replaced.label})` : "")
    })
    .join("\n")
  return [
    "UPDATE: While you were working, new answers were provided.",
    `<NEW ANSWERS>\n${block}\n<END OF NEW ANSWERS>`,
    `The answers you can vote for are now those of ${votableIds(shown).join(", ")}. Take them into account, then call \`new_answer\` or \`vote\`.`,
  ].join("\n")
}

/** What each call of a vote that did not see the newest answers gets back: it is not counted. */
export const STALE_VOTE_RESULT = "Your vote was not counted: new answers arrived while you worked (see the update that follows)."

/** What a reply that used no valid tool gets back, with what it said kept in view. */
export const retryMessages = (replyText: string, problem: string): ReadonlyArray<LlmMessage> => [
  { role: "assistant", content: replyText === "" ? "(no text)" : replyText },
  {
    role: "user",
    content: `${problem}\nFinish your work above by calling \`vote\` or \`new_answer\`. Make sure you actually call the tool.`,
  },
]

const strategySentence: Record<FinalAnswerStrategy, string> = {
  winner_present:
    "Use your own answer as the primary basis, improve it with anything valuable from the others, and present the final answer.",
  synthesize: "Combine the strongest parts of all answers into one final answer.",
  winner_reuse: "Present the selected answer as it stands.",
}

export interface PresentationAnswer {
  readonly agentId: string
  readonly label: string
  readonly content: string
  readonly own: boolean
}

export const presentationRequest = (input: {
  readonly agentId: string
  readonly selfAnonId: string
  readonly systemMessage: string | null
  readonly question: string
  readonly conversation?: ReadonlyArray<ConversationMessage>
  readonly answers: ReadonlyArray<PresentationAnswer>
  readonly shown: ReadonlyArray<ShownAnswer>
  readonly voteReasons: ReadonlyArray<string>
  readonly isTie: boolean
  readonly strategy: FinalAnswerStrategy
  /** False when the run held no vote (`skip_voting`, quick synthesize): the presenter is the first agent in config order. */
  readonly voteHeld?: boolean
  /** Sections that close the system message (memory: `domain/skills/sections.ts`); empty ones are left out. */
  readonly sections?: ReadonlyArray<string>
}): LlmRequest => {
  const votes =
    input.voteHeld === false
      ? "No vote was held: every agent answered once, and you present as the first agent in config order."
      : `You received ${input.voteReasons.length} vote(s)${input.voteReasons.length > 0 ? ` with feedback: ${input.voteReasons.join("; ")}` : ""}${input.isTie ? " (tie broken by config order)" : ""}.`
  const answers = input.answers.map((a) => `${a.agentId}${a.own ? " (YOUR ANSWER)" : ""}: ${JSON.stringify(a.content)}`).join("\n")
  const conversation = input.conversation ?? NO_CONVERSATION
  const user = [
    originalMessage(input.question, conversation),
    `VOTING RESULTS:\n${votes}`,
    `All answers provided during coordination:\n${answers}`,
    strategySentence[input.strategy],
    "Reply with the final answer itself, addressed to the user, with nothing before or after it.",
  ].join("\n\n")
  return {
    agentId: input.agentId,
    system: withConversationNote(
      withSections(
        withAgentMessage("You were selected by the other agents to present the final answer.", input.systemMessage),
        input.sections ?? [],
      ),
      conversation,
    ),
    messages: [{ role: "user", content: user }],
    tools: [],
    context: { kind: "presentation", selfAnonId: input.selfAnonId, shown: input.shown },
  }
}

/** The request as plain text, for `final/<winner>/context.txt` and the call log; `show` is how each message's text is shown. */
export const requestText = (request: LlmRequest, show: (text: string) => string = (text) => text): string =>
  [
    `[system]\n${show(request.system)}`,
    ...request.messages.map((m) => `[${m.role}]\n${show(m.content)}`),
    request.tools.length > 0 ? `[tools]\n${request.tools.map((t) => t.name).join(", ")}` : "",
  ]
    .filter((s) => s !== "")
    .join("\n\n")
