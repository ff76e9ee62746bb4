/**
 * The sandbox's boundaries, as `deno info` sees the module graph:
 * - the worker (this folder: it runs the microservice's untrusted code) imports nothing but its
 *   own folder, the protocol files both sides share and a short list of neutral leaves;
 * - the host thread (../host/) imports nothing of the worker;
 * - the node (src/ outside the sandbox) imports neither side's implementation, only the
 *   protocol and the shared leaves beside it (the single executable's entries aside, which
 *   run the container process: ../host/container_workers.ts).
 *
 * A file of one side that another needs moves to the protocol (types and constants) or to the
 * sandbox's top level (shared code), never across.
 */
import assert from "node:assert/strict";

const SRC = new URL("../../../", import.meta.url).href;
const SANDBOX = "mcm/sandbox/";
const WORKER = `${SANDBOX}worker/`;
const HOST = `${SANDBOX}host/`;

/** What both sides of the sandbox's channels share: types and constants only. */
const PROTOCOL = [`${SANDBOX}channel_protocol.ts`, `${SANDBOX}host_protocol.ts`];

/** What the protocol may import besides itself: the domain's error kinds (types; a leaf). */
const PROTOCOL_ALLOWED = ["errors/mod.ts"];

/** Neutral leaves the worker may import besides the protocol (none reaches any other file). */
const WORKER_ALLOWED = [
  // The log budget, applied by the worker and again by the node; imports nothing.
  `${SANDBOX}log_rate.ts`,
  // The domain's error kinds (a leaf), which a refused call to the node carries.
  "errors/mod.ts",
  // The one table from kind to HTTP status: the worker answers the microservice's calls to
  // its node as HTTP (node_calls.ts), so it is an HTTP edge. Imports only the kinds' types.
  "http/error_statuses.ts",
  // The container channel's framing and streams, which the worker speaks with the node itself.
  "tunnel/stream_mux.ts",
  "tunnel/mux_codec.ts",
  "tunnel/pipe_frames.ts",
  "tunnel/bytes.ts",
  "tunnel/body_source.ts",
];

/** Files outside the sandbox that may import a side's implementation, and what. */
const NODE_ALLOWED: Record<string, string[]> = {
  // The single executable's container process (`edgenode __container`) is the host side.
  "main.ts": [`${HOST}container_workers.ts`],
  "executable.ts": [`${HOST}container_workers.ts`],
};

/** Every module reachable from `entry`, with its imports (paths below src/; others as given). */
async function graph(entry: string): Promise<Map<string, string[]>> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", new URL(entry, SRC).pathname],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  const { modules } = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    modules: {
      specifier: string;
      dependencies?: { code?: { specifier?: string }; type?: { specifier?: string } }[];
    }[];
  };
  const name = (specifier: string) =>
    specifier.startsWith(SRC) ? specifier.slice(SRC.length) : specifier;
  return new Map(modules.map((module) => [
    name(module.specifier),
    (module.dependencies ?? []).flatMap((d) =>
      [d.code?.specifier, d.type?.specifier].filter((s) => s !== undefined).map(name)
    ),
  ]));
}

/** The imports `allowed` refuses, as "importer -> imported". */
function refused(
  modules: Map<string, string[]>,
  importer: (path: string) => boolean,
  allowed: (path: string, importer: string) => boolean,
): string[] {
  return [...modules].filter(([path]) => importer(path)).flatMap(([path, imports]) =>
    [...new Set(imports)].filter((target) => !allowed(target, path)).map((target) =>
      `${path} -> ${target}`
    )
  );
}

Deno.test("the sandboxed worker imports only its folder, the protocol and neutral leaves", async () => {
  const modules = await graph(`${WORKER}sandbox_worker_main.ts`);
  assert.ok(modules.size > 20, `${modules.size} modules`);
  const allowed = (target: string) =>
    target.startsWith(WORKER) || PROTOCOL.includes(target) || WORKER_ALLOWED.includes(target);
  assert.deepEqual(refused(modules, () => true, allowed), []);
});

Deno.test("the protocol files import nothing but each other and the error kinds", async () => {
  for (const protocol of PROTOCOL) {
    const modules = await graph(protocol);
    const allowed = (path: string) => PROTOCOL.includes(path) || PROTOCOL_ALLOWED.includes(path);
    assert.deepEqual([...modules.keys()].filter((path) => !allowed(path)), [], protocol);
  }
});

Deno.test("the container process's host imports nothing of the worker", async () => {
  for (const entry of [`${HOST}container_host_main.ts`, `${HOST}container_workers.ts`]) {
    const modules = await graph(entry);
    assert.deepEqual([...modules.keys()].filter((path) => path.startsWith(WORKER)), [], entry);
  }
});

Deno.test("the node imports the sandbox's protocol, never a side's implementation", async () => {
  for (const entry of ["main.ts", "executable.ts"]) {
    const modules = await graph(entry);
    const side = (path: string) => path.startsWith(WORKER) || path.startsWith(HOST);
    const allowed = (target: string, importer: string) =>
      !side(target) || (NODE_ALLOWED[importer] ?? []).includes(target);
    assert.deepEqual(refused(modules, (path) => !path.startsWith(SANDBOX), allowed), [], entry);
  }
});
