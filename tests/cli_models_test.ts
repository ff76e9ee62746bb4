/**
 * What a new user hit with the client commands (issue 22): `models pull` of a local path or a
 * download the node refuses, `pull` into a ready model, `add` on an existing model, the one
 * rule of push and pull for a missing record (the kind read from the file) and a ready one
 * (kept without --force), `set` with no flags, an unreachable node, insight's errors, `cat | head`, and
 * `nodes decrypt` of a missing file. Each runs the CLI as users do, against a real node.
 */
import assert from "node:assert/strict";
import { startFileServer } from "../testing/file_server.ts";
import { GgufWriter } from "../testing/gguf_writer.ts";
import {
  ggufBytes,
  LAUNCHER_PERMISSIONS,
  MAIN,
  runEdgenode,
  sha256Hex,
  startTestNode,
  type TestNode,
  withTempDir,
} from "../testing/node.ts";

/** `edgenode ARGS` against `node`, the way its owner runs it: the key from its data dir. */
function cli(node: TestNode, args: string[]) {
  return runEdgenode(args, { EDGENODE_NODE: node.url, EDGENODE_DATA_DIR: node.dataDir });
}

/** The record `id` as the node has it; undefined when there is none. */
async function record(node: TestNode, id: string) {
  const response = await fetch(`${node.storeUrl}/models/${id}`);
  if (response.status === 404) return void await response.body?.cancel();
  return await response.json();
}

/** A port of 127.0.0.1 that nothing listens on (it was free a moment ago). */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

Deno.test("models: refused and failed pulls, pull into a ready model, add, set, push", async (t) => {
  await using node = await startTestNode({ config: { apiKey: "a-test-key-of-enough-length" } });
  await using files = startFileServer();
  const first = ggufBytes(100_000, 1);
  const second = ggufBytes(120_000, 2);
  const url = files.serve("/first.gguf", first);

  await t.step("pull of a local path: a clear line, exit 2, no record", async () => {
    const pulled = await cli(node, ["models", "pull", "m1", "/tmp/x"]);
    assert.equal(pulled.code, 2, pulled.stderr);
    assert.match(
      pulled.stderr,
      /^edgenode: pull takes an http:\/\/ or https:\/\/ URL .*'\/tmp\/x'/,
    );
    assert.match(pulled.stderr, /edgenode models push m1 FILE/);
    assert.equal(await record(node, "m1"), undefined, "no junk record");
  });

  await t.step("a download the node refuses: its own message, and the record goes", async () => {
    // Only the node knows that a vlm needs its projector: the client cannot check it first.
    const pulled = await cli(node, ["models", "pull", "v1", url, "--kind", "vlm"]);
    assert.equal(pulled.code, 1);
    assert.match(pulled.stderr, /pulling v1: 400 model 'v1' is a vlm: give 'mmprojUrl'/);
    assert.ok(!pulled.stderr.includes("Bad Request"), pulled.stderr);
    assert.equal(await record(node, "v1"), undefined, "the record the pull created is removed");
  });

  await t.step(
    "a download that fails: the record it created goes, an existing one stays",
    async () => {
      const gone = files.serve("/gone.gguf", first, { status: 404 });
      const failed = await cli(node, ["models", "pull", "m4", gone]);
      assert.equal(failed.code, 1);
      assert.match(failed.stderr, /pulling m4: .*404/);
      assert.equal(await record(node, "m4"), undefined);
      assert.equal((await cli(node, ["models", "add", "m5", "--kind", "llm"])).code, 0);
      assert.equal((await cli(node, ["models", "pull", "m5", gone])).code, 1);
      assert.equal((await record(node, "m5"))?.readyToUse, false, "a record it did not create");
    },
  );

  await t.step(
    "pull into a ready model keeps the file and says so; --force replaces it",
    async () => {
      assert.equal((await cli(node, ["models", "pull", "r", url, "--version", "2.0.0"])).code, 0);
      const again = await cli(node, ["models", "pull", "r", files.serve("/second.gguf", second)]);
      assert.equal(again.code, 0, again.stderr);
      assert.match(
        again.stdout,
        /^r is already ready \(98 KiB\); nothing was downloaded\. .*--force/,
      );
      assert.equal((await record(node, "r")).sha256, await sha256Hex(first));
      const forced = await cli(node, [
        "models",
        "pull",
        "r",
        `${files.url}/second.gguf`,
        "--force",
      ]);
      assert.equal(forced.code, 0, forced.stderr);
      assert.match(forced.stdout, /^pulled r: 117 KiB, ready$/m);
      const model = await record(node, "r");
      assert.equal(model.sha256, await sha256Hex(second));
      assert.equal(model.version, "2.0.0", "the version stays");
    },
  );

  await t.step(
    "add on an existing model refuses and resets nothing; set changes the version",
    async () => {
      const added = await cli(node, ["models", "add", "r", "--kind", "llm", "--ctx", "9"]);
      assert.equal(added.code, 1);
      assert.match(
        added.stderr,
        /^edgenode: model 'r' already exists \(llm 2\.0\.0, ready\); change it with 'edgenode models set r/,
      );
      const kept = await record(node, "r");
      assert.equal(kept.version, "2.0.0");
      assert.equal(kept.gguf, undefined);
      const fresh = await cli(node, ["models", "add", "f", "--kind", "llm"]);
      assert.match(fresh.stdout, /^added f \(llm 1\.0\.0, not ready/, "the default on create");

      assert.equal((await cli(node, ["models", "set", "r", "--ctx", "4096"])).code, 0);
      const set = await cli(node, ["models", "set", "r", "--version", "2.1.0", "--json"]);
      assert.equal(set.code, 0, set.stderr);
      const model = JSON.parse(set.stdout);
      assert.equal(model.version, "2.1.0");
      assert.equal(model.gguf.initContextSize, 4096, "the settings stay");
      assert.equal(model.readyToUse, true);
    },
  );

  await t.step("set with no flags: a usage line naming them, exit 2", async () => {
    const set = await cli(node, ["models", "set", "r"]);
    assert.equal(set.code, 2);
    assert.match(set.stderr, /nothing to change: give at least one of --version V, .*--ctx N/);
  });

  await t.step(
    "push and pull make a missing record, the kind read from the file; --kind overrides",
    () =>
      withTempDir(async (dir) => {
        const bert = new GgufWriter().string("general.architecture", "bert").bytes();
        await Deno.writeFile(`${dir}/m.gguf`, first);
        await Deno.writeFile(`${dir}/vectors.gguf`, bert);
        await Deno.writeFile(`${dir}/model.onnx`, new TextEncoder().encode("an onnx protobuf"));
        const pushed = await cli(node, ["models", "push", "made", `${dir}/m.gguf`]);
        assert.equal(pushed.code, 0, pushed.stderr);
        assert.match(pushed.stdout, /^pushed made: 98 KiB, ready$/m);
        assert.deepEqual(
          [(await record(node, "made")).kind, (await record(node, "made")).version],
          ["llm", "1.0.0"],
        );
        const encoder = await cli(node, ["models", "push", "enc", `${dir}/vectors.gguf`]);
        assert.equal(encoder.code, 0, encoder.stderr);
        assert.equal((await record(node, "enc")).kind, "embed", "the header says it embeds");
        const pulled = await cli(node, ["models", "pull", "enc2", files.serve("/v.gguf", bert)]);
        assert.equal(pulled.code, 0, pulled.stderr);
        assert.equal((await record(node, "enc2")).kind, "embed", "read through a Range request");
        const given = await cli(node, ["models", "push", "g", `${dir}/m.gguf`, "--kind", "embed"]);
        assert.equal(given.code, 0, given.stderr);
        assert.equal((await record(node, "g")).kind, "embed");

        // A file that is not GGUF: one line asking for --kind, the same for push and pull.
        const onnx = await cli(node, ["models", "push", "o", `${dir}/model.onnx`]);
        assert.equal(onnx.code, 2);
        assert.equal(
          onnx.stderr,
          `edgenode: ${dir}/model.onnx is not a GGUF file, so its kind cannot be read: ` +
            "give --kind llm|vlm|embed|onnx\n",
        );
        const url = files.serve("/model.onnx", new TextEncoder().encode("an onnx protobuf"));
        const onnxUrl = await cli(node, ["models", "pull", "o", url]);
        assert.equal(onnxUrl.code, 2);
        assert.match(onnxUrl.stderr, /model\.onnx is not a GGUF file, .*give --kind/);
        assert.equal(await record(node, "o"), undefined, "no record without its kind");
        const added = await cli(node, ["models", "add", "o"]);
        assert.equal(added.code, 2);
        assert.match(added.stderr, /without a file, so its kind cannot be read: give --kind/);

        // An upload the node refuses: its message, and the record the push made goes.
        const zeroHeads = new GgufWriter().string("general.architecture", "llama")
          .u32("llama.attention.head_count", 0).bytes();
        await Deno.writeFile(`${dir}/bad.gguf`, zeroHeads);
        const refused = await cli(node, ["models", "push", "bad", `${dir}/bad.gguf`]);
        assert.equal(refused.code, 1);
        assert.match(refused.stderr, /^edgenode: uploading .*bad\.gguf: 400 /m);
        assert.equal(await record(node, "bad"), undefined);

        const missing = await cli(node, ["models", "push", "r", `${dir}/none.gguf`]);
        assert.equal(missing.code, 2);
        assert.equal(missing.stderr, `edgenode: cannot read ${dir}/none.gguf: no such file\n`);
      }),
  );

  await t.step(
    "push into a ready model keeps its file as pull does; --force replaces it",
    () =>
      withTempDir(async (dir) => {
        await Deno.writeFile(`${dir}/second.gguf`, second);
        const kept = await cli(node, ["models", "push", "made", `${dir}/second.gguf`]);
        assert.equal(kept.code, 0, kept.stderr);
        assert.equal(
          kept.stdout,
          "made is already ready (98 KiB); nothing was uploaded. " +
            `Add --force to replace it with ${dir}/second.gguf.\n`,
        );
        assert.ok(!/push made \d+%/.test(kept.stderr), "no upload");
        assert.equal((await record(node, "made")).sha256, await sha256Hex(first));
        const forced = await cli(node, ["models", "push", "made", `${dir}/second.gguf`, "--force"]);
        assert.equal(forced.code, 0, forced.stderr);
        assert.equal((await record(node, "made")).sha256, await sha256Hex(second));
      }),
  );

  await t.step("cat into a reader that goes away: exit 0, nothing on stderr", async () => {
    const big = ggufBytes(4_000_000, 3);
    assert.equal(
      (await cli(node, ["models", "pull", "big", files.serve("/big.gguf", big)])).code,
      0,
    );
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", ...LAUNCHER_PERMISSIONS, MAIN, "models", "cat", "big"],
      env: { EDGENODE_NODE: node.url, NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const reader = child.stdout.getReader();
    const { value } = await reader.read();
    assert.deepEqual(value?.slice(0, 4), big.slice(0, 4));
    await reader.cancel(); // `| head -c 10`: the pipe's reading end closes.
    const { code } = await child.status;
    const stderr = await new Response(child.stderr).text();
    assert.equal(stderr, "");
    assert.equal(code, 0);
  });
});

Deno.test("an unreachable node, insight's errors, nodes decrypt of a missing file", async (t) => {
  await t.step("unreachable: the URL, the reason and how to point elsewhere", async () => {
    const url = `http://127.0.0.1:${closedPort()}`;
    for (const args of [["models", "ls"], ["me"], ["info"], ["models", "cat", "x"]]) {
      const result = await runEdgenode([...args, "--node", url]);
      assert.equal(result.code, 1, args.join(" "));
      assert.equal(
        result.stderr,
        `edgenode: cannot reach the node at ${url} (connection refused); is it running? ` +
          "Point to another with --node URL or EDGENODE_NODE\n",
        args.join(" "),
      );
    }
    const pulled = await runEdgenode(["models", "pull", "m", "http://h/x"], { EDGENODE_NODE: url });
    assert.match(pulled.stderr, /cannot reach the node at .*EDGENODE_NODE\n$/);
  });

  await t.step("a server that is not a node: named, with how to point elsewhere", async () => {
    await using files = startFileServer();
    for (const args of [["models", "ls"], ["me"], ["nodes"], ["models", "cat", "x"]]) {
      const result = await runEdgenode([...args, "--node", files.url]);
      assert.equal(result.code, 1, args.join(" "));
      assert.match(
        result.stderr,
        new RegExp(
          `: ${files.url} answered \\d{3} \\(text/plain\\), not as an edgenode node does; ` +
            "point to the node with --node URL or EDGENODE_NODE\n$",
        ),
        args.join(" "),
      );
    }
  });

  await using node = await startTestNode({ config: { apiKey: "a-test-key-of-enough-length" } });
  await t.step("a missing or wrong API key: how to give the right one", async () => {
    for (const key of [[], ["--api-key", "not-the-key"]]) {
      const result = await runEdgenode(["models", "rm", "x", ...key], { EDGENODE_NODE: node.url });
      assert.equal(result.code, 1);
      assert.match(
        result.stderr,
        /(401 missing credentials|403 incorrect API key).*; pass the node's key with --api-key or EDGENODE_API_KEY, or, for a node on this machine, point EDGENODE_DATA_DIR at/,
      );
    }
  });

  await t.step("insight's errors are their message, not JSON", async () => {
    const info = await cli(node, ["info", "--types", "bogus"]);
    assert.equal(info.code, 1);
    assert.match(info.stderr, /^edgenode: reading the node's info: 400 unknown type 'bogus'/);
    const nodes = await cli(node, ["nodes", "--type", "account"]);
    assert.equal(nodes.code, 1);
    assert.match(nodes.stderr, /^edgenode: listing account nodes: 403 type=account needs/);
    for (const { stderr } of [info, nodes]) assert.ok(!/[{}]|statusCode/.test(stderr), stderr);
  });

  await t.step(
    "nodes decrypt of a missing file or token file: one line, exit 2",
    () =>
      withTempDir(async (dir) => {
        const missing = await runEdgenode(["nodes", "decrypt", "--token", "T", `${dir}/none`]);
        assert.equal(missing.code, 2);
        assert.equal(missing.stderr, `edgenode: cannot read ${dir}/none: no such file\n`);
        const tokenFile = await runEdgenode(["nodes", "decrypt", "--token-file", `${dir}/token`]);
        assert.equal(tokenFile.code, 2);
        assert.equal(tokenFile.stderr, `edgenode: cannot read ${dir}/token: no such file\n`);
      }),
  );
});
