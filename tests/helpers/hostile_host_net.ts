/**
 * Network props for the hostile host tests: a server that accepts connections and never
 * answers (counting the connections open at once), and a network namespace of its own for a
 * node whose addresses change while it runs.
 *
 * @module
 */
import assert from "node:assert/strict";

/** A TCP server on 127.0.0.1 that reads what it is sent and never answers. */
export interface SilentServer extends Disposable {
  port: number;
  /** Connections open now. */
  open(): number;
  /** The most connections that were open at once. */
  peak(): number;
}

/** Starts a SilentServer. */
export function silentServer(): SilentServer {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  let peak = 0;
  (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      peak = Math.max(peak, conns.size);
      (async () => {
        const buffer = new Uint8Array(64 * 1024);
        try {
          while ((await conn.read(buffer)) !== null) { /* drained, never answered */ }
        } catch { /* reset by the peer */ }
        conns.delete(conn);
        try {
          conn.close();
        } catch { /* closed already */ }
      })();
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    open: () => conns.size,
    peak: () => peak,
    [Symbol.dispose]() {
      listener.close();
      for (const conn of conns) {
        try {
          conn.close();
        } catch { /* closed already */ }
      }
    },
  };
}

/** `ip ARGS`; whether it worked and what it said. */
export async function ip(...args: string[]): Promise<{ ok: boolean; text: string }> {
  const output = await new Deno.Command("ip", { args, stdout: "piped", stderr: "piped" }).output()
    .catch((error) => ({ success: false, stdout: new Uint8Array(), stderr: String(error) }));
  const decode = (b: Uint8Array | string) =>
    typeof b === "string" ? b : new TextDecoder().decode(b);
  return { ok: output.success, text: decode(output.stdout) + decode(output.stderr) };
}

/** Whether this machine lets the test make network namespaces (root and `ip netns`). */
export async function namespacesAvailable(): Promise<boolean> {
  const probe = `hhprobe${Math.random().toString(36).slice(2, 7)}`;
  return (await ip("netns", "add", probe)).ok && (await ip("netns", "del", probe)).ok;
}

/** A network namespace with only its loopback up; removed when disposed. */
export async function namespace(): Promise<{ name: string } & AsyncDisposable> {
  const name = `hh${Math.random().toString(36).slice(2, 9)}`;
  const must = async (...args: string[]) => {
    const result = await ip(...args);
    assert.ok(result.ok, `ip ${args.join(" ")}: ${result.text}`);
  };
  await must("netns", "add", name);
  await must("-n", name, "link", "set", "lo", "up");
  return {
    name,
    async [Symbol.asyncDispose]() {
      await ip("netns", "del", name);
    },
  };
}

/** `curl ARGS` inside namespace `ns`; its status code and body. */
export async function curlInside(
  ns: string,
  args: string[],
): Promise<{ status: number; body: string }> {
  const output = await new Deno.Command("ip", {
    args: ["netns", "exec", ns, "curl", "-s", "-w", "\n%{http_code}", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  const cut = text.lastIndexOf("\n");
  return { status: Number(text.slice(cut + 1)), body: text.slice(0, cut) };
}
