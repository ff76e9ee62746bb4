import assert from "node:assert/strict";
import { BENCH_PAGE, benchTable, replaceBenchTable, TABLE_BEGIN, TABLE_END } from "./readme.ts";

const run = {
  date: "2026-11-25",
  cpu: "Some CPU",
  cores: 2,
  memoryGib: 24,
  deno: "2.9.6",
  command: "deno task bench --readme",
};

Deno.test("bench --readme: the table between the markers is replaced, the rest kept", () => {
  const readme = `# x\n\nbefore\n\n${TABLE_BEGIN}\n\nold | table\n\n${TABLE_END}\n\nafter\n`;
  const block = benchTable([["upload", "500 MB/s", "dd: 600 MB/s"], ["a | b", "1", "2"]], run);
  const written = replaceBenchTable(readme, block);
  assert.ok(written.startsWith("# x\n\nbefore\n\n"));
  assert.ok(written.endsWith(`${TABLE_END}\n\nafter\n`));
  assert.ok(!written.includes("old | table"));
  assert.match(written, /Latest run: 2026-11-25, Some CPU, 2 cores, 24 GiB of RAM, Deno 2\.9\.6/);
  assert.match(written, /^\| upload \| 500 MB\/s \| dd: 600 MB\/s \|$/m);
  assert.match(written, /^\| a \\\| b \| 1 \| 2 \|$/m);
  // Written twice, the same.
  assert.equal(replaceBenchTable(written, block), written);
});

Deno.test("bench --readme: a page without the markers is refused, not appended to", () => {
  assert.throws(
    () => replaceBenchTable("# x\n", "t"),
    /docs\/benchmarks\.md has no <!-- bench-table:begin/,
  );
});

Deno.test("bench --readme: the project's benchmarks page has the markers, the README none", async () => {
  const page = await Deno.readTextFile(new URL(`../../${BENCH_PAGE}`, import.meta.url));
  assert.ok(page.indexOf(TABLE_BEGIN) >= 0 && page.indexOf(TABLE_END) > page.indexOf(TABLE_BEGIN));
  const readme = await Deno.readTextFile(new URL("../../README.md", import.meta.url));
  assert.ok(!readme.includes(TABLE_BEGIN), "the table moved to docs/benchmarks.md");
});
