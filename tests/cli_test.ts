/**
 * The client commands, run as users run them against a real node: human and --json output,
 * progress on a pipe, exit codes, and Ctrl-C during a pull.
 */
import assert from "node:assert/strict";
import { startFileServer } from "../testing/file_server.ts";
import { cliToken, makeIssuer } from "../testing/identity.ts";
import {
  ggufBytes,
  LAUNCHER_PERMISSIONS,
  listFiles,
  MAIN,
  runEdgenode,
  startTestNode,
  type TestNode,
  waitFor,
  withTempDir,
} from "../testing/node.ts";
import { edgenodeOnTerminal, HAS_SCRIPT } from "./helpers/cli_env.ts";

/** `edgenode ARGS` against `node`, the way its owner runs it: the key from its data dir. */
function cli(node: TestNode, args: string[]) {
  return runEdgenode(args, { EDGENODE_NODE: node.url, EDGENODE_DATA_DIR: node.dataDir });
}

/** A node named "den" that trusts the issuer of `trustFile`. */
function trustingNode(trustFile: string): Promise<TestNode> {
  return startTestNode({
    args: ["--trust", trustFile],
    config: { apiKey: "a-test-key-of-enough-length", nodeName: "den", discovery: { mdns: false } },
  });
}

Deno.test("models commands: add, push, ls, show, set, pull, cat, rm, in both output modes", () =>
  withTempDir(async (dir) => {
    await using node = await startTestNode({ config: { apiKey: "a-test-key-of-enough-length" } });
    await using files = startFileServer();
    const bytes = ggufBytes(300_000);
    await Deno.writeFile(`${dir}/m.gguf`, bytes);

    const added = await cli(node, ["models", "add", "m1", "--kind", "llm", "--ctx", "4096"]);
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, /added m1 \(llm 1\.0\.0, not ready/);
    const pushed = await cli(node, ["models", "push", "m1", `${dir}/m.gguf`]);
    assert.equal(pushed.code, 0, pushed.stderr);
    assert.match(pushed.stdout, /pushed m1: 293 KiB, ready/);
    assert.match(
      pushed.stderr,
      /push m1 100% \(293 KiB of 293 KiB\)/,
      "plain progress on a pipe",
    );
    assert.ok(!pushed.stderr.includes("\r"), "no redrawn bar when stderr is not a terminal");

    const url = files.serve("/m2.gguf", bytes);
    const pulled = await cli(node, ["models", "pull", "m2", url, "--json"]);
    assert.equal(pulled.code, 0, pulled.stderr);
    assert.equal(JSON.parse(pulled.stdout).readyToUse, true);

    const broken = await cli(node, [
      "models",
      "pull",
      "m4",
      files.serve("/gone.gguf", bytes, { status: 404 }),
    ]);
    assert.equal(broken.code, 1, broken.stdout);
    assert.match(broken.stderr, /pulling m4: .*404/, "the node's message");
    assert.equal((await cli(node, ["models", "rm", "m4"])).code, 1, "no record left behind");

    const table = await cli(node, ["models", "ls"]);
    const lines = table.stdout.trim().split("\n");
    assert.match(lines[0], /^ID\s+KIND\s+VERSION\s+SIZE\s+READY\s+CREATED$/);
    assert.match(lines[1], /^m1\s+llm\s+1\.0\.0\s+293 KiB\s+yes\s+\d{4}-\d\d-\d\d \d\d:\d\d$/);
    assert.equal(lines.length, 3);
    const listed = JSON.parse((await cli(node, ["models", "ls", "--json", "--ready"])).stdout);
    assert.deepEqual(listed.data.map((m: { id: string }) => m.id), ["m1", "m2"]);

    await cli(node, ["models", "set", "m1", "--ctx", "8192"]);
    const shown = JSON.parse((await cli(node, ["models", "show", "m1", "--json"])).stdout);
    assert.equal(shown.gguf.initContextSize, 8192);
    assert.match((await cli(node, ["models", "show", "m1"])).stdout, /^ready:\s+yes$/m);

    const cat = await new Deno.Command(Deno.execPath(), {
      args: ["run", ...LAUNCHER_PERMISSIONS, MAIN, "models", "cat", "m2"],
      env: { EDGENODE_NODE: node.url, EDGENODE_DATA_DIR: node.dataDir },
      stdout: "piped",
    }).output();
    assert.deepEqual(cat.stdout, bytes);

    assert.match((await cli(node, ["models", "rm", "m2"])).stdout, /deleted m2/);
    const missing = await cli(node, ["models", "show", "m2"]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /404 model 'm2' does not exist/);
    const usage = await cli(node, ["models", "add", "m3"]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /so its kind cannot be read: give --kind/);
    const wrongKey = await runEdgenode(["models", "rm", "m1", "--api-key", "wrong-key"], {
      EDGENODE_NODE: node.url,
    });
    assert.equal(wrongKey.code, 1);
    assert.match(wrongKey.stderr, /403 incorrect API key/);
    const help = await runEdgenode(["models", "pull", "--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /edgenode models pull ID URL/);
    assert.match(help.stdout, /--json/);
    const unreachable = await runEdgenode(["models", "ls", "--node", "http://127.0.0.1:1"]);
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stderr, /cannot reach the node/);
  }));

Deno.test("Ctrl-C during a pull cancels it and leaves no partial file, nor the record it made", async () => {
  await using node = await startTestNode({ config: { apiKey: "a-test-key-of-enough-length" } });
  await using files = startFileServer();
  const url = files.serve("/slow.gguf", ggufBytes(2_000_000), { bytesPerSecond: 200_000 });
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...LAUNCHER_PERMISSIONS, MAIN, "models", "pull", "slow", url],
    env: { EDGENODE_NODE: node.url, EDGENODE_DATA_DIR: node.dataDir, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  await waitFor(async () => {
    const response = await fetch(`${node.storeUrl}/models/slow`);
    await response.body?.cancel();
    return response.status === 200;
  }, "the record");
  await new Promise((resolve) => setTimeout(resolve, 700));
  child.kill("SIGINT");
  const output = await child.output();
  assert.equal(output.code, 130, new TextDecoder().decode(output.stderr));
  assert.match(
    new TextDecoder().decode(output.stderr),
    /pull of slow cancelled; the record it created is removed/,
  );
  await waitFor(
    async () => (await listFiles(`${node.dataDir}/models`)).length === 0,
    "no partial file",
  );
  const record = await fetch(`${node.storeUrl}/models/slow`);
  await record.body?.cancel();
  assert.equal(record.status, 404, "the record the pull created is gone");
});

Deno.test("identity commands: me, associate, nodes, info", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    await using node = await trustingNode(issuer.trustFile);
    const me = JSON.parse((await cli(node, ["me", "--json"])).stdout);
    assert.equal(me.name, "den");
    assert.match((await cli(node, ["me"])).stdout, /^account\s+\(none\)$/m);
    const token = await cliToken(issuer, "acct-7", "edge:account:associate");
    const associated = await cli(node, ["associate", token]);
    assert.equal(associated.code, 0, associated.stderr);
    assert.match(associated.stdout, /associated: account acct-7/);
    assert.match((await cli(node, ["me"])).stdout, /^account\s+acct-7$/m);
    const refused = await cli(node, ["associate", "a.b.c"]);
    assert.equal(refused.code, 1);
    const nodes = await cli(node, ["nodes"]);
    assert.match(
      nodes.stdout,
      new RegExp(`^${me.nodeId.slice(0, 16)}\\s+den\\s+acct-7\\s+http://127.0.0.1`, "m"),
    );
    const info = JSON.parse((await cli(node, ["info", "--types", "self", "--json"])).stdout);
    assert.equal(info.data.self.id, me.nodeId);
    const bad = await cli(node, ["nodes", "--type", "everywhere"]);
    assert.equal(bad.code, 2);
  }));

Deno.test("on a terminal, push draws a progress bar in place", async (t) => {
  if (!HAS_SCRIPT) {
    t.step("skipped: no 'script' (util-linux) to give the command a pseudo-terminal", () => {});
    return;
  }
  await withTempDir(async (dir) => {
    await using node = await startTestNode({ config: { apiKey: "a-test-key-of-enough-length" } });
    await Deno.writeFile(`${dir}/m.gguf`, ggufBytes(2_000_000));
    assert.equal((await cli(node, ["models", "add", "tty", "--kind", "llm"])).code, 0);
    const { code, text } = await edgenodeOnTerminal(["models", "push", "tty", `${dir}/m.gguf`], {
      EDGENODE_NODE: node.url,
      EDGENODE_DATA_DIR: node.dataDir,
    });
    assert.equal(code, 0, text);
    assert.ok(text.includes("\r\x1b[2Kpush tty ["), "the bar is redrawn in place");
    assert.match(text, /push tty \[#{20}\] 1\.9 MiB \/ 1\.9 MiB/);
    assert.ok(!/push tty \d+%/.test(text), "no plain progress lines on a terminal");
  });
});

Deno.test("the other client commands in both output modes: models, identity, info, images", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    await using node = await trustingNode(issuer.trustFile);
    await using files = startFileServer();
    const bytes = ggufBytes(200_000);
    await Deno.writeFile(`${dir}/m.gguf`, bytes);
    const json = async (args: string[]) => {
      const result = await cli(node, [...args, "--json"]);
      assert.equal(result.code, 0, `${args.join(" ")}: ${result.stderr}`);
      return JSON.parse(result.stdout);
    };
    const human = async (args: string[], expected: RegExp) => {
      const result = await cli(node, args);
      assert.equal(result.code, 0, `${args.join(" ")}: ${result.stderr}`);
      assert.match(result.stdout, expected);
      return result;
    };

    // Models: --json gives the node's objects; the default is a sentence.
    assert.equal(
      (await json(["models", "add", "j", "--kind", "vlm", "--version", "2"])).kind,
      "vlm",
    );
    assert.equal((await json(["models", "push", "j", `${dir}/m.gguf`])).totalSize, bytes.length);
    assert.equal((await json(["models", "set", "j", "--ctx", "2048"])).gguf.initContextSize, 2048);
    await human(["models", "set", "j", "--gpu-layers", "8"], /^gguf:\s+\{.*"initGpuLayerSize":8/m);
    assert.equal((await json(["models", "show", "j"])).gguf.initContextSize, 2048);
    const pulled = await human(
      ["models", "pull", "p", files.serve("/p.gguf", bytes)],
      /^pulled p: 195 KiB, ready$/m,
    );
    assert.match(pulled.stderr, /pull p 100% \(195 KiB of 195 KiB\)/, "plain progress on a pipe");
    assert.deepEqual(await json(["models", "rm", "p"]), {
      id: "p",
      object: "model",
      deleted: true,
    });

    // Identity: associate and unassociate, each way.
    const associate = await cliToken(issuer, "acct-9", "edge:account:associate");
    const unassociate = await cliToken(issuer, "acct-9", "edge:account:unassociate");
    assert.deepEqual(await json(["associate", associate]), { accountId: "acct-9" });
    await human(["unassociate", unassociate], /^unassociated: account acct-9$/m);
    await human(["associate", associate], /^associated: account acct-9$/m);
    assert.equal((await json(["unassociate", unassociate])).accountId, "acct-9");
    const me = await json(["me"]);
    assert.equal(me.accountId, "");

    // The mesh: info and nodes.
    await human(
      ["info"],
      new RegExp(`^self\\s+${me.nodeId.slice(0, 16)}  den  account -  http`, "m"),
    );
    assert.equal((await json(["nodes"])).data[0].id, me.nodeId);

    // Images: build, push and deploy.
    const built = await json(["image", "build", "examples/hello-fetch", "-o", `${dir}/f.tar`]);
    assert.equal(built.file, `${dir}/f.tar`);
    assert.ok(built.bundleBytes > 0);
    await human(["image", "build", "examples/hello-fetch", "-o", `${dir}/g.tar`], /^built /m);
    await human(
      ["image", "push", `${dir}/f.tar`],
      /^pushed image hello-fetch \(api-hello-fetch, /m,
    );
    const pushed = await json(["image", "push", `${dir}/g.tar`, "--name", "other"]);
    assert.equal(pushed.name, "other");
    const deployed = await json(["deploy", `${dir}/f.tar`, "--name", "greeter"]);
    assert.equal(deployed.state, "started");
    await human(
      ["deploy", `${dir}/f.tar`, "--name", "greeter"],
      // The second deploy of a name is a redeploy, which lists the environment it runs with.
      /^redeployed greeter \(image hello-fetch\): started\nenv: \(none\)\nserving at http:\/\/127\.0\.0\.1:\d+\/\S+\/$/m,
    );
  }));
