/** Did you mean: the closest known word (`domain/did-you-mean.ts`), for flags and commands. */
export { closest, editDistance } from "../domain/did-you-mean.ts"
