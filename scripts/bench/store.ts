/**
 * The bench's transfers into a fresh node, each with the node's peak RSS: uploads, downloads
 * from a URL, and an upload while 20 clients download another model's file (alt=media) over and
 * over, whose RSS must stay under 150 MB whatever the file's size (issue 23).
 *
 * @module
 */
import { startTestNode } from "../tests/helpers/node.ts";
import { createModel, curlUpload, peakRssMib, run, timed } from "./bench_tools.ts";

/** Uploads a file to a fresh node (three times), returning the median MB/s and the peak RSS. */
export async function uploadRun(dir: string, file: string, mib: number, multipart: boolean) {
  await using node = await startTestNode({ dataDir: await Deno.makeTempDir({ dir }) });
  await createModel(node, "big");
  const seconds = await timed(
    "curl",
    curlUpload(`${node.storeUrl}/models/big/upload`, node.apiKey, file, multipart),
  );
  return { mbps: (mib * 1.048576) / seconds, rss: await peakRssMib(node.pid) };
}

/** Downloads a URL into a fresh node (three times, forced), returning median MB/s and peak RSS. */
export async function downloadRun(dir: string, url: string, mib: number) {
  await using node = await startTestNode({ dataDir: await Deno.makeTempDir({ dir }) });
  await createModel(node, "big");
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    const response = await fetch(`${node.storeUrl}/models/big/download`, {
      method: "POST",
      headers: node.auth({ "Content-Type": "application/json" }),
      body: JSON.stringify({ url, force: true }),
    });
    const events = await response.text();
    if (!events.includes(`"done":true`)) throw new Error(`download failed: ${events.slice(-300)}`);
    times.push((performance.now() - start) / 1000);
  }
  const seconds = times.sort((a, b) => a - b)[1];
  return { mbps: (mib * 1.048576) / seconds, rss: await peakRssMib(node.pid) };
}

/** MB/s of the upload, the node's peak RSS (MiB) and the bytes the readers got meanwhile. */
export async function uploadWithReaders(
  dir: string,
  file: string,
  mib: number,
  readFile: string,
  readers = 20,
): Promise<{ mbps: number; rss: number; readBytes: number }> {
  await using node = await startTestNode({ dataDir: await Deno.makeTempDir({ dir }) });
  await createModel(node, "read");
  await run(
    "curl",
    curlUpload(`${node.storeUrl}/models/read/upload`, node.apiKey, readFile, false),
  );
  await createModel(node, "big");
  let reading = true;
  let readBytes = 0;
  const clients = Array.from({ length: readers }, async () => {
    while (reading) {
      const response = await fetch(`${node.storeUrl}/models/read?alt=media`, {
        headers: node.auth(),
      });
      for await (const chunk of response.body!) readBytes += chunk.byteLength;
    }
  });
  try {
    const seconds = await timed(
      "curl",
      curlUpload(`${node.storeUrl}/models/big/upload`, node.apiKey, file, false),
    );
    return { mbps: (mib * 1.048576) / seconds, rss: await peakRssMib(node.pid), readBytes };
  } finally {
    reading = false;
    await Promise.all(clients);
  }
}
