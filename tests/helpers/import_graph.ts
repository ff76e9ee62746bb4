/**
 * The repository's import graph as `deno info` sees it, and the circles in a graph: shared by
 * tests/import_graph_test.ts (files) and tests/package_layers_test.ts (packages).
 *
 * @module
 */
import assert from "node:assert/strict";

/** The repository's root. */
export const ROOT = new URL("../..", import.meta.url);
/** The folders whose files are walked, each file an entry of the graph. */
export const FOLDERS = ["src", "tests", "testing", "scripts"];

/** A module of `deno info --json`. */
export interface ModuleInfo {
  specifier: string;
  dependencies?: { code?: { specifier?: string }; type?: { specifier?: string } }[];
}

/**
 * The folders deno.json excludes: a tool with a config and lock of its own
 * (scripts/gen/openapi/), outside the project's graph.
 */
const EXCLUDED: string[] = (JSON.parse(
  Deno.readTextFileSync(new URL("deno.json", ROOT)),
) as { exclude?: string[] }).exclude?.map((path) => new URL(path, ROOT).href) ?? [];

/** Every .ts and .tsx file under `folder`, as file URLs, but in folders deno.json excludes. */
export async function filesUnder(folder: URL): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(folder)) {
    const url = new URL(`${entry.name}${entry.isDirectory ? "/" : ""}`, folder);
    if (EXCLUDED.includes(url.href)) continue;
    if (entry.isDirectory) found.push(...await filesUnder(url));
    else if (/\.tsx?$/.test(entry.name)) found.push(url.href);
  }
  return found;
}

/** `deno info --json` of a module importing every one of `entries`, run at the repository root. */
export async function moduleGraph(entries: string[]): Promise<ModuleInfo[]> {
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
export function repositoryEdges(modules: ModuleInfo[]): Map<string, string[]> {
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
export function cycles(edges: Map<string, string[]>): string[][] {
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
