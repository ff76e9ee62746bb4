/**
 * The packages of src/ stand in layers. A package is a folder right below src/ (its subfolders
 * belong to it); src/main.ts and src/executable.ts are the root. Three rules, checked on the
 * graph `deno info` sees from both entry points (as tests/import_graph_test.ts does for files):
 *
 * 1. A package imports only the packages that ALLOWED lists for it, and ALLOWED lists only
 *    packages lower in LAYERS, so no two packages import each other, directly or round a circle
 *    (Deno std's `_tools/check_circular_package_dependencies.ts` keeps such a table).
 * 2. Every package has a `mod.ts` whose module comment says what the package is for.
 * 3. Another package reaches a package only through its face: the files its `mod.ts` re-exports
 *    (`export * from "./x.ts"` or `export { … } from "./x.ts"`). A new import of another file
 *    fails here, naming what to add to the face (or which import to change).
 *
 * Moving a package or adding one is a change to this table, made on purpose.
 */
import assert from "node:assert/strict";
import { cycles, moduleGraph, repositoryEdges } from "./helpers/import_graph.ts";

/** The packages, lowest first: a package may import only packages before it. */
const LAYERS = [
  "errors",
  "async",
  "config",
  "crypto",
  "storage",
  "streams",
  "tunnel",
  "http",
  "identity",
  "discovery",
  "hub_client",
  "store",
  "inference",
  "model_mesh",
  "mds",
  "insight",
  "program",
  "mcm",
  "jsonrpc",
  "dashboard",
  "sdk",
  "cli",
  "hub",
  "node",
  "(root)",
] as const;

type Package = typeof LAYERS[number];

/** The composition root's own package: the files right in src/. */
const ROOT: Package = "(root)";

/** What each package may import. */
const ALLOWED: Record<Package, readonly Package[]> = {
  errors: [],
  async: [],
  config: [],
  crypto: [],
  storage: ["config"],
  streams: ["errors", "async"],
  tunnel: ["errors", "streams"],
  http: ["errors", "config", "streams"],
  identity: ["errors", "config"],
  discovery: ["errors", "config", "streams", "http", "identity"],
  hub_client: ["errors", "async", "streams", "tunnel", "http", "identity"],
  store: ["errors", "async", "storage", "streams", "http", "identity"],
  inference: ["errors", "async", "storage", "streams", "tunnel", "http", "identity", "store"],
  model_mesh: [
    "errors",
    "async",
    "streams",
    "http",
    "identity",
    "discovery",
    "hub_client",
    "store",
    "inference",
  ],
  mds: ["errors", "crypto", "http", "identity", "discovery", "hub_client"],
  insight: ["errors", "http", "identity", "discovery", "hub_client", "mds"],
  program: ["errors", "config"],
  mcm: [
    "errors",
    "async",
    "crypto",
    "storage",
    "streams",
    "tunnel",
    "http",
    "identity",
    "discovery",
    "hub_client",
    "store",
    "inference",
    "mds",
    "program",
  ],
  jsonrpc: ["errors", "streams", "http", "identity"],
  dashboard: ["errors", "http", "identity", "store", "inference", "mcm"],
  // A client library: nothing of the node's services, only what the wire format needs.
  sdk: ["crypto"],
  cli: ["config", "identity", "program", "sdk"],
  hub: ["errors", "config", "storage", "streams", "tunnel", "http", "identity", "program"],
  node: [
    "errors",
    "async",
    "config",
    "crypto",
    "storage",
    "streams",
    "tunnel",
    "http",
    "identity",
    "discovery",
    "hub_client",
    "store",
    "inference",
    "model_mesh",
    "mds",
    "insight",
    "program",
    "mcm",
    "jsonrpc",
    "dashboard",
  ],
  "(root)": ["config", "program", "mcm", "cli", "hub", "node"],
};

/**
 * Edges against the table that other work in progress removes (issue 35): allowed here, and
 * out of the cycle and face checks, until they are gone; the test fails when one is gone, so
 * that its line is deleted.
 */
const PENDING: readonly { from: Package; to: Package; why: string }[] = [];

/** One import between src/ files, as paths below src/. */
interface Edge {
  from: string;
  to: string;
}

const SRC = new URL("../src/", import.meta.url);

/** The path below src/ of a file: URL in src/, else undefined. */
function belowSrc(specifier = ""): string | undefined {
  return specifier.startsWith(SRC.href) ? specifier.slice(SRC.href.length) : undefined;
}

/** The package of a path below src/. */
function packageOf(path: string): string {
  return path.includes("/") ? path.slice(0, path.indexOf("/")) : ROOT;
}

/** Every import between two src/ files reachable from the entry points, each once. */
async function sourceEdges(entries: string[]): Promise<Edge[]> {
  const files = repositoryEdges(await moduleGraph(entries.map((e) => new URL(e, SRC).href)));
  return [...files].filter(([from]) => from.startsWith("src/")).flatMap(([from, targets]) =>
    targets.filter((to) => to.startsWith("src/")).map((to) => ({
      from: from.slice(4),
      to: to.slice(4),
    }))
  );
}

/** The imports from one package into another, grouped by the pair of packages `a -> b`. */
function packageEdges(edges: Edge[]): Map<string, Edge[]> {
  const pairs = new Map<string, Edge[]>();
  for (const edge of edges) {
    const [from, to] = [packageOf(edge.from), packageOf(edge.to)];
    if (from === to) continue;
    const key = `${from} -> ${to}`;
    pairs.set(key, [...pairs.get(key) ?? [], edge]);
  }
  return pairs;
}

const isPending = (pair: string) => PENDING.some(({ from, to }) => `${from} -> ${to}` === pair);

/** The files a package's mod.ts re-exports, as paths below src/; undefined without a mod.ts. */
async function faceOf(pkg: string): Promise<Set<string> | undefined> {
  const mod = new URL(`${pkg}/mod.ts`, SRC);
  const text = await Deno.readTextFile(mod).catch(() => undefined);
  if (text === undefined) return undefined;
  const reExport =
    /export\s+(?:type\s+)?(?:\*(?:\s+as\s+\w+)?|\{[^}]*\})\s+from\s+["']([^"']+)["']/g;
  const files = new Set([`${pkg}/mod.ts`]);
  for (const [, specifier] of text.matchAll(reExport)) {
    const path = belowSrc(new URL(specifier, mod).href);
    if (path !== undefined) files.add(path);
  }
  return files;
}

/** The package folders in src/. */
async function packageFolders(): Promise<string[]> {
  const folders: string[] = [];
  for await (const entry of Deno.readDir(SRC)) if (entry.isDirectory) folders.push(entry.name);
  return folders.sort();
}

/** Every circle among the packages, as lists of packages (first = last). */
function packageCycles(pairs: Iterable<string>): string[][] {
  const next = new Map<string, string[]>();
  for (const pair of pairs) {
    const [from, to] = pair.split(" -> ");
    next.set(from, [...next.get(from) ?? [], to]);
  }
  return cycles(next);
}

/** `a -> b: file -> file, …` for the report of an edge. */
function showPair(pair: string, edges: Edge[]): string {
  return `${pair}: ${edges.map(({ from, to }) => `${from} -> ${to}`).join(", ")}`;
}

let graph: Promise<Edge[]> | undefined;
/** The imports among src/ files of the node, hub, CLI and the single executable (read once). */
const sourceGraph = () =>
  graph ??= sourceEdges([
    "main.ts",
    "executable.ts",
    // The container process and the sandbox worker are bundled apart from the node: held to the
    // layers too.
    "mcm/sandbox/host/container_host_main.ts",
    "mcm/sandbox/worker/sandbox_worker_main.ts",
  ]);

Deno.test("the table of packages is layered: each allows only packages below it", () => {
  const wrong = LAYERS.flatMap((pkg, rank) =>
    ALLOWED[pkg].filter((to) => LAYERS.indexOf(to) >= rank).map((to) => `${pkg} -> ${to}`)
  );
  assert.deepEqual(wrong, [], "an allowed import that is not below its importer");
  for (const { from, to } of PENDING) assert.ok(!ALLOWED[from].includes(to), `${from} -> ${to}`);
});

Deno.test("every package of src/ is in the table and has a mod.ts that says what it is for", async () => {
  const folders = await packageFolders();
  assert.deepEqual(
    folders.filter((f) => !(LAYERS as readonly string[]).includes(f)),
    [],
    "not in LAYERS",
  );
  const missing: string[] = [];
  for (const folder of folders) {
    const text = await Deno.readTextFile(new URL(`${folder}/mod.ts`, SRC)).catch(() => "");
    if (!/^\/\*\*[\s\S]*?@module[\s\S]*?\*\//.test(text)) missing.push(`src/${folder}/mod.ts`);
  }
  assert.deepEqual(missing, [], "missing, or without a module comment (/** … @module */)");
});

Deno.test("each package imports only what the table allows, and no packages import in a circle", async () => {
  const pairs = packageEdges(await sourceGraph());
  assert.ok(pairs.size > 20, `${pairs.size} package edges`);
  const kept = [...pairs.keys()].filter((pair) => !isPending(pair));
  const circles = packageCycles(kept).map((circle) =>
    circle.slice(1).map((_, i) => `${circle[i]} -> ${circle[i + 1]}`)
      .map((pair) => showPair(pair, pairs.get(pair)!)).join("; ")
  );
  assert.deepEqual(circles, [], "packages that import each other");
  const refused = [...pairs].filter(([pair]) => !isPending(pair)).filter(([pair]) => {
    const [from, to] = pair.split(" -> ") as [Package, Package];
    return !ALLOWED[from]?.includes(to);
  });
  assert.deepEqual(refused.map(([pair, edges]) => showPair(pair, edges)), [], "not in ALLOWED");
  const gone = PENDING.map(({ from, to }) => `${from} -> ${to}`).filter((pair) => !pairs.has(pair));
  assert.deepEqual(gone, [], "gone: delete these lines from PENDING");
});

Deno.test("another package imports only files that a package's mod.ts re-exports", async () => {
  const pairs = packageEdges(await sourceGraph());
  const outside = new Map<string, Set<string>>(); // a file imported from outside -> by whom
  for (const [pair, edges] of pairs) {
    if (isPending(pair)) continue;
    for (const { from, to } of edges) outside.set(to, (outside.get(to) ?? new Set()).add(from));
  }
  const missing: string[] = [];
  const byPackage = Map.groupBy(outside.keys(), packageOf);
  for (const [pkg, files] of byPackage) {
    const face = await faceOf(pkg);
    for (const file of files.sort()) {
      if (face?.has(file)) continue;
      const importers = [...outside.get(file)!].sort().join(", ");
      missing.push(
        `src/${pkg}/mod.ts: export * from "./${file.slice(pkg.length + 1)}"; (${importers})`,
      );
    }
  }
  assert.deepEqual(
    missing,
    [],
    "files imported past their package's face: re-export them, or import another",
  );
});
