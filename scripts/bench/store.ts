/**
 * The model registry's figures for `deno task bench` (alone: `deno task bench --only store`):
 * - upload (raw and multipart) and `alt=media` download of a large file with curl, in MB/s,
 *   next to a plain file copy, `dd conv=fsync`, nginx's WebDAV PUT (baselines/nginx.ts)
 *   and a bare Deno.serve (baselines/baseline_server.ts);
 * - the node's CPU time per MB of an upload by stage (store_stages.ts: receive and copy on the
 *   main thread, hash, write and flush on the others);
 * - the node's peak RSS while uploading, for two file sizes (it must not grow with the size),
 *   and while 20 clients download another model's file (alt=media) over and over, which must
 *   stay under 150 MB whatever the file's size (issue 23);
 * - download from a URL (POST /models/{id}/download) served from 127.0.0.1, next to `curl -o`
 *   of the same URL, with the node's peak RSS for two file sizes;
 * - GET /models with 1,000 records and GET /models/{id}, in requests/s with wrk, next to a bare
 *   Deno.serve JSON handler.
 *
 * @module
 */
import { startTestNode } from "../../testing/node.ts";
import { startNginxDav } from "./baselines/nginx.ts";
import { formatStageCpu, stageCpu } from "./store_stages.ts";
import {
  createModel,
  curlUpload,
  makeModelFile,
  p99,
  peakRssMib,
  run,
  startBaselineServer,
  timed,
  wrk,
} from "./tools.ts";

/**
 * Uploads a file to a fresh node (three times), returning the median MB/s, the peak RSS and the
 * node's CPU time per MB by stage (store_stages.ts), averaged over the three.
 */
async function uploadRun(dir: string, file: string, mib: number, multipart: boolean) {
  await using node = await startTestNode({ dataDir: await Deno.makeTempDir({ dir }) });
  await createModel(node, "big");
  const { result: seconds, cpu } = await stageCpu(
    node.pid,
    () =>
      timed("curl", curlUpload(`${node.storeUrl}/models/big/upload`, node.apiKey, file, multipart)),
  );
  // The sink's worker hands its writes to other threads from 4 cores on (file_sinks.ts).
  const stages = formatStageCpu(cpu, 3 * mib * 1.048576, navigator.hardwareConcurrency >= 4);
  return { mbps: (mib * 1.048576) / seconds, rss: await peakRssMib(node.pid), stages };
}

/** Downloads a URL into a fresh node (three times, forced), returning median MB/s and peak RSS. */
async function downloadRun(dir: string, url: string, mib: number) {
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
async function uploadWithReaders(
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

/**
 * The model registry's rows: transfers of a `sizeMib` file (and of a `smallMib` one, for the
 * peak memory), next to the copy, dd, nginx, curl and bare Deno.serve baselines.
 */
export async function storeRows(sizeMib: number, smallMib: number): Promise<string[][]> {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-" });
  const rows: string[][] = [];
  try {
    const big = `${dir}/big.gguf`;
    const small = `${dir}/small.gguf`;
    await makeModelFile(big, sizeMib);
    await makeModelFile(small, smallMib);
    const mb = sizeMib * 1.048576;

    const copySeconds = await timed("cp", [big, `${dir}/copy.bin`]);
    await Deno.remove(`${dir}/copy.bin`);
    rows.push([
      `plain file copy (cp), ${sizeMib} MiB`,
      `${(mb / copySeconds).toFixed(0)} MB/s`,
      "baseline",
    ]);
    const durableSeconds = await timed("dd", [
      `if=${big}`,
      `of=${dir}/copy.bin`,
      "bs=1M",
      "conv=fsync",
      "status=none",
    ]);
    await Deno.remove(`${dir}/copy.bin`);
    rows.push([
      `durable file copy (dd conv=fsync), ${sizeMib} MiB`,
      `${(mb / durableSeconds).toFixed(0)} MB/s`,
      "baseline: an upload syncs its file before the rename, as this copy does",
    ]);
    await using nginx = await startNginxDav(`${dir}/nginx`);
    if (nginx) {
      const putSeconds = await timed("curl", [
        "-sS",
        "--fail",
        "-o",
        "/dev/null",
        "-T",
        big,
        `${nginx.url}/put.gguf`,
      ]);
      await Deno.remove(`${dir}/nginx/root/put.gguf`).catch(() => {});
      rows.push([
        `upload to nginx (WebDAV PUT, nginx-light), ${sizeMib} MiB (curl)`,
        `${(mb / putSeconds).toFixed(0)} MB/s`,
        "baseline: the HTTP receive path; nginx does not sync the file",
      ]);
    }

    const listFile = `${dir}/list.json`;
    for (const multipart of [false, true]) {
      const label = multipart ? "multipart" : "raw body";
      const small_ = await uploadRun(dir, small, smallMib, multipart);
      const big_ = await uploadRun(dir, big, sizeMib, multipart);
      rows.push([
        `upload ${label}, ${sizeMib} MiB (curl)`,
        `${big_.mbps.toFixed(0)} MB/s`,
        `peak RSS ${big_.rss} MB (${smallMib} MiB file: ${small_.rss} MB); node's CPU by ` +
        `stage (${navigator.hardwareConcurrency} cores): ${big_.stages}`,
      ]);
    }

    const loaded = await uploadWithReaders(dir, big, sizeMib, small);
    rows.push([
      `upload raw body, ${sizeMib} MiB, while 20 clients download another model (alt=media)`,
      `${loaded.mbps.toFixed(0)} MB/s, peak RSS ${loaded.rss} MB`,
      `the readers got ${(loaded.readBytes / 1e9).toFixed(1)} GB meanwhile; target: RSS < 150 MB`,
    ]);

    // Download and list figures come from one more node holding the big file and 1,000 records.
    await using node = await startTestNode({ dataDir: await Deno.makeTempDir({ dir }) });
    await createModel(node, "big");
    await run("curl", curlUpload(`${node.storeUrl}/models/big/upload`, node.apiKey, big, false));
    for (let i = 1; i < 1000; i++) await createModel(node, `model-${String(i).padStart(4, "0")}`);
    await Deno.writeTextFile(listFile, await (await fetch(`${node.storeUrl}/models`)).text());

    await using baseline = await startBaselineServer(dir, listFile);
    const base = baseline.url;
    // Downloads: the bare server is the source for both the node and curl.
    const curlSeconds = await timed("curl", [
      "-sS",
      "--fail",
      "-o",
      `${dir}/curl.bin`,
      `${base}/file`,
    ]);
    // The node syncs the file before renaming it into place; `sync FILE` does the same.
    const durableCurlSeconds = await timed("sh", [
      "-c",
      `curl -sS --fail -o ${dir}/curl.bin ${base}/file && sync ${dir}/curl.bin`,
    ]);
    await Deno.remove(`${dir}/curl.bin`);
    const smallDownload = await downloadRun(dir, `${base}/file?name=small`, smallMib);
    const bigDownload = await downloadRun(dir, `${base}/file`, sizeMib);
    rows.push([
      `download from a URL, ${sizeMib} MiB from 127.0.0.1 (POST .../download)`,
      `${bigDownload.mbps.toFixed(0)} MB/s`,
      `curl -o same URL: ${(mb / curlSeconds).toFixed(0)} MB/s; curl -o then sync FILE: ` +
      `${(mb / durableCurlSeconds).toFixed(0)} MB/s; node peak RSS ${bigDownload.rss} MB ` +
      `(${smallMib} MiB file: ${smallDownload.rss} MB)`,
    ]);
    // Latency under an upload is measured before pinning: the node as users run it.
    const idle = await p99(`${node.storeUrl}/models/model-0500`);
    const uploading = run(
      "curl",
      curlUpload(`${node.storeUrl}/models/big/upload`, node.apiKey, big, false),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const busy = await p99(`${node.storeUrl}/models/model-0500`);
    await uploading;
    rows.push([
      `GET /models/{id} p99 latency during a ${sizeMib} MiB upload (wrk -c10)`,
      `${busy.toFixed(1)} ms`,
      `same node idle: ${idle.toFixed(2)} ms`,
    ]);
    // -a: every thread of the node, as the baseline server runs wholly on core 0.
    await run("taskset", ["-a", "-pc", "0", String(node.pid)]);
    const baseUpload = await timed("curl", curlUpload(`${base}/upload`, undefined, big));
    rows.push([
      `upload raw body to a bare Deno.serve, ${sizeMib} MiB`,
      `${(mb / baseUpload).toFixed(0)} MB/s`,
      "baseline",
    ]);
    const download = await timed("curl", [
      "-sS",
      "--fail",
      "-o",
      "/dev/null",
      `${node.storeUrl}/models/big?alt=media`,
    ]);
    const baseDownload = await timed("curl", [
      "-sS",
      "--fail",
      "-o",
      "/dev/null",
      `${base}/file`,
    ]);
    rows.push([
      `download alt=media, ${sizeMib} MiB (curl)`,
      `${(mb / download).toFixed(0)} MB/s`,
      `bare Deno.serve file: ${(mb / baseDownload).toFixed(0)} MB/s`,
    ]);
    const list = await wrk(`${node.storeUrl}/models`);
    const baseList = await wrk(`${base}/list`);
    rows.push([
      "GET /models, 1,000 records (wrk -c50, 1 core)",
      `${list} req/s`,
      `bare Deno.serve same JSON: ${baseList} req/s`,
    ]);
    const one = await wrk(`${node.storeUrl}/models/model-0500`);
    const baseOne = await wrk(`${base}/one`);
    rows.push([
      "GET /models/{id} (wrk -c50, 1 core)",
      `${one} req/s`,
      `bare Deno.serve same JSON: ${baseOne} req/s`,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  return rows;
}
