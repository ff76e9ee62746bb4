/**
 * The repository's module graph, as `deno info` sees it, has no circle of imports between files
 * anywhere (src/, its unit tests, tests/, testing/, scripts/), and its top folders import each
 * other in one direction only:
 * - src/ (its modules, not its unit tests) imports none of tests/, testing/ and scripts/;
 * - testing/, the fixtures that unit tests, benchmarks and tests/ share, imports src/, gen/ and
 *   npm only: never tests/ or scripts/;
 * - only tests/ imports tests/, and only scripts/ imports scripts/.
 *
 * One `deno info` of a module that imports every TypeScript file of those folders walks the
 * whole graph in one process (a `deno info` per file takes minutes on a loaded machine).
 */
import assert from "node:assert/strict";

import {
  cycles,
  filesUnder,
  FOLDERS,
  moduleGraph,
  repositoryEdges,
  ROOT,
} from "./helpers/import_graph.ts";

/** The edges from files `from` selects to files `to` selects, as "a -> b". */
function importsBetween(
  edges: Map<string, string[]>,
  from: (path: string) => boolean,
  to: (path: string) => boolean,
): string[] {
  return [...edges].filter(([path]) => from(path)).flatMap(([path, targets]) =>
    targets.filter(to).map((target) => `${path} -> ${target}`)
  );
}

const under = (folder: string) => (path: string) => path.startsWith(`${folder}/`);
const isUnitTest = (path: string) => /_test\.tsx?$/.test(path);

let walked: Promise<{ entries: string[]; edges: Map<string, string[]> }> | undefined;

/** The graph of every file of the walked folders, read once for all the tests below. */
function graph() {
  return walked ??= (async () => {
    const entries: string[] = [];
    for (const folder of FOLDERS) {
      const url = new URL(`${folder}/`, ROOT);
      if (await Deno.stat(url).then(() => true, () => false)) {
        entries.push(...await filesUnder(url));
      }
    }
    return { entries, edges: repositoryEdges(await moduleGraph(entries)) };
  })();
}

Deno.test("the graph holds every file of src/, tests/, testing/ and scripts/", async () => {
  const { entries, edges } = await graph();
  const missing = entries.map((entry) => entry.slice(ROOT.href.length))
    .filter((path) => !edges.has(path));
  assert.deepEqual(missing, []);
  // The edges were read too: each root reaches much of the tree.
  for (const entry of ["src/main.ts", "src/executable.ts", "scripts/bench/bench.ts"]) {
    const reached = new Set([entry]);
    for (const path of reached) for (const next of edges.get(path) ?? []) reached.add(next);
    assert.ok(reached.size > 50, `${entry} reaches ${reached.size} files: the walk is wrong`);
  }
});

Deno.test("no circle of imports between files anywhere in the repository", async () => {
  const { edges } = await graph();
  assert.deepEqual(cycles(edges).map((cycle) => cycle.join(" -> ")), []);
});

Deno.test("src/ imports none of tests/, testing/ and scripts/ (its unit tests: testing/)", async () => {
  const { edges } = await graph();
  const outside = (path: string) => ["tests", "testing", "scripts"].some((f) => under(f)(path));
  assert.deepEqual(
    importsBetween(edges, (path) => under("src")(path) && !isUnitTest(path), outside),
    [],
  );
  assert.deepEqual(
    importsBetween(edges, (path) => under("src")(path) && isUnitTest(path), under("tests")),
    [],
  );
});

Deno.test("testing/ imports src/, gen/ and npm only; only tests/ imports tests/, scripts/ scripts/", async () => {
  const { edges } = await graph();
  const within = (folders: string[]) => (path: string) => folders.some((f) => under(f)(path));
  assert.deepEqual(
    importsBetween(edges, under("testing"), (p) => !within(["src", "gen", "testing"])(p)),
    [],
  );
  assert.deepEqual(importsBetween(edges, (p) => !under("tests")(p), under("tests")), []);
  assert.deepEqual(importsBetween(edges, (p) => !under("scripts")(p), under("scripts")), []);
});

Deno.test("cycles: names each circle once, with its files in import order", () => {
  const edges = new Map([
    ["a.ts", ["b.ts"]],
    ["b.ts", ["c.ts", "d.ts"]],
    ["c.ts", ["a.ts"]],
    ["d.ts", ["d.ts"]],
    ["e.ts", ["a.ts"]],
  ]);
  assert.deepEqual(cycles(edges), [["d.ts", "d.ts"], ["a.ts", "b.ts", "c.ts", "a.ts"]]);
  assert.deepEqual(cycles(new Map([["a.ts", ["b.ts"]], ["b.ts", []]])), []);
});
