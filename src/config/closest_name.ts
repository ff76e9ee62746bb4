/**
 * "Did you mean": the known name nearest to a mistyped one, for config fields and commands.
 *
 * @example
 * ```ts
 * import { closestName } from "./closest_name.ts";
 *
 * closestName("prot", ["host", "port"]); // "port"
 * ```
 *
 * @module
 */

/** Edit distance with swaps of neighbours (optimal string alignment), for "did you mean". */
function distance(a: string, b: string): number {
  const d = Array.from(
    { length: a.length + 1 },
    (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(
        d[i - 1][j] + 1,
        d[i][j - 1] + 1,
        d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.length][b.length];
}

/**
 * The candidate nearest to `name` (case aside), if it is near enough to be a typo: at most one
 * edit per three characters, and at least one.
 */
export function closestName(name: string, candidates: readonly string[]): string | undefined {
  const best = candidates
    .map((candidate) => ({ candidate, d: distance(candidate.toLowerCase(), name.toLowerCase()) }))
    .sort((x, y) => x.d - y.d)[0];
  return best && best.d <= Math.max(1, Math.floor(name.length / 3)) ? best.candidate : undefined;
}
