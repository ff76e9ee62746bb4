/**
 * The first start fetches only what the node needs. `deno task start` with a Deno cache that
 * holds nothing but the npm packages of the node's module graph, and no way to reach the
 * registry, starts the node: so the task fetches nothing else (before, `deno task` installed
 * every package of deno.json and the lock first, ~200 MB of test and benchmark tools). And the
 * graph holds none of the development-only packages.
 */
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { startListening, withTempDir } from "../testing/node.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/** Packages only tests, benchmarks and code generation use. */
const DEV_ONLY = [
  "playwright-core",
  "axe-core",
  "fast-check",
  "hono",
  "workerd",
  "typescript",
  "openapi-typescript",
  "yaml",
  "preact",
  "openai",
];

interface DenoInfo {
  roots: string[];
  redirects: Record<string, string>;
  modules: {
    specifier: string;
    npmPackage?: string;
    dependencies?: { code?: { specifier: string } }[];
  }[];
  npmPackages: Record<string, { name: string; dependencies: string[]; localPath: string }>;
}

/** `deno info --json` of the node's entry point, its npm packages from Deno's own cache. */
async function nodeGraph(): Promise<DenoInfo> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--node-modules-dir=none", "src/main.ts"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

/**
 * The npm packages the program loads when it runs (imports of code, not of types only), with
 * everything they depend on. `npmPackages` alone lists every package of the lock.
 */
function packagesOf(info: DenoInfo): string[] {
  const modules = new Map(info.modules.map((module) => [module.specifier, module]));
  const seen = new Set<string>();
  const packages = new Set<string>();
  const addPackage = (id: string) => {
    if (packages.has(id)) return;
    packages.add(id);
    for (const dependency of info.npmPackages[id]?.dependencies ?? []) addPackage(dependency);
  };
  const visit = (specifier: string) => {
    const resolved = info.redirects[specifier] ?? specifier;
    if (seen.has(resolved)) return;
    seen.add(resolved);
    const module = modules.get(resolved);
    if (module?.npmPackage) addPackage(module.npmPackage);
    for (const dependency of module?.dependencies ?? []) {
      if (dependency.code) visit(dependency.code.specifier);
    }
  };
  info.roots.forEach(visit);
  return [...packages].sort();
}

Deno.test("the node's module graph holds no development-only package", async () => {
  const packages = packagesOf(await nodeGraph());
  assert.ok(packages.some((id) => id.startsWith("jose@")), packages.join(", "));
  const names = packages.map((id) => id.slice(0, id.lastIndexOf("@")));
  assert.deepEqual(names.filter((name) => DEV_ONLY.includes(name)), []);
});

Deno.test("deno task start needs only the node's packages (no registry reachable)", () =>
  withTempDir(async (dir) => {
    const info = await nodeGraph();
    // The node's packages, as Deno keeps them: <name>/<version>/ and <name>/registry.json.
    const cache = `${dir}/deno-dir/npm/registry.npmjs.org`;
    for (const id of packagesOf(info)) {
      const { name, localPath } = info.npmPackages[id];
      await Deno.mkdir(`${cache}/${name}`, { recursive: true });
      // A package installed from the lock file alone (npm-lazy-caching) has no registry.json.
      const registry = `${dirname(localPath)}/registry.json`;
      const hasRegistry = await Deno.stat(registry).then(() => true, () => false);
      const copied = await new Deno.Command("cp", {
        args: ["-a", localPath, ...(hasRegistry ? [registry] : []), `${cache}/${name}/`],
      }).output();
      assert.ok(copied.success, new TextDecoder().decode(copied.stderr));
    }
    await Deno.mkdir(`${dir}/data`);
    await Deno.writeTextFile(
      `${dir}/data/config.json`,
      JSON.stringify({ apiKey: "a-test-key-of-enough-length", discovery: { mdns: false } }),
      { mode: 0o600 },
    );
    // Every registry request goes to a proxy that is not there.
    const noRegistry = "http://127.0.0.1:9";
    const node = await startListening(Deno.execPath(), [
      "task",
      "--config",
      `${ROOT}deno.json`,
      "start",
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--data-dir",
      `${dir}/data`,
    ], {
      DENO_DIR: `${dir}/deno-dir`,
      HTTPS_PROXY: noRegistry,
      HTTP_PROXY: noRegistry,
      NO_PROXY: "127.0.0.1,localhost",
    });
    try {
      const models = await fetch(`${node.url}/ai/store/v1/models`);
      assert.equal(models.status, 200);
      await models.body?.cancel();
      assert.doesNotMatch(node.output(), /^Download /m, node.output());
    } finally {
      await node.stop();
    }
  }));
