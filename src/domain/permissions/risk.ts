/**
 * Risk tiers: how much harm a tool call can do, for the calls no rule decides (MassGen's risk classifier).
 *
 * `riskOf(action, targets, reading)`: a command is `high` when one of its
 * simple commands escalates privileges, rewrites history or publishes
 * (`sudo`, `git push --force`, `npm publish`, ...), changes ownership or
 * modes, writes disks, deletes recursively, kills or stops processes or the
 * machine, schedules jobs, or reaches the network (`curl`, `ssh`, ...);
 * `low` when every one of them only reads (`ls`, `cat`, `git status`, ...)
 * and none is computed; else `medium`. A fetch (`read_url`) is `high`; a
 * delete `medium`; a read or a write of a file `low` (the workspace
 * confinement holds the rest); any other tool `medium`. Pure.
 */

import { type CommandReading, forms, isOpaque, namedForm } from "./command-text.ts"
import type { Action } from "./rules.ts"

export const RISK_TIERS = ["low", "medium", "high"] as const
export type RiskTier = (typeof RISK_TIERS)[number]

const HIGH: ReadonlyArray<RegExp> = [
  /^(sudo|su|doas)\b/,
  /^git\s+push\b.*(--force|\s-f\b)|--force-with-lease/,
  /^git\s+(reset\s+--hard|clean\s+-[a-z]*f)/,
  /^(npm|yarn|pnpm)\s+publish\b|^twine\s+upload\b|^pip\S*\s.*\bupload\b|^gh\s+release\s+create\b|^docker\s+push\b/,
  /^(chmod|chown|chgrp)\b/,
  /^(dd|fdisk|parted|mkfs\S*)\b/,
  /^rm\s+(.*\s)?(-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)(\s|$)/,
  /^(kill|killall|pkill|shutdown|reboot|halt|poweroff)\b/,
  /^(crontab|systemctl|launchctl|service)\b/,
  /^(curl|wget|nc|ncat|netcat|ssh|scp|sftp|rsync|telnet|ftp)\b/,
]
const LOW =
  /^(git\s+(status|diff|log|show|branch|remote|config\s+--get)|ls|ll|cat|head|tail|pwd|echo|printf|which|whoami|date|env|wc|grep|find|tree|stat|file|true)(\s|$)/

const commandRisk = (reading: CommandReading, raw: string): RiskTier => {
  const texts = [raw.trim(), ...reading.commands.flatMap(forms)]
  if (texts.some((t) => HIGH.some((re) => re.test(t)))) return "high"
  const named = reading.commands.map(namedForm)
  if (!isOpaque(reading) && named.length > 0 && named.every((t) => LOW.test(t))) return "low"
  return "medium"
}

export const riskOf = (action: Action, tool: string, raw: string, reading: CommandReading | null): RiskTier => {
  if (action === "command") return reading === null ? "medium" : commandRisk(reading, raw)
  if (action === "read_url") return "high"
  const name = tool.toLowerCase()
  if (name.includes("delete") || name.includes("remove")) return "medium"
  if (action === "read_file" || action === "write_file") return "low"
  return "medium"
}

/** The higher of two tiers. */
export const higher = (a: RiskTier, b: RiskTier): RiskTier => (RISK_TIERS.indexOf(a) >= RISK_TIERS.indexOf(b) ? a : b)
