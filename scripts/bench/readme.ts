/**
 * The benchmark table as docs/benchmarks.md shows it: `deno task bench --readme` writes a full
 * run's table, with the line that says when and where it ran, between that page's markers, so
 * every figure in it comes from one command and one run.
 *
 * @module
 */

/** The page the table is written into, relative to the repository. */
export const BENCH_PAGE = "docs/benchmarks.md";

/** Where the table starts and ends in BENCH_PAGE. */
export const TABLE_BEGIN = "<!-- bench-table:begin (deno task bench --readme) -->";
export const TABLE_END = "<!-- bench-table:end -->";

/** What the run was: its date, machine and command. */
export interface RunInfo {
  date: string;
  cpu: string;
  cores: number;
  memoryGib: number;
  deno: string;
  command: string;
}

/** The block for a run: a line saying where it ran, then the table. */
export function benchTable(rows: string[][], run: RunInfo): string {
  return [
    `Latest run: ${run.date}, ${run.cpu}, ${run.cores} cores, ${run.memoryGib} GiB of RAM, ` +
    `Deno ${run.deno}, \`${run.command}\`:`,
    "",
    "| measurement | edgenode | same-run baseline / notes |",
    "| --- | --- | --- |",
    ...rows.map((row) => `| ${row.map((cell) => cell.replaceAll("|", "\\|")).join(" | ")} |`),
  ].join("\n");
}

/** `page` with the text between the markers replaced by `block`; throws when they are missing. */
export function replaceBenchTable(page: string, block: string): string {
  const begin = page.indexOf(TABLE_BEGIN);
  const end = page.indexOf(TABLE_END);
  if (begin < 0 || end < begin) {
    throw new Error(
      `${BENCH_PAGE} has no ${TABLE_BEGIN} ... ${TABLE_END} markers to write between`,
    );
  }
  return `${page.slice(0, begin + TABLE_BEGIN.length)}\n\n${block}\n\n${page.slice(end)}`;
}
