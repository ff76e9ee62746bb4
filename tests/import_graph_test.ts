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

const ROOT = new URL("..", import.meta.url);
/** The folders whose files are walked, each file an entry of the graph. */
const FOLDERS = ["src", "tests", "testing", "scripts"];

interface ModuleInfo {
  specifier: string;
  dependencies?: { code?: { specifier?: string }; type?: { specifier?: string } }[];
}

/** Every .ts and .tsx file under `folder`, as file URLs. */
async function filesUnder(folder: URL): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(folder)) {
    const url = new URL(`${entry.name}${entry.isDirectory ? "/" : ""}`, folder);
    if (entry.isDirectory) found.push(...await filesUnder(url));
    else if (/\.tsx?$/.test(entry.name)) found.push(url.href);
  }
  return found;
}

/** `deno info --json` of a module importing every one of `entries`, run at the repository root. */
async function moduleGraph(entries: string[]): Promise<ModuleInfo[]> {
  const source = entries.map((entry) => `import ${JSON.stringify(entry)};`).join("\n");
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", `data:application/typescript;base64,${btoa(source)}`],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  return (JSON.parse(new TextDecoder().decode(output.stdout)) as { modules: ModuleInfo[] })
    .modules;
}

/** The import edges among the repository's files, by path from its root. */
function repositoryEdges(modules: ModuleInfo[]): Map<string, string[]> {
  const local = (specifier = "") =>
    specifier.startsWith(ROOT.href) && !specifier.startsWith(`${ROOT.href}node_modules/`);
  const path = (specifier: string) => specifier.slice(ROOT.href.length);
  const edges = new Map<string, string[]>();
  for (const module of modules.filter((m) => local(m.specifier))) {
    const targets = (module.dependencies ?? []).flatMap((d) =>
      [d.code?.specifier, d.type?.specifier].filter(local) as string[]
    );
    edges.set(path(module.specifier), [...new Set(targets.map(path))]);
  }
  return edges;
}

/** One circle through each strongly connected group of files (Tarjan), as paths. */
function cycles(edges: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const connect = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== node);
    if (group.length > 1 || (edges.get(node) ?? []).includes(node)) groups.push(group);
  };
  for (const node of edges.keys()) if (!index.has(node)) connect(node);
  return groups.map((group) => circleWithin(edges, new Set(group)));
}

/** A shortest circle from the group's first member back to it, staying inside the group. */
function circleWithin(edges: Map<string, string[]>, group: Set<string>): string[] {
  const start = [...group].sort()[0];
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let at = 0; at < queue.length; at++) {
    for (const next of edges.get(queue[at]) ?? []) {
      if (!group.has(next)) continue;
      if (next === start) {
        const circle = [start];
        for (let node = queue[at]; node !== start; node = cameFrom.get(node)!) {
          circle.splice(1, 0, node);
        }
        return [...circle, start];
      }
      if (!cameFrom.has(next)) {
        cameFrom.set(next, queue[at]);
        queue.push(next);
      }
    }
  }
  return [...group];
}

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
