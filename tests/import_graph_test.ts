/**
 * The module graph of src/ has no cycles: a lower layer that imports a composition root (or a
 * module that imports it back) shows up here, as `deno info` sees the graph.
 */
import assert from "node:assert/strict";

interface ModuleInfo {
  specifier: string;
  dependencies?: { code?: { specifier?: string }; type?: { specifier?: string } }[];
}

/** The edges among src/ modules reachable from `entry`. */
async function sourceGraph(entry: string): Promise<Map<string, string[]>> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  const { modules } = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    modules: ModuleInfo[];
  };
  const inSource = (specifier = "") => specifier.startsWith("file:") && specifier.includes("/src/");
  const edges = new Map<string, string[]>();
  for (const module of modules.filter((m) => inSource(m.specifier))) {
    const targets = (module.dependencies ?? []).flatMap((d) =>
      [d.code?.specifier, d.type?.specifier].filter(inSource) as string[]
    );
    edges.set(module.specifier, targets);
  }
  return edges;
}

/** Every cycle found by a depth-first walk, as lists of paths below src/. */
function cycles(edges: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const done = new Set<string>();
  const stack: string[] = [];
  const visit = (node: string) => {
    const at = stack.indexOf(node);
    if (at !== -1) return void found.push([...stack.slice(at), node]);
    if (done.has(node)) return;
    stack.push(node);
    for (const next of edges.get(node) ?? []) visit(next);
    stack.pop();
    done.add(node);
  };
  for (const node of edges.keys()) visit(node);
  return found.map((cycle) => cycle.map((s) => s.slice(s.indexOf("/src/") + 5)));
}

Deno.test("src/ has no import cycles (node, hub, CLI and the single executable)", async () => {
  for (const entry of ["src/main.ts", "src/executable.ts"]) {
    const graph = await sourceGraph(entry);
    assert.ok(graph.size > 50, `${entry}: ${graph.size} modules`);
    assert.deepEqual(cycles(graph).map((cycle) => cycle.join(" -> ")), [], entry);
  }
});
