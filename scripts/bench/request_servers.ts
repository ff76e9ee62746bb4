/**
 * The servers of the request path's benchmark (request_path.ts): the JSON routes' baselines and
 * workerd, each started on core 0, and the CPU time a server's processes used, from /proc.
 *
 * @module
 */
import { childPids, run } from "./tools.ts";

const BASELINES = new URL("./baselines/", import.meta.url).pathname;
const REPOSITORY = new URL("../..", import.meta.url).pathname;

/** A server process of the benchmark: its URL, its process, and how to stop it. */
export interface Server {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

const TICKS_PER_SECOND = 100;

/**
 * CPU seconds (user and system) a process and its descendants have used so far. Read by `cat`:
 * Deno lets a script read /proc/<pid>/stat only with --allow-all.
 */
export async function cpuSeconds(pid: number): Promise<number> {
  const files = [pid, ...await descendants(pid)].map((each) => `/proc/${each}/stat`);
  // A process that ended meanwhile has no file any more: the others count.
  const out = await run("sh", ["-c", `cat ${files.join(" ")} 2>/dev/null; true`]);
  let ticks = 0;
  for (const stat of out.split("\n").filter((line) => line.includes(")"))) {
    // The fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / TICKS_PER_SECOND;
}

/** Spawns `taskset -c 0 COMMAND` and waits for the "port N" line it prints. */
async function startPrintingPort(command: string, args: string[]): Promise<Server> {
  const child = new Deno.Command("taskset", {
    args: ["-c", "0", command, ...args],
    cwd: REPOSITORY,
    stdin: "null",
    stdout: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const port = /port (\d+)/.exec((await reader.read()).value ?? "")?.[1];
  const stop = async () => {
    try {
      child.kill();
    } catch { /* already exited */ }
    await child.status;
    await reader.cancel();
  };
  if (!port) {
    await stop();
    throw new Error(`${args.join(" ")} printed no port`);
  }
  return { url: `http://127.0.0.1:${port}`, pid: child.pid, stop };
}

/**
 * The JSON routes' baselines: Hono answering the same JSON (`hono`), Hono doing the node's work
 * besides (`honoContract`: CORS, the header reads, the Content-Type check), a bare Deno.serve.
 */
export type JsonBaseline = "hono" | "honoContract" | "bare";

/** Starts one of the JSON routes' baselines on core 0, answering from `dir`'s two files. */
export function startJsonBaseline(dir: string, kind: JsonBaseline): Promise<Server> {
  return startPrintingPort(Deno.execPath(), [
    "run",
    "--no-prompt",
    "--allow-net=127.0.0.1",
    `--allow-read=${dir}`,
    `${BASELINES}${kind === "honoContract" ? "hono_contract_server.ts" : "hono_server.ts"}`,
    ...(kind === "bare" ? ["--bare"] : []),
    `${dir}/model.json`,
    `${dir}/getme.json`,
  ]);
}

/** Starts workerd with workerd_hello.capnp on a free port of 127.0.0.1, on core 0. */
export async function startWorkerd(binary: string): Promise<Server> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close();
  const child = new Deno.Command("taskset", {
    args: [
      "-c",
      "0",
      binary,
      "serve",
      `${BASELINES}workerd_hello.capnp`,
      "--socket-addr",
      `http=127.0.0.1:${port}`,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const drained = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) stderr += chunk;
  })();
  let exited = false;
  child.status.then(() => exited = true);
  const stop = async () => {
    try {
      child.kill();
    } catch { /* already exited */ }
    await child.status;
    await drained;
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 15_000;
  while (true) {
    try {
      const response = await fetch(`${url}/`);
      if ((await response.text()) === "hello") return { url, pid: child.pid, stop };
    } catch { /* not listening yet */ }
    if (exited || Date.now() > deadline) {
      await stop();
      throw new Error(
        `workerd did not answer "hello": ${stderr.trim().slice(-300) || "no output"}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Asserts a server answers `request` with `expected` (same bytes, status 200). */
export async function expectSame(url: string, init: RequestInit, expected: string, what: string) {
  const response = await fetch(url, init);
  const text = await response.text();
  if (response.status !== 200 || text !== expected) {
    throw new Error(`${what} at ${url}: ${response.status} ${text} (expected ${expected})`);
  }
}

/** All processes below a pid. */
export async function descendants(pid: number): Promise<number[]> {
  const children = await childPids(pid);
  return [...children, ...(await Promise.all(children.map(descendants))).flat()];
}
