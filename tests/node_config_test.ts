import assert from "node:assert/strict";
import { TEST_ENGINE_DIR } from "../testing/engine.ts";
import { ModelListSchema } from "../gen/store/validators.ts";
import { expectError, expectJson } from "../testing/contract.ts";
import { makeIssuer, rpc } from "../testing/identity.ts";
import {
  randomMdnsPort,
  runEdgenode,
  startTestNode,
  waitFor,
  withTempDir,
} from "../testing/node.ts";

Deno.test("a fresh data directory gets a 0600 config with a random key, printed once", () =>
  withTempDir(async (dataDir) => {
    let key: string;
    {
      await using node = await startTestNode({ dataDir, firstStart: true });
      const printed = /Generated a new API key \(saved in (\S+), shown only now\):\n {2}(\S+)/.exec(
        node.output(),
      );
      assert.ok(printed, node.output());
      assert.equal(printed[1], `${await Deno.realPath(dataDir)}/config.json`);
      key = printed[2];
      assert.match(key, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(node.apiKey, key);
      assert.equal((await Deno.stat(`${dataDir}/config.json`)).mode! & 0o777, 0o600);
      assert.equal((await Deno.stat(dataDir)).mode! & 0o777, 0o700);
    }
    await using again = await startTestNode({ dataDir });
    assert.doesNotMatch(again.output(), /Generated a new API key/);
    assert.doesNotMatch(again.output(), new RegExp(key));
    assert.equal(again.apiKey, key);
  }));

Deno.test("EDGENODE_API_KEY overrides the config file's key", async () => {
  await using node = await startTestNode({ env: { EDGENODE_API_KEY: "from-the-environment-123" } });
  const config = JSON.parse(await Deno.readTextFile(`${node.dataDir}/config.json`));
  const post = (key: string) =>
    fetch(`${node.storeUrl}/models`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ id: "m", version: "1", kind: "llm" }),
    });
  await expectError(await post(config.apiKey), 403);
  assert.equal((await post("from-the-environment-123")).status, 201);
});

Deno.test("a config file without apiKey serves with EDGENODE_API_KEY", () =>
  withTempDir(async (dataDir) => {
    await Deno.writeTextFile(`${dataDir}/config.json`, JSON.stringify({ nodeName: "pi" }), {
      mode: 0o600,
    });
    await using node = await startTestNode({
      dataDir,
      env: { EDGENODE_API_KEY: "from-the-environment-123" },
    });
    const created = await fetch(`${node.storeUrl}/models`, {
      method: "POST",
      headers: {
        Authorization: "Bearer from-the-environment-123",
        "Content-Type": "application/json",
      },
      body: JSON.stringify({ id: "m", version: "1", kind: "llm" }),
    });
    assert.equal(created.status, 201);
    await created.body?.cancel();
  }));

Deno.test("a port in use or a host that is not this machine's: exit 2 naming the address", async () => {
  await using node = await startTestNode();
  const port = new URL(node.url).port;
  await withTempDir(async (dataDir) => {
    const taken = await runEdgenode([
      "serve",
      "--host",
      "127.0.0.1",
      "--port",
      port,
      "--data-dir",
      dataDir,
    ]);
    assert.equal(taken.code, 2, taken.stderr);
    assert.match(taken.stderr, new RegExp(`127\\.0\\.0\\.1:${port} is in use by another program`));
    // A fresh data directory: no key printed "shown only now" by a start that fails, none saved.
    assert.doesNotMatch(taken.stdout, /API key/);
    await assert.rejects(Deno.stat(`${dataDir}/config.json`), Deno.errors.NotFound);
    const host = await runEdgenode([
      "serve",
      "--host",
      "nosuchhost.invalid",
      "--data-dir",
      dataDir,
    ]);
    assert.equal(host.code, 2, host.stderr);
    assert.match(
      host.stderr,
      /cannot listen on nosuchhost\.invalid:8083: .*--host takes an address/,
    );
  });
});

Deno.test("on every interface, start-up names the dashboard at an address a browser opens", async () => {
  await using node = await startTestNode({
    host: "0.0.0.0",
    config: { apiKey: "a-test-key-of-enough-length", discovery: { mdns: false } },
  });
  const port = new URL(node.url).port;
  await waitFor(() => /dashboard at /.test(node.output()), "the dashboard line");
  const line = /dashboard at (\S+)(.*)/.exec(node.output())!;
  assert.equal(line[1], `http://127.0.0.1:${port}/`, line[0]);
  assert.doesNotMatch(line[0], /0\.0\.0\.0/);
  const page = await fetch(line[1]);
  assert.equal(page.status, 200);
  await page.body?.cancel();
});

Deno.test("bad configuration and flags exit with 2 and say what to fix", () =>
  withTempDir(async (dataDir) => {
    await Deno.writeTextFile(
      `${dataDir}/config.json`,
      JSON.stringify({ apiKey: "k", storePrefixes: ["ai/"], colour: 1 }),
    );
    const bad = await runEdgenode(["serve", "--data-dir", dataDir]);
    assert.equal(bad.code, 2);
    assert.match(
      bad.stderr,
      /config.json is not a valid config file: storePrefixes.0: must be a path like \/ai\/store\/v1/,
    );
    assert.match(bad.stderr, /unknown field 'colour' \(known fields: /);
    await Deno.writeTextFile(`${dataDir}/config.json`, JSON.stringify({ apiKey: "k", prot: 1 }));
    assert.match(
      (await runEdgenode(["serve", "--data-dir", dataDir])).stderr,
      /unknown field 'prot'; did you mean 'port'\?/,
    );
    await Deno.writeTextFile(`${dataDir}/config.json`, JSON.stringify({ nodeName: "pi" }));
    const keyless = await runEdgenode(["serve", "--data-dir", dataDir]);
    assert.equal(keyless.code, 2);
    assert.match(keyless.stderr, /config.json has no "apiKey": add one .* or set EDGENODE_API_KEY/);
    await Deno.writeTextFile(`${dataDir}/config.json`, "{oops");
    assert.match((await runEdgenode(["serve", "--data-dir", dataDir])).stderr, /is not valid JSON/);
    const missing = await runEdgenode([
      "serve",
      "--data-dir",
      dataDir,
      "--config",
      `${dataDir}/nope.json`,
    ]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /config file .*nope.json does not exist/);
    const port = await runEdgenode(["serve", "--data-dir", dataDir, "--port", "99999"]);
    assert.equal(port.code, 2);
    assert.match(port.stderr, /--port must be a number from 0 to 65535/);
    const flag = await runEdgenode(["serve", "--colour"]);
    assert.equal(flag.code, 2);
    assert.match(flag.stderr, /unknown option --colour/);
    const command = await runEdgenode(["frobnicate"]);
    assert.equal(command.code, 2);
    assert.match(command.stderr, /unknown command 'frobnicate'/);
    const typo = await runEdgenode(["modles"]);
    assert.equal(typo.code, 2);
    assert.equal(
      typo.stderr.trim(),
      "edgenode: unknown command 'modles'; did you mean 'models'? ('edgenode help' lists the commands)",
      "one line, not the whole help",
    );
  }));

Deno.test("help and version", async () => {
  const help = await runEdgenode(["help"]);
  assert.equal(help.code, 0);
  assert.match(
    help.stdout,
    /edgenode serve \[--host H\] \[--port N\] \[--data-dir DIR\] \[--config FILE\]/,
  );
  const version = await runEdgenode(["version"]);
  assert.match(version.stdout, /^edgenode \d+\.\d+\.\d+\n/);
});

Deno.test("the node runs with narrow permissions: its data dir, its address, no subprocesses", async () => {
  const argsOf = async (pid: number) => {
    // Deno guards /proc/<pid>/cmdline behind --allow-all; ps reads the same arguments.
    const ps = await new Deno.Command("ps", {
      args: ["-o", "args=", "-p", String(pid)],
      stdout: "piped",
    }).output();
    return new TextDecoder().decode(ps.stdout).trim().split(" ");
  };
  const broad = [
    "-A",
    "--allow-all",
    "--allow-run",
    "--allow-ffi",
    "--allow-read",
    "--allow-write",
  ];
  {
    // Downloads may come from any host by default: connecting is the one broad permission.
    await using node = await startTestNode();
    const cmdline = await argsOf(node.pid);
    const dataDir = await Deno.realPath(node.dataDir);
    assert.ok(cmdline.includes(`--allow-write=${dataDir}`), cmdline.join(" "));
    // The engine folder too: to see whether the inference engine is installed.
    assert.ok(
      cmdline.includes(`--allow-read=${dataDir},${dataDir}/config.json,${TEST_ENGINE_DIR}`),
      cmdline.join(" "),
    );
    assert.ok(cmdline.includes("--allow-net"));
    for (const flag of broad) assert.ok(!cmdline.includes(flag), `node has ${flag}`);
    await expectJson(await fetch(`${node.storeUrl}/models`), 200, ModelListSchema);
  }
  const issuerDir = await Deno.makeTempDir({ prefix: "edgenode-test-" });
  const { trustFile } = await makeIssuer(issuerDir);
  // A private mDNS group (never the default 5353 in tests): its port is in the permissions.
  const mdnsPort = randomMdnsPort();
  await using node = await startTestNode({
    config: {
      apiKey: "a-test-key-of-enough-length",
      downloadHosts: ["huggingface.co", "[::1]:8080"],
      hub: { url: "https://hub.example:8090" },
      discovery: { port: mdnsPort },
    },
    args: ["--trust", trustFile],
  });
  const cmdline = await argsOf(node.pid);
  const dataDir = await Deno.realPath(node.dataDir);
  assert.ok(
    cmdline.includes(
      `--allow-read=${dataDir},${dataDir}/config.json,${trustFile},${TEST_ENGINE_DIR}`,
    ),
    cmdline.join(" "),
  );
  assert.ok(cmdline.includes("--allow-sys=statfs,hostname,networkInterfaces,systemMemoryInfo"));
  await Deno.remove(issuerDir, { recursive: true });
  assert.ok(
    // Its own address, the download hosts, the mDNS socket and group, and its hub.
    cmdline.includes(
      `--allow-net=127.0.0.1:0,huggingface.co,[::1]:8080,0.0.0.0:${mdnsPort},224.0.0.251:${mdnsPort},hub.example:8090`,
    ),
    cmdline.join(" "),
  );
  for (const flag of [...broad, "--allow-net"]) {
    assert.ok(!cmdline.includes(flag), `node has ${flag}`);
  }
});

Deno.test("the node stops when its launcher is killed", async () => {
  await using node = await startTestNode();
  Deno.kill(node.launcherPid, "SIGKILL");
  await waitFor(async () => {
    try {
      await Deno.stat(`/proc/${node.pid}`);
      return false;
    } catch {
      return true;
    }
  }, "the node to exit");
});

Deno.test("without nodeName, the name is the host name and the id's first digits, kept across restarts", () =>
  withTempDir(async (dir) => {
    const host = new TextDecoder().decode(
      (await new Deno.Command("hostname", { stdout: "piped" }).output()).stdout,
    ).trim();
    const config = { apiKey: "a-test-key-of-enough-length", discovery: { mdns: false } };
    const names: string[] = [];
    for (const dataDir of [`${dir}/a`, `${dir}/b`, `${dir}/a`]) {
      await Deno.mkdir(dataDir, { recursive: true });
      await using node = await startTestNode({ dataDir, config });
      const me = await rpc(node, "getMe");
      assert.equal(me.name, `${host}-${me.nodeId.slice(0, 4)}`);
      names.push(me.name);
    }
    assert.equal(names[2], names[0], "the same name after a restart");
    await using named = await startTestNode({
      dataDir: `${dir}/a`,
      config: { ...config, nodeName: "pi3" },
    });
    assert.equal((await rpc(named, "getMe")).name, "pi3", "nodeName in config wins");
  }));
