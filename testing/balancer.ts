/**
 * HAProxy in front of test hubs, with the very config users copy (deploy/haproxy-hub.cfg): its
 * `bind` and `server` lines rewritten for 127.0.0.1 and the given backends, nothing else.
 *
 * @module
 */
import { debianServer, freePort, type GuardedProcess, logTail, spawnGuarded } from "./nats.ts";

/** The shipped config. */
export const HAPROXY_CONFIG = new URL("../deploy/haproxy-hub.cfg", import.meta.url).pathname;

/** HAProxy running in front of test backends. */
export interface TestBalancer extends AsyncDisposable {
  /** http://127.0.0.1:<port> */
  url: string;
  /** The HTTP frontend's port; the raw tunnel frontend listens on port + 1. */
  port: number;
  stop(): Promise<void>;
}

/**
 * Rewrites the shipped config for the tests: the frontends bind 127.0.0.1:`port` and `port` + 1,
 * and each backend lists one server per port of `backends` (the hubs' HTTP ports; their raw
 * ports are those + 1), named hub1, hub2... as the shipped lines are. Throws when the file no
 * longer has the lines it rewrites, so that the config and the tests cannot drift apart.
 */
export function renderBalancerConfig(shipped: string, port: number, backends: number[]): string {
  const placeholders = { http: 8090, raw: 8091 };
  const seen = { bindHttp: 0, bindRaw: 0, serversHttp: 0, serversRaw: 0 };
  const lines: string[] = [];
  for (const line of shipped.split("\n")) {
    const bind = /^(\s*)bind :(\d+)\s*$/.exec(line);
    if (bind && Number(bind[2]) === placeholders.http) {
      seen.bindHttp++;
      lines.push(`${bind[1]}bind 127.0.0.1:${port}`);
      continue;
    }
    if (bind && Number(bind[2]) === placeholders.raw) {
      seen.bindRaw++;
      lines.push(`${bind[1]}bind 127.0.0.1:${port + 1}`);
      continue;
    }
    const server = /^(\s*)server hub\d+ hub\d+\.example:(\d+)(.*)$/.exec(line);
    if (server) {
      const [, indent, placeholderPort, rest] = server;
      const raw = Number(placeholderPort) === placeholders.raw;
      if (!raw && Number(placeholderPort) !== placeholders.http) {
        throw new Error(`${HAPROXY_CONFIG}: a server line on an unknown port: ${line}`);
      }
      // The example lists two hubs: the first line stands for all of them, the rest go.
      const count = raw ? seen.serversRaw++ : seen.serversHttp++;
      if (count > 0) continue;
      backends.forEach((backend, index) => {
        const name = `hub${index + 1}`;
        const options = rest.replace(/track (\w+)\/hub\d+/, `track $1/${name}`);
        lines.push(`${indent}server ${name} 127.0.0.1:${raw ? backend + 1 : backend}${options}`);
      });
      continue;
    }
    lines.push(line);
  }
  if (Object.values(seen).some((count) => count === 0)) {
    throw new Error(
      `${HAPROXY_CONFIG} lacks a line the tests rewrite (found ${JSON.stringify(seen)})`,
    );
  }
  return lines.join("\n");
}

/** A port P of 127.0.0.1 with P + 1 free too (the HTTP and raw frontends). */
function freePortPair(): number {
  for (;;) {
    const port = freePort();
    if (port >= 65535) continue;
    try {
      Deno.listen({ hostname: "127.0.0.1", port: port + 1 }).close();
      return port;
    } catch {
      // Taken: another pair.
    }
  }
}

/**
 * Starts haproxy in front of `backends` (HTTP ports of hubs on 127.0.0.1), rendering
 * deploy/haproxy-hub.cfg, or says why it cannot. Resolves once both frontends listen; the
 * backends are in rotation from the start (HAProxy counts a server as up until its checks
 * fail).
 */
export async function startBalancer(
  backends: number[],
  dir: string,
): Promise<TestBalancer | { skip: string }> {
  if (backends.length === 0) throw new Error("a balancer needs at least one backend");
  const program = await debianServer("haproxy");
  if (typeof program !== "string") return program;
  const home = await Deno.makeTempDir({ dir, prefix: "haproxy-" });
  const shipped = await Deno.readTextFile(HAPROXY_CONFIG);
  const configFile = `${home}/haproxy.cfg`;
  const logFile = `${home}/haproxy.log`;

  let lastError: Error | undefined;
  // The free ports may be taken between the probe and HAProxy's bind: try a few.
  for (let attempt = 1; attempt <= 3; attempt++) {
    const port = freePortPair();
    await Deno.writeTextFile(configFile, renderBalancerConfig(shipped, port, backends));
    await Deno.writeTextFile(logFile, `--- start on ports ${port}, ${port + 1}\n`, {
      append: true,
    });
    // -db: stay in the foreground (no daemon) so that the guard can kill it.
    const server = await spawnGuarded(program, ["-db", "-f", configFile], logFile);
    const ready = await frontendsReady(port, server);
    if (ready !== true) {
      await server.kill();
      lastError = new Error(
        `haproxy on ports ${port}, ${port + 1} ${ready}:\n${await logTail(logFile)}`,
      );
      continue;
    }
    const stop = async () => {
      await server.kill();
      await Deno.remove(home, { recursive: true }).catch(() => {});
    };
    return {
      url: `http://127.0.0.1:${port}`,
      port,
      stop,
      [Symbol.asyncDispose]: stop,
    };
  }
  await Deno.remove(home, { recursive: true }).catch(() => {});
  throw lastError;
}

/**
 * True once HAProxy holds both frontend ports and still runs a moment later, else what went
 * wrong within 10 s. A port counts as held when binding it fails (HAProxy binds with
 * SO_REUSEPORT, which a plain bind cannot share). Connecting would tell too, but each probe
 * would reach a backend as a connection that closes at once: needless traffic for the hubs (and
 * one reset before Deno accepts it makes a `for await` over Deno.listen throw ENOTCONN).
 */
async function frontendsReady(port: number, server: GuardedProcess): Promise<true | string> {
  let exitCode: number | undefined;
  server.exited.then((code) => exitCode = code);
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (exitCode !== undefined) return `exited with ${exitCode}`;
    if (held(port) && held(port + 1)) {
      // Another program on the ports (HAProxy then fails to bind) looks the same at first.
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (exitCode !== undefined) return `exited with ${exitCode}`;
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return "did not listen in 10 s";
}

function held(port: number): boolean {
  try {
    Deno.listen({ hostname: "127.0.0.1", port }).close();
    return false;
  } catch (error) {
    if (error instanceof Deno.errors.AddrInUse) return true;
    throw error;
  }
}
