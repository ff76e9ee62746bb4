/**
 * A large download inside a microservice for `deno task bench` (also under `--only mcm`):
 * `context.http.request({ outputFile })` of a file served on 127.0.0.1, next to `curl -o` and
 * `sync` of the same URL, with the container process's peak memory, which must not grow with
 * the file's size (the body goes from the socket to the storage file in chunks).
 *
 * @module
 */
import { packTar } from "modern-tar";
import { postImage, serviceUrl, startContainer } from "../../testing/mcm.ts";
import { startTestNode } from "../../testing/node.ts";
import { makeModelFile, rssMib, run, timed } from "./tools.ts";

const PULLER = `mimikModule.exports = function (context, req, res) {
  var url = decodeURIComponent(req.url.split("url=")[1] || "");
  context.http.request({
    url: url,
    outputFile: "big.bin",
    socketTimeout: 30000,
    success: function (r) { res.end(JSON.stringify({ status: r.status })); },
    error: function (e) { res.statusCode = 502; res.end(JSON.stringify(e)); },
  });
};`;

async function startSource(dir: string) {
  await Deno.writeTextFile(`${dir}/list.json`, JSON.stringify({ data: [{}] }));
  const server = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net=127.0.0.1",
      `--allow-read=${dir}`,
      new URL("./baselines/baseline_server.ts", import.meta.url).pathname,
      dir,
      `${dir}/list.json`,
    ],
    stdout: "piped",
  }).spawn();
  const reader = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const port = /port (\d+)/.exec((await reader.read()).value ?? "")?.[1];
  return { url: `http://127.0.0.1:${port}/file`, server };
}

/** The row: MB/s and peak RSS of the container, next to curl -o of the same URL. */
export async function mcmDownloadRows(sizeMib: number): Promise<string[][]> {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-pull-" });
  const source = await startSource(dir);
  try {
    await makeModelFile(`${dir}/big.gguf`, sizeMib);
    const mb = sizeMib * 1.048576;
    const curlSeconds = await timed("sh", [
      "-c",
      `curl -sS --fail -o ${dir}/curl.bin ${source.url} && sync`,
    ]);
    await Deno.remove(`${dir}/curl.bin`);

    await Deno.mkdir(`${dir}/node`);
    await using node = await startTestNode({
      dataDir: `${dir}/node`,
      config: {
        apiKey: "a-bench-key-of-enough-length",
        discovery: { mdns: false },
        mcm: { outboundNetworks: ["public", "private", "loopback"], storageMb: sizeMib + 64 },
      },
    });
    const bytes = new TextEncoder().encode(PULLER);
    const image = await packTar([{
      header: { name: "index.js", size: bytes.length, type: "file" },
      body: bytes,
    }]);
    await (await postImage(node, image, "puller.tar")).body?.cancel();
    const container = await startContainer(node, {
      name: "puller",
      image: "puller",
      env: { "MCM.MAX_EXECUTION_TIME_SEC": "900" },
    });
    const pull = `${serviceUrl(node, container)}/pull?url=${encodeURIComponent(source.url)}`;
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const start = performance.now();
      const answer = await fetch(pull);
      const text = await answer.text();
      if (answer.status !== 200) throw new Error(`the pull failed: ${text}`);
      times.push((performance.now() - start) / 1000);
    }
    const seconds = times.sort((a, b) => a - b)[1];
    const pids = (await run("sh", ["-c", `ps --ppid ${node.pid} -o pid= || true`]))
      .split("\n").map((line) => Number(line.trim())).filter((n) => n > 0);
    const peak = Math.max(...await Promise.all(pids.map((pid) => rssMib(pid, "VmHWM"))));
    const mbps = mb / seconds;
    const curlMbps = mb / curlSeconds;
    return [[
      `download inside a microservice to a storage file (context.http.request outputFile), ` +
      `${sizeMib} MiB from 127.0.0.1 (median of 3)`,
      `${mbps.toFixed(0)} MB/s; container process peak RSS ${peak.toFixed(0)} MiB`,
      `curl -o + sync of the same URL: ${curlMbps.toFixed(0)} MB/s (${
        Math.round((100 * mbps) / curlMbps)
      }%)`,
    ]];
  } finally {
    source.server.kill();
    await source.server.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
