/**
 * Reading an instant of the log (`domain/events/index.ts`'s `Time`: `YYYY-MM-DDTHH:MM:SS(.fff)Z`) without `Date.parse`,
 * which costs more than decoding the rest of a line.
 *
 * Contract: `instantMs(text)` is exactly `Date.parse(text)` for every string: the milliseconds since the
 * epoch, or NaN. The common shapes, `YYYY-MM-DDTHH:MM:SS.fffZ` and `YYYY-MM-DDTHH:MM:SSZ` with a day that
 * the month has, an hour below 24, a minute and a second below 60, are computed here (proleptic Gregorian,
 * as `Date.parse` reads ISO); any other string is left to `Date.parse`. Pure as seen from outside: it
 * remembers the last text and the second of the last such instant, which the next ones of that second share.
 * `instantText(ms)` is the other way: the text an event holds for an instant.
 */

const ZERO = 48

/** The number written by the `count` ASCII digits of `text` from `at`, or -1 when one is not a digit. */
const digits = (text: string, at: number, count: number): number => {
  let n = 0
  for (let i = at; i < at + count; i++) {
    const d = text.charCodeAt(i) - ZERO
    if (d < 0 || d > 9) return -1
    n = n * 10 + d
  }
  return n
}

const isLeap = (year: number): boolean => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/** Days from 1970-01-01 to the given date (month 1-12), proleptic Gregorian, for years 0 to 9999. */
const daysFromCivil = (year: number, month: number, day: number): number => {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yearOfEra = y - era * 400
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear
  return era * 146097 + dayOfEra - 719468
}

/** `text`'s instant in the common shapes, or NaN when it is not in one (it may still be an instant). */
const common = (text: string): number => {
  const length = text.length
  if (length !== 24 && length !== 20) return Number.NaN
  if (
    text.charCodeAt(4) !== 45 ||
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(10) !== 84 ||
    text.charCodeAt(13) !== 58 ||
    text.charCodeAt(16) !== 58
  )
    return Number.NaN
  if (text.charCodeAt(length - 1) !== 90 || (length === 24 && text.charCodeAt(19) !== 46)) return Number.NaN
  const year = digits(text, 0, 4)
  const month = digits(text, 5, 2)
  const day = digits(text, 8, 2)
  const hour = digits(text, 11, 2)
  const minute = digits(text, 14, 2)
  const second = digits(text, 17, 2)
  const ms = length === 24 ? digits(text, 20, 3) : 0
  if (
    year < 0 ||
    month < 1 ||
    month > 12 ||
    day < 1 ||
    hour < 0 ||
    hour > 23 ||
    minute < 0 ||
    minute > 59 ||
    second < 0 ||
    second > 59 ||
    ms < 0
  )
    return Number.NaN
  if (day > (month === 2 && isLeap(year) ? 29 : DAYS_IN_MONTH[month - 1]!)) return Number.NaN
  return daysFromCivil(year, month, day) * 86_400_000 + hour * 3_600_000 + minute * 60_000 + second * 1000 + ms
}

/** The last text read and its instant; the second (`YYYY-MM-DDTHH:MM:SS`) of the last instant read in the common shape, and its milliseconds. */
let lastText = ""
let lastMs = Number.NaN
let lastSecond = ""
let lastSecondMs = 0

/** The instant of `text`, a second's later instants costing a prefix compare and three digits. */
const read = (text: string): number => {
  const length = text.length
  if (length === 24 && lastSecond !== "" && text.charCodeAt(19) === 46 && text.charCodeAt(23) === 90 && text.startsWith(lastSecond)) {
    const ms = digits(text, 20, 3)
    if (ms >= 0) return lastSecondMs + ms
  }
  const ms = common(text)
  if (Number.isNaN(ms)) return Date.parse(text)
  if (length === 24) {
    lastSecond = text.slice(0, 19)
    lastSecondMs = ms - digits(text, 20, 3)
  }
  return ms
}

/** `Date.parse(text)`, quicker on the instants a log holds, which come in order and repeat. */
export const instantMs = (text: string): number => {
  if (text === lastText) return lastMs
  lastMs = read(text)
  lastText = text
  return lastMs
}

/** The text of the instant `ms` as an event holds it (`Date#toISOString`: `YYYY-MM-DDTHH:MM:SS.fffZ`). */
export const instantText = (ms: number): string => new Date(ms).toISOString()
