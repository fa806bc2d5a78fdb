// What the JS client check scripts share (check.mjs, thread_stream.mjs): the failure they
// stop at, the check that raises it, how they show values, and the hang guard.

/** A hang guard for the checks that wait for the server, not a timing claim. */
export const DEADLINE_MS = 60_000;

/** A check saw something other than what the API promises. */
export class CheckFailed extends Error {}

export function expect(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

export const show = (value) => JSON.stringify(value);
