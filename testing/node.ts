/**
 * Starts a real edgenode node for a test: `edgenode serve` through the launcher, exactly as a
 * user runs it, on a free port of 127.0.0.1 with a temporary data directory.
 *
 * @module
 */
import { EXECUTABLE_FLAGS } from "../src/program/executable_flags.ts";
import { storeClient } from "../src/sdk/clients.ts";
import { type Finished, runToEnd } from "./run.ts";
import { TEST_ENGINE_DIR } from "./engine.ts";

/** The program's entry point. */
export const MAIN = new URL("../src/main.ts", import.meta.url).pathname;
/** The permissions of `deno task edgenode`. */
export const LAUNCHER_PERMISSIONS = [
  "--no-prompt",
  "--allow-env",
  "--allow-read",
  "--allow-write",
  "--allow-run",
  "--allow-net",
];

/** How to start a test node. */
export interface TestNodeOptions {
  /** Reuse a data directory (for restarts); a new temporary one otherwise. */
  dataDir?: string;
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** Extra arguments after `serve`. */
  args?: string[];
  /** Written to `<dataDir>/config.json` before the start. */
  config?: Record<string, unknown>;
  /**
   * Leave a given data directory without a config, to test the node's own first start (it
   * makes one, on the default discovery group); else one with a private group is written.
   */
  firstStart?: boolean;
  /** A command that runs the node, such as `["ip", "netns", "exec", "ns1"]`. */
  wrapper?: string[];
  /** The address to listen on; 127.0.0.1 by default. */
  host?: string;
  /**
   * Run this bundle (`deno task bundle`) with the single executable's flags, as the compiled
   * binary runs, instead of src/main.ts as a script.
   */
  bundle?: string;
}

/** A running node; `url` is `http://127.0.0.1:<port>`. */
export interface TestNode extends ListeningProcess, AsyncDisposable {
  /** The registry base URL under the default prefix. */
  storeUrl: string;
  apiKey: string;
  dataDir: string;
  /** Typed client of the registry API, sending the API key. */
  store: ReturnType<typeof storeClient>;
  /** Headers with the API key. */
  auth(extra?: Record<string, string>): Record<string, string>;
}

/** Runs `edgenode ARGS` to completion (for commands that exit). */
export function runEdgenode(args: string[], env: Record<string, string> = {}): Promise<Finished> {
  return runToEnd(Deno.execPath(), {
    args: ["run", ...LAUNCHER_PERMISSIONS, MAIN, ...args],
    env: { NO_COLOR: "1", ...env },
  });
}

/**
 * Data directories made for nodes that were stopped rather than disposed (their tests may still
 * look inside): removed when the test process ends. Left behind, a session's runs filled the
 * disk with hundreds of them (22 GB).
 */
const madeDataDirs = new Set<string>();
globalThis.addEventListener("unload", () => {
  for (const dir of madeDataDirs) {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* gone already */ }
  }
});

/** A random port for one test's mDNS group, away from the real 5353. */
export function randomMdnsPort(): number {
  return 20000 + Math.floor(Math.random() * 40000);
}

/**
 * `config` with link-local discovery on a private mDNS port unless it names one: a test node on
 * the default group (5353) reaches every node on the machine and its LAN, a user's among them,
 * and fills their logs with peers that come and go.
 */
export function withPrivateGroup(config: Record<string, unknown>): Record<string, unknown> {
  const discovery = config.discovery as Record<string, unknown> | undefined;
  return { ...config, discovery: { port: randomMdnsPort(), ...discovery } };
}

/** Whether `path` exists (a broken link or an unreadable parent counts as existing). */
async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    return !(error instanceof Deno.errors.NotFound);
  }
}

/** A random API key, as a node makes for itself on its first start. */
function testApiKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Starts a node and waits until it listens. */
export async function startTestNode(options: TestNodeOptions = {}): Promise<TestNode> {
  const dataDir = options.dataDir ?? await Deno.makeTempDir({ prefix: "edgenode-test-" });
  if (!options.dataDir) madeDataDirs.add(dataDir);
  // A data directory without a config gets one too, so that its node joins a private group; one
  // with a config keeps it (a restart), and a test of the first start itself asks for none.
  const written = options.config ??
    (options.firstStart || await exists(`${dataDir}/config.json`)
      ? undefined
      : { apiKey: testApiKey() });
  if (written) {
    await Deno.writeTextFile(`${dataDir}/config.json`, JSON.stringify(withPrivateGroup(written)), {
      mode: 0o600,
    });
  }
  const [program, ...wrapperArgs] = [...(options.wrapper ?? []), Deno.execPath()];
  const process = await startListening(program, [
    ...wrapperArgs,
    "run",
    ...(options.bundle ? [...EXECUTABLE_FLAGS, options.bundle] : [...LAUNCHER_PERMISSIONS, MAIN]),
    "serve",
    "--host",
    options.host ?? "127.0.0.1",
    "--port",
    "0",
    "--data-dir",
    dataDir,
    ...(options.args ?? []),
  ], { EDGENODE_ENGINE_DIR: TEST_ENGINE_DIR, ...options.env });
  const { url } = process;
  const config = JSON.parse(await Deno.readTextFile(`${dataDir}/config.json`));
  const apiKey: string = options.env?.EDGENODE_API_KEY ?? config.apiKey;
  const storeUrl = `${url}/ai/store/v1`;
  const auth = (extra: Record<string, string> = {}) => ({
    Authorization: `Bearer ${apiKey}`,
    ...extra,
  });
  return {
    ...process,
    storeUrl,
    apiKey,
    dataDir,
    store: storeClient({ url, credential: apiKey }),
    auth,
    async [Symbol.asyncDispose]() {
      await process.stop();
      if (!options.dataDir) await Deno.remove(dataDir, { recursive: true }).catch(() => {});
      madeDataDirs.delete(dataDir);
    },
  };
}

/** A launcher process (`edgenode serve` or `edgenode hub`) that printed where it listens. */
export interface ListeningProcess {
  url: string;
  /** The pid of the served process itself (the launcher's child). */
  pid: number;
  /** The pid of the launcher. */
  launcherPid: number;
  /** Everything printed so far. */
  output(): string;
  /** SIGTERM, then waits for the exit; returns the launcher's exit code. */
  stop(): Promise<number>;
  /** SIGKILL to the served process (a crash), then waits for the launcher to exit. */
  crash(): Promise<void>;
}

/** Spawns `program args` and waits until it prints "listening on <url> (pid N)". */
export async function startListening(
  program: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<ListeningProcess> {
  const child = new Deno.Command(program, {
    args,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  const listening = Promise.withResolvers<{ url: string; pid: number }>();
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      const match = /listening on (http:\/\/\S+) \(pid (\d+)\)/.exec(text);
      if (match) listening.resolve({ url: match[1], pid: Number(match[2]) });
    }
  };
  const drained = Promise.all([collect(child.stdout), collect(child.stderr)]);
  const exited = child.status.then(async (status) => {
    await drained;
    listening.reject(
      new Error(`${args.join(" ")} exited with ${status.code} before listening:\n${text}`),
    );
    return status.code;
  });
  const timer = setTimeout(
    () => listening.reject(new Error(`no 'listening' in 30 s:\n${text}`)),
    30_000,
  );
  const { url, pid } = await listening.promise.finally(() => clearTimeout(timer));
  let stopped: Promise<number> | undefined;
  const stop = () => {
    if (!stopped) {
      try {
        child.kill("SIGTERM");
      } catch { /* already exited */ }
      stopped = exited;
    }
    return stopped;
  };
  return {
    url,
    pid,
    launcherPid: child.pid,
    output: () => text,
    stop,
    async crash() {
      Deno.kill(pid, "SIGKILL");
      stopped = exited;
      await exited;
    },
  };
}

/** Makes a small valid GGUF file: the 24-byte header (version 3, no tensors) plus filler. */
export function ggufBytes(fillerBytes = 1000, seed = 1): Uint8Array {
  const bytes = new Uint8Array(24 + fillerBytes);
  bytes.set([0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0]);
  for (let i = 24; i < bytes.length; i++) bytes[i] = (i * 31 + seed * 7) & 0xff;
  return bytes;
}

/** Hex SHA-256 of bytes. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes as BufferSource);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Every file below a folder, as paths relative to it. */
export async function listFiles(dir: string, prefix = ""): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const relative = prefix + entry.name;
    if (entry.isDirectory) found.push(...await listFiles(`${dir}/${entry.name}`, `${relative}/`));
    else found.push(relative);
  }
  return found.sort();
}

/** Polls `condition` every 20 ms until it holds; fails after `ms`. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  what: string,
  ms = 10_000,
) {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Runs `run` with a new temporary folder, removed afterwards. */
export async function withTempDir(run: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-test-" });
  try {
    await run(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
