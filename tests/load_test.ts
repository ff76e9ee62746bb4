/**
 * Load, a short run: 50 uploaders, 200 readers, 20 download clients and 20 JSON-RPC callers at
 * once on 127.0.0.1, with no failed request. EDGENODE_LOAD_SECONDS makes it longer; `deno task
 * soak` runs it for minutes and checks that memory stays flat.
 */
import assert from "node:assert/strict";
import { startFileServer } from "../testing/file_server.ts";
import { runLoad } from "./helpers/load.ts";
import { startTestNode } from "../testing/node.ts";

const SECONDS = Number(Deno.env.get("EDGENODE_LOAD_SECONDS") ?? 5);

Deno.test("many clients at once: every request answered as it should be", async () => {
  await using node = await startTestNode({
    config: { apiKey: "a-load-test-key-of-enough-length", discovery: { mdns: false } },
  });
  await using files = startFileServer();
  const report = await runLoad(
    node,
    files,
    { uploaders: 50, readers: 200, downloaders: 20, rpcCallers: 20 },
    SECONDS,
  );
  const total = Object.values(report.requests).reduce((a, b) => a + b, 0);
  const third = Math.max(1, Math.floor(report.rssMib.length / 3));
  const early = Math.max(...report.rssMib.slice(0, third));
  const late = Math.max(...report.rssMib.slice(-third));
  console.log(
    `load: ${total} rounds in ${report.seconds.toFixed(0)} s ${JSON.stringify(report.requests)}, ` +
      `${report.failures.length} failed; RSS ${report.rssMib.map((r) => r.toFixed(0)).join(" ")} ` +
      `MiB (peak of the first third ${early.toFixed(0)}, of the last ${late.toFixed(0)})`,
  );
  assert.deepEqual(report.failures.slice(0, 10), []);
  if (Deno.env.get("EDGENODE_LOAD_SECONDS")) {
    assert.ok(late < early * 1.25 + 20, `memory grew from ${early} to ${late} MiB`);
  }
});
