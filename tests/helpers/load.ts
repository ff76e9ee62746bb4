/**
 * Load on one node from many clients at once for a fixed time: uploaders (create, upload,
 * delete), readers (the listing, a record, a ranged read of a file), download clients following
 * their event streams, and JSON-RPC callers. Every answer is checked; the node's resident memory
 * is sampled every second.
 *
 * @module
 */
import { rpcCall } from "../../src/sdk/json_rpc.ts";
import { allMessages, startDownload } from "../../testing/events.ts";
import type { FileServer } from "../../testing/file_server.ts";
import { ggufBytes, type TestNode } from "../../testing/node.ts";
import { readyModel } from "./store.ts";

/** How many clients of each kind. */
export interface LoadShape {
  uploaders: number;
  readers: number;
  downloaders: number;
  rpcCallers: number;
}

/** What a load run saw. */
export interface LoadReport {
  seconds: number;
  requests: Record<keyof LoadShape, number>;
  failures: string[];
  /** The node's resident memory, MiB, once a second. */
  rssMib: number[];
}

async function rssMib(pid: number): Promise<number> {
  // Deno reads /proc/<pid> only with --allow-all; cat does not need it.
  const status = await new Deno.Command("cat", { args: [`/proc/${pid}/status`], stdout: "piped" })
    .output();
  const text = new TextDecoder().decode(status.stdout);
  return Number(/VmRSS:\s+(\d+) kB/.exec(text)?.[1] ?? 0) / 1024;
}

/** Runs `shape` against `node` for `seconds`. */
export async function runLoad(
  node: TestNode,
  files: FileServer,
  shape: LoadShape,
  seconds: number,
): Promise<LoadReport> {
  await readyModel(node, "seed", ggufBytes(2_000_000));
  const source = files.serve("/load.gguf", ggufBytes(1_000_000, 9));
  const upload = ggufBytes(256 * 1024, 8);
  const deadline = performance.now() + seconds * 1000;
  const requests = { uploaders: 0, readers: 0, downloaders: 0, rpcCallers: 0 };
  const failures: string[] = [];
  const expect = async (what: string, response: Promise<Response>, status: number) => {
    try {
      const answer = await response;
      const text = await answer.text();
      if (answer.status !== status) {
        failures.push(`${what}: ${answer.status} ${text.slice(0, 200)}`);
      }
    } catch (error) {
      failures.push(`${what}: ${(error as Error).message}`);
    }
  };
  const call = (path: string, init: RequestInit = {}) =>
    fetch(`${node.storeUrl}${path}`, {
      ...init,
      headers: node.auth(init.headers as Record<string, string>),
    });
  const create = (id: string) =>
    expect(
      `create ${id}`,
      call("/models", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ id, version: "1", kind: "llm" }),
      }),
      201,
    );
  const loop = async (kind: keyof LoadShape, work: (n: number) => Promise<void>) => {
    for (let n = 0; performance.now() < deadline; n++) {
      await work(n);
      requests[kind]++;
    }
  };
  const clients = [
    ...Array.from({ length: shape.uploaders }, (_, k) =>
      loop("uploaders", async (n) => {
        const id = `up-${k}-${n}`;
        await create(id);
        await expect(
          `upload ${id}`,
          call(`/models/${id}/upload`, {
            method: "POST",
            headers: { "Content-Type": "application/octet-stream" },
            body: upload as BodyInit,
          }),
          200,
        );
        await expect(`delete ${id}`, call(`/models/${id}`, { method: "DELETE" }), 200);
      })),
    ...Array.from({ length: shape.readers }, () =>
      loop("readers", async (n) => {
        if (n % 3 === 0) await expect("list", call("/models"), 200);
        else if (n % 3 === 1) await expect("record", call("/models/seed"), 200);
        else {
          await expect(
            "range",
            call("/models/seed?alt=media", { headers: { Range: "bytes=1000-66535" } }),
            206,
          );
        }
      })),
    ...Array.from({ length: shape.downloaders }, (_, k) =>
      loop("downloaders", async (n) => {
        const id = `dl-${k}-${n}`;
        await create(id);
        try {
          const messages = await allMessages(await startDownload(node, id, { url: source }));
          if (!("done" in messages.at(-1)!)) {
            failures.push(`download ${id}: ${JSON.stringify(messages.at(-1))}`);
          }
        } catch (error) {
          failures.push(`download ${id}: ${(error as Error).message}`);
        }
        await expect(`delete ${id}`, call(`/models/${id}`, { method: "DELETE" }), 200);
      })),
    ...Array.from({ length: shape.rpcCallers }, () =>
      loop("rpcCallers", async () => {
        try {
          await rpcCall({ url: node.url }, "getMe");
        } catch (error) {
          failures.push(`getMe: ${(error as Error).message}`);
        }
      })),
  ];
  const rss: number[] = [];
  const sampling = (async () => {
    while (performance.now() < deadline) {
      rss.push(await rssMib(node.pid));
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();
  const started = performance.now();
  await Promise.all([...clients, sampling]);
  return { seconds: (performance.now() - started) / 1000, requests, failures, rssMib: rss };
}
