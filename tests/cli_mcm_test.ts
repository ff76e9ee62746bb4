/**
 * The microservice commands of the CLI, run as users run them against a real node:
 * `containers`, `images`, `deploy` (the env a redeploy keeps or drops, the key kept out of every
 * output), and a missing file. (The README's and docs/' walkthrough runs in tests/readme_test.ts.)
 */
import assert from "node:assert/strict";
import { cliEnv, edgenode } from "./helpers/cli_env.ts";
import { EXAMPLES, getJson, mcm } from "../testing/mcm.ts";
import {
  LAUNCHER_PERMISSIONS,
  MAIN,
  startTestNode,
  type TestNode,
  withTempDir,
} from "../testing/node.ts";

const KEY = "a-deployment-key-nobody-may-see";
const CONFIG = { apiKey: KEY, discovery: { mdns: false } };

/** The CLI pointed at `node` with the deployment key in EDGENODE_KEY. */
function withKey(node: TestNode) {
  return async (args: string[], expectedCode = 0) => {
    const result = await edgenode(args, { EDGENODE_NODE: node.url, EDGENODE_KEY: KEY });
    assert.equal(result.code, expectedCode, `${args.join(" ")}:\n${result.stdout}${result.stderr}`);
    return result;
  };
}

/** The lines of a byte stream, as they come. */
async function* linesOf(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let pending = "";
  for await (const text of stream.pipeThrough(new TextDecoderStream())) {
    const parts = (pending + text).split("\n");
    pending = parts.pop()!;
    yield* parts;
  }
  if (pending) yield pending;
}

/**
 * `edgenode ARGS` left running (as cli_env.ts's edgenode runs it), its output read line by line
 * as it comes: `until(pattern)` resolves with the first stdout line that matches.
 */
function running(args: string[], env: Record<string, string>) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...LAUNCHER_PERMISSIONS, MAIN, ...args],
    clearEnv: true,
    env: cliEnv(env),
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines = linesOf(child.stdout);
  const seen: string[] = [];
  return {
    seen,
    async until(pattern: RegExp): Promise<string> {
      for (let next = await lines.next(); !next.done; next = await lines.next()) {
        seen.push(next.value);
        if (pattern.test(next.value)) return next.value;
      }
      throw new Error(`the output ended without ${pattern}:\n${seen.join("\n")}`);
    },
    async end() {
      for (let next = await lines.next(); !next.done; next = await lines.next()) {
        seen.push(next.value);
      }
      const stderr = await new Response(child.stderr).text();
      return { code: (await child.status).code, stderr };
    },
  };
}

/** hello-mim built once into `dir`, as `edgenode image build` writes it. */
async function helloImage(dir: string): Promise<string> {
  const result = await edgenode(
    ["image", "build", `${EXAMPLES}hello-mim`, "-o", `${dir}/hello-mim.tar`],
    {},
  );
  assert.equal(result.code, 0, result.stderr);
  return `${dir}/hello-mim.tar`;
}

Deno.test("containers ls, logs, rm and images ls, rm, as tables and as JSON", () =>
  withTempDir(async (dir) => {
    await using node = await startTestNode({ config: CONFIG });
    const cli = withKey(node);
    const tar = await helloImage(dir);
    const deployed = await cli(["deploy", tar, "--name", "greeter", "--base-path", "/g/v1"]);
    const url = /^serving at (\S+)$/m.exec(deployed.stdout)?.[1];
    assert.ok(url?.endsWith("/g/v1/"), deployed.stdout);
    await getJson(`${url}sayHello/Ada`);

    const table = (await cli(["containers", "ls"])).stdout.trimEnd().split("\n");
    assert.match(table[0], /^NAME\s+ID\s+IMAGE\s+STATE\s+RESTARTS\s+URL$/);
    assert.deepEqual(table[1].split(/\s+/), [
      "greeter",
      "api-greeter",
      "hello-mim",
      "started",
      "0",
      url,
    ]);
    assert.equal(table.length, 2);
    const listed = JSON.parse((await cli(["containers", "ls", "--json"])).stdout);
    assert.deepEqual(listed.data.map((c: { id: string }) => c.id), ["api-greeter"]);

    const logs = (await cli(["containers", "logs", "greeter"])).stdout;
    assert.match(
      logs,
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} {2}node {3}started in \d+ ms( \(a warm spare\))?$/m,
    );
    assert.match(logs, /^\S+ \S+ {2}info {3}GET \/sayHello\/Ada$/m, "the microservice's own line");
    const byId = JSON.parse((await cli(["containers", "logs", "api-greeter", "--json"])).stdout);
    assert.ok(byId.data.some((line: { message: string }) => line.message === "GET /sayHello/Ada"));
    const unknown = await cli(["containers", "logs", "nobody"], 1);
    assert.match(unknown.stderr, /^edgenode: reading the logs of nobody: 404 .*nobody/);

    const images = (await cli(["images", "ls"])).stdout.trimEnd().split("\n");
    assert.match(images[0], /^NAME\s+ID\s+SIZE\s+CONTAINERS\s+CREATED$/);
    assert.match(
      images[1],
      /^hello-mim\s+api-hello-mim\s+\d+ KiB\s+1\s+\d{4}-\d\d-\d\d \d\d:\d\d$/,
    );
    const inUse = await cli(["images", "rm", "hello-mim"], 1);
    assert.match(inUse.stderr, /409 .*used by api-greeter/);

    assert.match(
      (await cli(["containers", "rm", "greeter"])).stdout,
      /^removed greeter \(api-greeter\); its storage is kept .*--purge/m,
    );
    assert.equal(await fetch(`${url}sayHello/Ada`).then((r) => (r.body?.cancel(), r.status)), 404);
    await cli(["deploy", tar, "--name", "greeter", "--base-path", "/g/v1"]);
    const purged = JSON.parse(
      (await cli(["containers", "rm", "api-greeter", "--purge", "--json"])).stdout,
    );
    assert.deepEqual([purged.id, purged.state], ["api-greeter", "stopped"]);
    assert.equal(JSON.parse((await cli(["containers", "ls", "--json"])).stdout).data.length, 0);
    assert.match(
      (await cli(["images", "rm", "hello-mim"])).stdout,
      /^removed image hello-mim \(api-hello-mim\)$/m,
    );
    assert.deepEqual(JSON.parse((await cli(["images", "ls", "--json"])).stdout), { data: [] });
  }));

Deno.test("a redeploy says which env it runs with and what it dropped; --keep-env and the served env keep them", () =>
  withTempDir(async (dir) => {
    await using node = await startTestNode({ config: CONFIG });
    const cli = withKey(node);
    const tar = await helloImage(dir);
    const first = await cli([
      "deploy",
      tar,
      "--name",
      "svc",
      "--base-path",
      "/svc/v1",
      "--env",
      "A=secret-a",
      "--env",
      "B=2",
    ]);
    assert.match(
      first.stdout,
      /^deployed svc \(image hello-mim\): started\nenv: A, B\nserving at /m,
    );
    assert.ok(!first.stdout.includes("secret-a"), "env values are not printed");
    const url = /^serving at (\S+)$/m.exec(first.stdout)![1];

    const again = await cli(["deploy", tar, "--name", "svc", "--env", "A=1"]);
    assert.match(again.stdout, /^redeployed svc \(image hello-mim\): started\nenv: A$/m);
    assert.match(again.stdout, /^dropped env: B \(a redeploy replaces the env.*--keep-env\)$/m);
    assert.match(
      again.stdout,
      /^base path moved from \/[^/]+\/svc\/v1 \(give --base-path \/svc\/v1 /m,
    );

    const kept = await cli([
      "deploy",
      tar,
      "--name",
      "svc",
      "--base-path",
      "/svc/v1",
      "--env",
      "B=3",
    ]);
    assert.ok(kept.stdout.includes(`serving at ${url}\n`));
    const keep = await cli(["deploy", tar, "--name", "svc", "--keep-env", "--env", "C=4"]);
    assert.match(keep.stdout, /^env: B, C$/m);
    assert.ok(!/dropped|moved/.test(keep.stdout), keep.stdout);
    assert.ok(keep.stdout.includes(`serving at ${url}\n`), "the base path kept");
    assert.deepEqual(
      [(await getJson(`${url}env`)).body.B, (await getJson(`${url}env`)).body.C],
      ["3", "4"],
    );

    // The API: the env GET answers, posted back, is the same deployment (a restart).
    const served = await (await mcm(node, "/containers/svc")).json();
    const restarted = await mcm(node, "/containers", {
      method: "POST",
      body: JSON.stringify({ name: "svc", image: "hello-mim", env: served.env }),
      headers: { "Content-Type": "application/json" },
    });
    const body = await restarted.json();
    assert.equal(restarted.status, 200, JSON.stringify(body));
    assert.equal(body.env["MCM.BASE_API_PATH"], served.env["MCM.BASE_API_PATH"]);
    assert.equal((await getJson(`${url}env`)).status, 200, "still served at its URL");
  }));

Deno.test("the deployment key never appears in any output: from EDGENODE_KEY, from --key-file", () =>
  withTempDir(async (dir) => {
    await using node = await startTestNode({ config: CONFIG });
    const tar = await helloImage(dir);
    await Deno.writeTextFile(`${dir}/key`, `${KEY}\n`, { mode: 0o600 });
    await Deno.writeTextFile(`${dir}/wrong`, "a-wrong-key-also-kept-secret", { mode: 0o600 });
    const runs = [
      await edgenode(["deploy", tar, "--name", "k"], {
        EDGENODE_NODE: node.url,
        EDGENODE_KEY: KEY,
      }),
      await edgenode([
        "deploy",
        tar,
        "--name",
        "k",
        "--json",
        "--node",
        node.url,
        "--key-file",
        `${dir}/key`,
      ], {}),
      await edgenode(
        ["containers", "ls", "--json", "--node", node.url, "--key-file", `${dir}/key`],
        {},
      ),
      // The credential's flags may come before the subcommand, as the global ones may.
      await edgenode(
        ["containers", "--key-file", `${dir}/key`, "--node", node.url, "ls", "--json"],
        {},
      ),
      await edgenode(["deploy", tar, "--node", node.url, "--key-file", `${dir}/wrong`], {}),
      await edgenode(["deploy", tar, "--node", "http://127.0.0.1:9"], { EDGENODE_KEY: KEY }),
    ];
    assert.deepEqual(runs.map((run) => run.code), [0, 0, 0, 0, 1, 1], JSON.stringify(runs));
    assert.equal(runs[3].stdout, runs[2].stdout, "the same list, flags before or after");
    assert.match(runs[4].stderr, /403/);
    for (const { stdout, stderr } of runs) {
      assert.ok(!`${stdout}${stderr}`.includes(KEY), `the key in:\n${stdout}${stderr}`);
      assert.ok(
        !`${stdout}${stderr}`.includes("a-wrong-key"),
        `the wrong key in:\n${stdout}${stderr}`,
      );
    }
    await Deno.chmod(`${dir}/key`, 0o644);
    const loose = await edgenode([
      "containers",
      "ls",
      "--node",
      node.url,
      "--key-file",
      `${dir}/key`,
    ], {});
    assert.equal(loose.code, 0, loose.stderr);
    assert.equal(loose.stderr, `warning: other users may read ${dir}/key; chmod 600 ${dir}/key\n`);
    const both = await edgenode(["containers", "ls", "--key", KEY, "--key-file", `${dir}/key`], {});
    assert.deepEqual([both.code, both.stderr], [
      2,
      "edgenode: give --key or --key-file, not both\n",
    ]);
    const none = await edgenode(["containers", "ls", "--node", node.url], {});
    assert.equal(none.code, 2);
    assert.match(none.stderr, /^edgenode: no credential: set EDGENODE_KEY .*--key-file FILE\n$/);
  }));

Deno.test("a missing file: one line naming it, exit 2", async () => {
  for (const args of [["image", "push", "/nonexist.tar"], ["deploy", "/nonexist.tar"]]) {
    const result = await edgenode(args, { EDGENODE_KEY: KEY });
    assert.deepEqual(
      [result.code, result.stderr],
      [2, "edgenode: cannot read /nonexist.tar: no such file\n"],
      args.join(" "),
    );
  }
  const keyFile = await edgenode(["containers", "ls", "--key-file", "/nonexist.key"], {});
  assert.deepEqual([keyFile.code, keyFile.stderr], [
    2,
    "edgenode: cannot read /nonexist.key: no such file\n",
  ]);
});

Deno.test("containers stop, restart and logs -f: the log followed until the container is removed", () =>
  withTempDir(async (dir) => {
    await using node = await startTestNode({ config: CONFIG });
    const cli = withKey(node);
    const tar = await helloImage(dir);
    const deployed = await cli(["deploy", tar, "--name", "greeter", "--base-path", "/g/v1"]);
    const url = /^serving at (\S+)$/m.exec(deployed.stdout)![1];
    const follower = running(["containers", "logs", "greeter", "-f"], {
      EDGENODE_NODE: node.url,
      EDGENODE_KEY: KEY,
    });
    await follower.until(/ {2}node {3}started in \d+ ms/);
    await getJson(`${url}sayHello/Follow`);
    await follower.until(/ {2}info {3}GET \/sayHello\/Follow$/);

    assert.equal(
      (await cli(["containers", "stop", "greeter"])).stdout,
      "stopped greeter (api-greeter); 'edgenode containers restart greeter' starts it again\n",
    );
    await follower.until(/ {2}node {3}stopped$/);
    const stopped = await getJson(`${url}sayHello/Ada`);
    assert.equal(stopped.status, 503);
    assert.match(stopped.body.error.message, /container api-greeter is stopped/);
    const table = (await cli(["containers", "ls"])).stdout.trimEnd().split("\n");
    assert.equal(table[1].split(/\s+/)[3], "stopped");

    assert.equal(
      (await cli(["containers", "restart", "greeter"])).stdout,
      "restarted greeter (api-greeter): started\n",
    );
    await follower.until(/ {2}node {3}started in \d+ ms/);
    assert.equal((await getJson(`${url}sayHello/Ada`)).status, 200);
    const again = JSON.parse(
      (await cli(["containers", "restart", "api-greeter", "--json"])).stdout,
    );
    assert.deepEqual([again.id, again.state, again.restarts], ["api-greeter", "started", 0]);

    await cli(["containers", "rm", "greeter"]);
    const ended = await follower.end();
    assert.deepEqual(ended, {
      code: 0,
      stderr: "edgenode: container api-greeter was removed; the log ends here\n",
    });

    const usage = await cli(["containers", "stop"], 2);
    assert.equal(usage.stderr, "edgenode: usage: edgenode containers stop NAME|ID\n");
    const unknown = await cli(["containers", "restart", "nobody"], 1);
    assert.match(unknown.stderr, /^edgenode: restarting container nobody: 404 .*nobody/);
    const gone = await cli(["containers", "logs", "nobody", "--follow"], 1);
    assert.match(gone.stderr, /^edgenode: following the logs of nobody: 404 .*nobody/);
    const help = (await cli(["containers", "--help"])).stdout;
    for (const usageLine of ["logs NAME|ID [-f|--follow]", "stop NAME|ID", "restart NAME|ID"]) {
      assert.ok(help.includes(`edgenode containers ${usageLine}`), help);
    }
  }));
