/**
 * Cutting text for previews without breaking a character.
 *
 * JavaScript strings count UTF-16 units: cutting between the two halves of a
 * surrogate pair (an emoji, say) leaves a lone half, which JSON readers such as
 * jq refuse. `truncate` cuts at most `max` units and never inside a pair.
 */

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff

export const truncate = (text: string, max: number): string => {
  if (text.length <= max) return text
  return isHighSurrogate(text.charCodeAt(max - 1)) ? text.slice(0, max - 1) : text.slice(0, max)
}
