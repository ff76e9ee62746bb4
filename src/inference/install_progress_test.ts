/** The install's progress lines (install_progress.ts) and words (install_words.ts). */
import assert from "node:assert/strict";
import {
  buildStep,
  expectedInstallBytes,
  folderBytes,
  measureEverySecond,
  progressLine,
  progressOfLine,
  quarterOf,
} from "./install_progress.ts";
import { describeInstall, installingEngineProgress } from "./install_words.ts";
import { installingEngineOf } from "../sdk/load_progress.ts";

Deno.test("a progress line goes through; anything else, or a malformed one, does not", () => {
  const progress = { backend: "cuda", stage: "download" as const, done: 48e6, total: 143e6 };
  assert.deepEqual(progressOfLine(progressLine(progress)), progress);
  assert.equal(progressOfLine("added 12 packages in 3s"), undefined);
  assert.equal(progressOfLine("@@engine-install {not json"), undefined);
  assert.equal(
    progressOfLine('@@engine-install {"backend":1,"stage":"build","done":1}'),
    undefined,
  );
  assert.equal(progressOfLine('@@engine-install {"backend":"x","stage":"rm","done":1}'), undefined);
  const long = progressOfLine(
    `@@engine-install {"backend":"${"x".repeat(5000)}","stage":"build","done":1,"total":-4}`,
  );
  assert.equal(long?.backend.length, 40);
  assert.equal(long?.total, undefined);
});

Deno.test("hostile counts: only whole, exact, non-negative numbers are done or total", () => {
  const line = (done: unknown, total?: unknown) =>
    `@@engine-install {"backend":"cpu","stage":"download","done":${done},"total":${total}}`;
  for (const done of ["-1", "1.5", "1e300", '"7"', "null"]) {
    assert.equal(progressOfLine(line(done, 10)), undefined, done);
  }
  for (const total of ["-1", "2.5", "1e300", '"7"', "0"]) {
    assert.equal(progressOfLine(line(5, total))?.total, undefined, total);
  }
  assert.deepEqual(progressOfLine(line(0, 10)), {
    backend: "cpu",
    stage: "download",
    done: 0,
    total: 10,
  });
});

Deno.test("build steps: ninja's [n/m] and make's [ NN%]", () => {
  assert.deepEqual(buildStep("[12/345] Building CXX object ggml/src/ggml.c.o"), {
    done: 12,
    total: 345,
  });
  assert.deepEqual(buildStep("[ 37%] Building C object"), { done: 37, total: 100 });
  assert.equal(buildStep("-- Configuring done"), undefined);
});

Deno.test("in words, never a percent (a load's percent shares the stream)", () => {
  const download = { backend: "cuda", stage: "download" as const, done: 48e6, total: 143e6 };
  assert.equal(describeInstall(download), "installing the cuda engine 48/143 MB");
  assert.equal(
    describeInstall({ ...download, total: undefined }),
    "installing the cuda engine 48 MB",
  );
  assert.equal(
    describeInstall({ ...download, done: 150e6 }),
    "installing the cuda engine 143/143 MB",
  );
  const build = { backend: "cuda", stage: "build" as const, done: 37, total: 100 };
  assert.equal(describeInstall(build), "building the cuda engine from source, step 37/100");
  assert.doesNotMatch(describeInstall(build), /%/);
});

Deno.test("a load stream's install text reads back as the same words with the SDK", () => {
  const progress = { backend: "cuda", stage: "download" as const, done: 48e6, total: 143e6 };
  const text = installingEngineProgress(progress);
  assert.equal(text, "<|installing_engine|> installing the cuda engine 48/143 MB<br />");
  assert.equal(installingEngineOf(text), describeInstall(progress));
  assert.equal(installingEngineOf("<|loading_model|> 5%<br />"), undefined);
  assert.equal(installingEngineOf(undefined), undefined);
});

Deno.test("quarters for the log: none without a total", () => {
  const at = (done: number, total?: number) =>
    quarterOf({ backend: "cpu", stage: "download", done, total });
  assert.deepEqual([at(1, 100), at(25, 100), at(74, 100), at(100, 100), at(500, 100)], [
    0,
    1,
    2,
    4,
    4,
  ]);
  assert.equal(at(5), undefined);
});

Deno.test("expected sizes are pinned for the packages measured", () => {
  assert.ok(expectedInstallBytes("@node-llama-cpp/linux-x64-cuda")! > 190e6);
  assert.equal(expectedInstallBytes("@node-llama-cpp/win-x64"), undefined);
});

Deno.test("a folder's bytes: files only, links not followed, none when absent", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/a/b`, { recursive: true });
    await Deno.writeFile(`${dir}/a/b/f`, new Uint8Array(1000));
    await Deno.writeFile(`${dir}/g`, new Uint8Array(24));
    await Deno.symlink("/usr", `${dir}/link`);
    assert.equal(await folderBytes(dir), 1024);
    assert.equal(await folderBytes(`${dir}/absent`), 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("measures never overlap and none reports once stopped", async () => {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-measure-" });
  try {
    await Deno.writeTextFile(`${dir}/a`, "12345");
    const seen: number[] = [];
    const stop = measureEverySecond(dir, (bytes) => seen.push(bytes), 20);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await stop();
    const count = seen.length;
    assert.ok(count >= 2, String(count));
    assert.deepEqual(new Set(seen), new Set([5]));
    // Gone (renamed into place): nothing reads it as 0 bytes afterwards.
    await Deno.remove(dir, { recursive: true });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(seen.length, count);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
