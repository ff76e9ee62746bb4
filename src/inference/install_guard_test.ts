/**
 * The install's lock and litter (install_guard.ts), and the real installer (engine_install.ts)
 * told to stop while a stand-in npm runs: its npm ends, its temporary folder and lock go.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { lockFolder, removeDeadPartials } from "./install_guard.ts";

/** Whether process `pid` runs (the test may signal any process; the installer may not). */
function alive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}

Deno.test("the lock: a second taker waits for the first; one left by a killed holder is free", async () => {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-lock-" });
  try {
    const folder = join(dir, "engine");
    const release = await lockFolder(folder);
    assert.equal(await Deno.readTextFile(`${folder}.lock`), `${Deno.pid}\n`);
    const order: string[] = [];
    const second = lockFolder(folder).then((release) => {
      order.push("second");
      return release;
    });
    await new Promise((resolve) => setTimeout(resolve, 150));
    order.push("first released");
    await release();
    await (await second)();
    assert.deepEqual(order, ["first released", "second"]);
    await assert.rejects(Deno.stat(`${folder}.lock`), Deno.errors.NotFound);
    // A holder killed mid-install: its file stays, its lock went with it.
    const holder = new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `const f = await Deno.open(${JSON.stringify(`${folder}.lock`)}, ` +
        `{ write: true, create: true }); await f.lock(true); await f.write(new TextEncoder()` +
        `.encode(String(Deno.pid))); console.log("held"); setInterval(() => {}, 1000);`,
      ],
      stdout: "piped",
    }).spawn();
    const reader = holder.stdout.pipeThrough(new TextDecoderStream()).getReader();
    assert.match((await reader.read()).value ?? "", /held/);
    let got = false;
    const third = lockFolder(folder).then((release) => {
      got = true;
      return release;
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(got, false, "took a lock a live process holds");
    holder.kill("SIGKILL");
    await holder.status;
    await reader.cancel();
    await (await third)();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the lock of a first install into an engine folder that does not exist yet", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const release = await lockFolder(join(dir, "engine", "node-llama-cpp-x"));
    assert.equal(
      await Deno.readTextFile(join(dir, "engine", "node-llama-cpp-x.lock")),
      `${Deno.pid}\n`,
    );
    await release();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("unfinished installs' temporary folders go; other names stay, links are not followed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-partials-" });
  try {
    const folder = join(dir, "node-llama-cpp-3.22.1-linux-x64");
    for (const suffix of [".partial-12", ".partial-x", "-other"]) {
      await Deno.mkdir(`${folder}${suffix}/node_modules`, { recursive: true });
    }
    const outside = join(dir, "outside");
    await Deno.mkdir(outside);
    await Deno.writeTextFile(join(outside, "kept"), "");
    await Deno.symlink(outside, `${folder}.partial-13`);
    await removeDeadPartials(folder);
    const left = (await Array.fromAsync(Deno.readDir(dir))).map((entry) => entry.name).sort();
    assert.deepEqual(left, [
      "node-llama-cpp-3.22.1-linux-x64-other",
      "node-llama-cpp-3.22.1-linux-x64.partial-x",
      "outside",
    ]);
    await Deno.stat(join(outside, "kept"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "the installer told to stop ends its npm and removes its temporary folder and lock",
  ignore: Deno.build.os === "windows",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "edgenode-stop-" });
    try {
      // A stand-in npm that takes its time, leaving its pid where the test finds it.
      const bin = join(dir, "bin");
      await Deno.mkdir(bin);
      await Deno.writeTextFile(
        join(bin, "npm"),
        `#!/bin/sh\necho $$ > "${dir}/npm.pid"\nexec sleep 30\n`,
      );
      await Deno.chmod(join(bin, "npm"), 0o755);
      const engineDir = join(dir, "engine");
      await Deno.mkdir(engineDir);
      const folder = join(engineDir, "node-llama-cpp-test");
      const installer = new URL("./engine_install.ts", import.meta.url).pathname;
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--no-prompt",
          "--allow-run=npm,git,node",
          "--allow-env",
          "--allow-read",
          `--allow-write=${engineDir}`,
          installer,
          folder,
          "cpu",
        ],
        env: { PATH: `${bin}:${Deno.env.get("PATH")}` },
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const pidFile = join(dir, "npm.pid");
      for (let tries = 0; !await Deno.stat(pidFile).then(() => true, () => false); tries++) {
        assert.ok(tries < 300, "npm never started");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const npmPid = Number((await Deno.readTextFile(pidFile)).trim());
      child.kill("SIGTERM");
      const status = await child.status;
      await child.stdout.cancel();
      await child.stderr.cancel();
      assert.equal(status.success, false);
      const left = (await Array.fromAsync(Deno.readDir(engineDir))).map((entry) => entry.name);
      assert.deepEqual(left, []);
      assert.equal(alive(npmPid), false, "npm outlived its installer");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
