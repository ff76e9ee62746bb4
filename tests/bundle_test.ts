/**
 * The bundle (`deno task bundle`) is self-contained: run by the plain deno binary with an empty
 * DENO_DIR, outside the repository and, where the test may create a network namespace, without
 * any network, it serves the registry, answers JSON-RPC and runs a container.
 */
import assert from "node:assert/strict";
import { packTar } from "modern-tar";
import { withTempDir } from "./helpers/node.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const DRIVER = new URL("./fixtures/bundle_driver.ts", import.meta.url).pathname;

/** Whether `unshare -n` works here (root, or user namespaces). */
async function canIsolateNetwork(): Promise<boolean> {
  return await new Deno.Command("unshare", { args: ["-n", "true"], stderr: "null" }).output()
    .then((output) => output.success, () => false);
}

Deno.test("the bundle runs with only the deno binary: registry, JSON-RPC, a container", () =>
  withTempDir(async (dir) => {
    const bundled = await new Deno.Command(Deno.execPath(), {
      args: ["bundle", "--platform=deno", "-o", `${dir}/edgenode.js`, "src/main.ts"],
      cwd: ROOT,
      stderr: "piped",
    }).output();
    assert.ok(bundled.success, new TextDecoder().decode(bundled.stderr));
    const script = new TextEncoder().encode(
      'mimikModule.exports = function (c, req, res) { res.end("hello from the bundle"); };',
    );
    await Deno.writeFile(
      `${dir}/hello.tar`,
      await packTar([{
        header: { name: "index.js", size: script.length, type: "file" },
        body: script,
      }]),
    );
    for (const sub of ["deno-dir", "data", "work"]) await Deno.mkdir(`${dir}/${sub}`);
    await Deno.copyFile(DRIVER, `${dir}/driver.ts`);
    const driver = [
      Deno.execPath(),
      "run",
      "--no-prompt",
      "--no-config",
      "--allow-all",
      `${dir}/driver.ts`,
      `${dir}/edgenode.js`,
      `${dir}/data`,
      `${dir}/hello.tar`,
    ];
    const isolated = await canIsolateNetwork();
    const shell = `${isolated ? "ip link set lo up && " : ""}exec ${
      driver.map((a) => `'${a}'`).join(" ")
    }`;
    const output = await new Deno.Command(isolated ? "unshare" : "sh", {
      args: isolated ? ["-n", "sh", "-c", shell] : ["-c", shell],
      cwd: `${dir}/work`,
      clearEnv: true,
      env: {
        DENO_DIR: `${dir}/deno-dir`,
        HOME: `${dir}/work`,
        PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
        NO_COLOR: "1",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(output.stdout);
    assert.ok(output.success, `${text}\n${new TextDecoder().decode(output.stderr)}`);
    const seen = JSON.parse(text.trim().split("\n").pop()!);
    assert.deepEqual(
      { ...seen, nodeId: typeof seen.nodeId },
      {
        created: 201,
        ready: true,
        nodeId: "string",
        image: 201,
        container: "started",
        answer: "hello from the bundle",
      },
    );
    if (!isolated) console.log("note: no network namespace here; ran with the network present");
  }));
