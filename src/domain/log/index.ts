/**
 * The wire format of `events.jsonl`: one event in its envelope as one line, and lines back as events.
 *
 * Contract: `encodeEnvelopeLine(event, meta)` gives one JSON object, with no
 * newline, whose keys come in this order: `schema` (`SCHEMA_VERSION`), `type`
 * (the event's `_tag`), `time`, the event's other fields, then `meta` (the
 * writing process's machine facts, `EventMeta`) when given. That object is the
 * event's *envelope*; `encodeEventLine(event)` is the one with no `meta`. The event store (`services/event-store/index.ts`) writes it
 * and a newline; every reader of a run's log goes through the store, which
 * decodes with `decodeEventLine`/`decodeLines`. None of these functions throws,
 * whatever the text.
 *
 * A line of this schema is decoded as it is. A line of an older schema is
 * first *upcast*: lifted one version at a time by `UPCASTERS` to this one (v1
 * to v2: run_started's and run_resumed's `log_dir`, `pid` and `version` move
 * into `meta`), then decoded by the current definitions, which are strict: a
 * time is an ISO instant, a counter a whole number of 0 or more. Fields this
 * version does not know are ignored. Any other line is *skipped*, for one
 * cause, checked in this order:
 * - `blank`: nothing but whitespace. Not damage: it is neither read nor counted;
 * - `duplicate`: the same text as an earlier line of the stream that was read
 *   as an event (a line written twice);
 * - `not_json`: not JSON, such as a line a crash cut short; the stream's last
 *   line, with no newline after it, is the `torn_tail` instead (its write did
 *   not finish);
 * - `not_an_object`: JSON, but not an object (an array, a string, null, ...);
 * - `newer_schema`: written by a newer version (`schema` > `SCHEMA_VERSION`);
 * - `unknown_type`: `type` names no event type of this version (or is missing);
 * - `invalid_fields`: `schema` is not a version (a whole number from 1), or the
 *   event's fields or its `meta` do not decode (nested too deep to decode too);
 * - `out_of_order`: an event whose `time` is earlier than the time of the event
 *   read before it (writers append in time order: the line is not where it was
 *   written).
 * `decodeEventLine` judges one line alone (the first five); `duplicate` and
 * `out_of_order` need what was read before: a `LineMemory`, which
 * `decodeLines` and `decodeTail` take and `admitLine` keeps up to date for
 * lines a writer appends without reading them back.
 *
 * A number JSON cannot hold (NaN, ±Infinity) is written as `null`, as
 * `JSON.stringify` does: it reads back as `null` where the field allows it, and
 * the line is skipped as `invalid_fields` where it does not.
 *
 * Words: a *torn tail* is a last line with no newline after it: the write of
 * that line did not finish. An event's *position* is its place among the
 * decoded events of its stream, from 0; the stream's *version* is how many it
 * holds.
 *
 * The parts: the decoders (`decoders.ts`), one line (`line.ts`),
 * a stream of lines and its memory (`stream.ts`), the long texts a line references (`long-texts.ts`).
 */

export { isEvent, isEventMeta } from "./decoders.ts"
export {
  addSkips,
  type BlobTexts,
  COUNTED_SKIP_CAUSES,
  type CountedSkipCause,
  type DecodedLine,
  decodeEventLine,
  decodeEventLineBySchema,
  encodeEnvelopeLine,
  encodeEventLine,
  noSkips,
  SkipCause,
  UPCASTERS,
} from "./line.ts"
export * from "./long-texts.ts"
export * from "./skip-report.ts"
export * from "./stream.ts"
