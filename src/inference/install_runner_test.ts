/**
 * The node's side of an install (install_runner.ts) with a stand-in installer: a script in the
 * scripts folder that behaves as its folder's name says (fails naming host paths, fails in the
 * build, takes its time), and counts its runs in the engine folder.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Unavailable } from "../errors/mod.ts";
import { engineStatus } from "./engine_status.ts";
import { firstError } from "./engine_errors.ts";
import { type InstallJob, joinInstall } from "./install_runner.ts";

const FAKE_INSTALLER = `
const [folder, backend] = Deno.args;
const name = folder.split("/").at(-1);
const engineDir = folder.slice(0, folder.lastIndexOf("/"));
await Deno.writeTextFile(engineDir + "/runs-" + name, "x", { append: true });
const line = (stage, done) =>
  console.log("@@engine-install " + JSON.stringify({ backend: "forged", stage, done, total: 10 }));
line("download", 1);
if (name.startsWith("npm-fails")) {
  console.error("npm install failed (exit 1): EACCES " + folder + ".partial-12/node_modules");
  console.error("at /home/operator/.npm/_logs/debug.log");
  Deno.exit(1);
}
if (name.startsWith("build-fails")) {
  line("build", 3);
  console.error("node source failed (exit 2) in " + folder + "/llama");
  Deno.exit(1);
}
await new Promise((resolve) => setTimeout(resolve, name.startsWith("slow") ? 1500 : 300));
line("download", 10);
`;

async function setUp() {
  const engineDir = await Deno.makeTempDir({ prefix: "edgenode-installer-" });
  const scripts = join(engineDir, "scripts");
  await Deno.mkdir(scripts);
  await Deno.writeTextFile(join(scripts, "engine_install.js"), FAKE_INSTALLER);
  const job = (name: string, setting: InstallJob["setting"] = "vulkan"): InstallJob => ({
    folder: join(engineDir, name),
    engineDir,
    scripts,
    backend: "vulkan",
    setting,
  });
  const runs = (name: string) =>
    Deno.readTextFile(join(engineDir, `runs-${name}`)).then((text) => text.length, () => 0);
  return {
    engineDir,
    job,
    runs,
    [Symbol.asyncDispose]: () => Deno.remove(engineDir, { recursive: true }),
  };
}

Deno.test("a failed install's 503 names no host path; npm is not tried again for a while", async () => {
  await using setup = await setUp();
  const error = await joinInstall(setup.job("npm-fails")).done.catch((error) => error);
  assert.ok(error instanceof Unavailable);
  assert.match(error.message, /^the inference engine could not be installed: npm install failed/);
  assert.doesNotMatch(error.message, /edgenode-installer|\/home|\/tmp|operator/);
  assert.match(error.message, /<path>/);
  // The next load answers at once, saying when it is tried again; the installer ran once.
  const again = await joinInstall(setup.job("npm-fails")).done.catch((error) => error);
  assert.ok(again instanceof Unavailable);
  assert.match(again.message, /tried again by the first load after .*, in 5 min\)$/);
  assert.ok(Number(again.details.retryAfterSeconds) > 200);
  assert.equal(await setup.runs("npm-fails"), 1);
});

Deno.test("a failed source build makes the backend unusable: the status says why", async () => {
  await using setup = await setUp();
  const job = { ...setup.job("build-fails", "metal"), build: { architectures: "87" } };
  const error = await joinInstall(job).done.catch((error) => error);
  assert.ok(error instanceof Unavailable);
  assert.doesNotMatch(error.message, /edgenode-installer/);
  const status = engineStatus("metal");
  assert.equal(status.error, error.message);
  assert.equal(status.backend, "vulkan");
  assert.equal(status.installing, undefined);
});

Deno.test("engines of one node share one install of a folder; the backend is the job's", async () => {
  await using setup = await setUp();
  const seen: string[] = [];
  const first = joinInstall(setup.job("shared"));
  const second = joinInstall(setup.job("shared"));
  await new Promise((resolve) => setTimeout(resolve, 200));
  seen.push(engineStatus("vulkan").installing?.backend ?? "none");
  await Promise.all([first.done, second.done]);
  assert.equal(await setup.runs("shared"), 1);
  assert.deepEqual(seen, ["vulkan"]);
});

Deno.test("one install ending leaves the status's installing while another runs", async () => {
  await using setup = await setUp();
  const slow = joinInstall(setup.job("slow", false));
  const quick = joinInstall(setup.job("quick", false));
  await quick.done;
  assert.ok(engineStatus(false).installing, "cleared while the slow install runs");
  await slow.done;
  assert.equal(engineStatus(false).installing, undefined);
});

Deno.test("the last engine leaving an install stops its installer; nothing is kept as failed", async () => {
  await using setup = await setUp();
  const started = Date.now();
  const first = joinInstall(setup.job("slow-stopped"));
  const second = joinInstall(setup.job("slow-stopped"));
  first.leave();
  await new Promise((resolve) => setTimeout(resolve, 300));
  second.leave();
  const error = await second.done.catch((error) => error);
  assert.match(error.message, /was stopped/);
  assert.ok(Date.now() - started < 1400, "waited for the whole install");
  // Not a failure to back off from: the next load installs.
  await joinInstall(setup.job("slow-stopped")).done;
  assert.equal(await setup.runs("slow-stopped"), 2);
});

Deno.test("the installer's first words are its own, not Deno's notes before them", () => {
  const stderr = "\x1b[38;5;245mInfo\x1b[0m Failed to resolve 'git' for allow-run: cannot find " +
    "binary path\nWarning something\n\nnpm install failed (exit 1): npm error code E404\ntail";
  assert.equal(firstError(stderr), "npm install failed (exit 1): npm error code E404");
});
