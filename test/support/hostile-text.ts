/**
 * Hostile text for the plain-text tests: the escape sequences of the security
 * probe's M1 (OSC 52 clipboard write, OSC 0 window title, clear and home,
 * 8-bit CSI, DCS, OSC 8 hidden link), as a model would send them, and the
 * bidirectional controls that reorder what a terminal shows (RLO, RLI, PDI,
 * RLM, ALM).
 */
export const HOSTILE =
  "\x1b]52;c;cHduZWQ=\x07\x1b]0;PWNED-TITLE\x07\x1b[2J\x1b[H\u009b2J\x1bP+q\x1b\\\u202e\u2067\u2069\u200f\u061c\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"

/** The keys of the automation guide's lines, and the in-progress line: what every `--automation` line must be. */
export const CONTRACT_LINE =
  /^(LOG_DIR|STATUS|QUESTION|WINNER|ANSWER_FILE|DURATION|ANSWER_PREVIEW|WORKSPACE|CHANGED_FILE|COMPLETED|FAILED): |^\[Coordination in progress - monitor status\.json for real-time updates\]$/
