/**
 * The hub cluster's test infrastructure on its own: a real nats-server (auth, a JetStream KV
 * bucket that outlives a kill, no server left behind by a killed test process) and HAProxy with
 * the shipped deploy/haproxy-hub.cfg (forwards both ports, drops a backend that went away).
 *
 * @module
 */
import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { HAPROXY_CONFIG, renderBalancerConfig, startBalancer } from "../testing/balancer.ts";
import { startTestNats } from "../testing/nats.ts";
import { waitFor, withTempDir } from "../testing/node.ts";

Deno.test("nats: an authenticated client is served, a wrong password refused", async () => {
  await withTempDir(async (dir) => {
    const started = await startTestNats(dir);
    if ("skip" in started) return console.log(`skipped: ${started.skip}`);
    await using nats = started;
    assert.equal(nats.url, `nats://127.0.0.1:${nats.port}`);
    assert.equal(await Deno.readTextFile(nats.passwordFile), nats.password);
    assert.equal((await Deno.stat(nats.passwordFile)).mode! & 0o777, 0o600);
    // The password is in files only: `ps` shows no secret.
    const argv = (await procFile(nats.pid, "cmdline") ?? "").replaceAll("\0", " ");
    assert.ok(argv.includes("nats-server"), argv);
    assert.ok(!argv.includes(nats.password), argv);

    const client = await connect({ servers: nats.url, user: nats.user, pass: nats.password });
    try {
      await client.flush();
      assert.equal(client.info?.jetstream, true);
    } finally {
      await client.close();
    }
    await strayResetsCaught(() =>
      assert.rejects(
        connect({ servers: nats.url, user: nats.user, pass: "wrong", maxReconnectAttempts: 0 }),
        /Authorization/i,
      )
    );
  });
});

Deno.test("nats: a KV put survives a SIGKILL and a start", async () => {
  await withTempDir(async (dir) => {
    const started = await startTestNats(dir);
    if ("skip" in started) return console.log(`skipped: ${started.skip}`);
    await using nats = started;
    const options = { servers: nats.url, user: nats.user, pass: nats.password };
    const before = await connect(options);
    try {
      const kv = await new Kvm(before).create("presence");
      await kv.put("node.a", "hub-1");
    } finally {
      await before.close();
    }
    const firstPid = nats.pid;
    await nats.kill();
    assert.ok(!await accepts(nats.port), "the port still accepts after kill()");
    await nats.start();
    assert.notEqual(nats.pid, firstPid);

    const after = await connect(options);
    try {
      const kv = await new Kvm(after).open("presence");
      assert.equal((await kv.get("node.a"))?.string(), "hub-1");
    } finally {
      await after.close();
    }
  });
});

Deno.test("nats: a test process that is killed leaves no nats-server behind", async () => {
  await withTempDir(async (dir) => {
    const script = `${dir}/start_nats.ts`;
    const helper = new URL("../testing/nats.ts", import.meta.url).href;
    await Deno.writeTextFile(
      script,
      `import { startTestNats } from ${JSON.stringify(helper)};
const nats = await startTestNats(Deno.args[0]);
console.log(JSON.stringify("skip" in nats ? nats : { pid: nats.pid, port: nats.port }));
await new Promise(() => {});
`,
    );
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-config", "--no-prompt", "--allow-all", script, dir],
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let printed = "";
    while (!printed.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      printed += value;
    }
    const started = JSON.parse(printed);
    if (!started.skip) assert.ok(await alive(started.pid));
    child.kill("SIGKILL");
    await child.status;
    await reader.cancel();
    if (started.skip) return console.log(`skipped: ${started.skip}`);
    await waitFor(
      async () => !await alive(started.pid),
      "nats-server to end with its test process",
    );
    assert.ok(!await accepts(started.port));
  });
});

Deno.test("balancer: the shipped config is rendered for the test ports only", async () => {
  const shipped = await Deno.readTextFile(HAPROXY_CONFIG);
  const rendered = renderBalancerConfig(shipped, 20000, [30000, 30010, 30020]);
  const lines = rendered.split("\n").map((line) => line.trim());
  assert.ok(lines.includes("bind 127.0.0.1:20000"));
  assert.ok(lines.includes("bind 127.0.0.1:20001"));
  assert.ok(lines.includes("server hub3 127.0.0.1:30020 check"));
  assert.ok(lines.includes("server hub3 127.0.0.1:30021 track hubs_http/hub3"));
  assert.ok(!lines.some((line) => !line.startsWith("#") && line.includes(".example")));
  // Everything else is the shipped file as it is.
  const kept = (text: string) =>
    text.split("\n").filter((line) => !/^\s*(bind|server) /.test(line)).join("\n");
  assert.equal(kept(rendered), kept(shipped));
});

Deno.test("balancer: forwards both ports, and drops a backend that went away", async () => {
  await withTempDir(async (dir) => {
    const a = await startBackend("a");
    const b = await startBackend("b");
    try {
      const started = await startBalancer([a.port, b.port], dir);
      if ("skip" in started) return console.log(`skipped: ${started.skip}`);
      await using balancer = started;
      // No keep-alive: each request is a new TCP connection, balanced on its own.
      using client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
      const ask = async () => {
        const response = await fetch(`${balancer.url}/hub/v1/health`, {
          client,
          signal: AbortSignal.timeout(5_000),
        });
        return await response.text();
      };
      const seen = new Set<string>();
      await waitFor(
        async () => {
          seen.add(await ask());
          return seen.size === 2;
        },
        "requests on both backends",
        5_000,
      );
      assert.deepEqual([...seen].sort(), ["a", "b"]);
      assert.match(await rawAsk(balancer.port + 1), /^raw [ab]$/);

      await a.shutdown();
      const shutAt = Date.now();
      // Refused connections are redispatched to b: no request fails on the way.
      let inRow = 0;
      await waitFor(
        async () => {
          inRow = await ask() === "b" ? inRow + 1 : 0;
          return inRow >= 10;
        },
        "only b to answer",
        2_000,
      );
      console.log(`all on b ${Date.now() - shutAt} ms after a shut down`);
      for (let i = 0; i < 10; i++) assert.equal(await rawAsk(balancer.port + 1), "raw b");
    } finally {
      await a.shutdown();
      await b.shutdown();
    }
  });
});

Deno.test("balancer: a backend whose health check fails leaves both rotations", async () => {
  await withTempDir(async (dir) => {
    const a = await startBackend("a");
    const b = await startBackend("b");
    try {
      const started = await startBalancer([a.port, b.port], dir);
      if ("skip" in started) return console.log(`skipped: ${started.skip}`);
      await using balancer = started;
      using client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
      const ask = async () =>
        await (await fetch(`${balancer.url}/`, { client, signal: AbortSignal.timeout(5_000) }))
          .text();
      const seen = new Set<string>();
      await waitFor(
        async () => {
          seen.add(await ask());
          return seen.size === 2;
        },
        "requests on both backends",
        5_000,
      );

      // a still accepts connections, as a hub that lost NATS would: only the check can tell.
      a.setHealthy(false);
      const failedAt = Date.now();
      let inRow = 0;
      await waitFor(
        async () => {
          inRow = await ask() === "b" && await rawAsk(balancer.port + 1) === "raw b"
            ? inRow + 1
            : 0;
          return inRow >= 10;
        },
        "only b to answer",
        2_500,
      );
      console.log(`all on b ${Date.now() - failedAt} ms after a's health failed`);

      a.setHealthy(true);
      seen.clear();
      await waitFor(
        async () => {
          seen.add(await ask());
          return seen.size === 2;
        },
        "a back in rotation",
        2_500,
      );
    } finally {
      await a.shutdown();
      await b.shutdown();
    }
  });
});

/**
 * A tiny hub stand-in: HTTP on a port that answers `name` (and its health, 200 or 503 as set),
 * raw TCP on port + 1 that says `raw <name>`.
 */
async function startBackend(name: string) {
  for (;;) {
    let healthy = true;
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (request) =>
        new URL(request.url).pathname === "/hub/v1/health" && !healthy
          ? new Response("down", { status: 503 })
          : new Response(name),
    );
    let raw: Deno.TcpListener;
    try {
      raw = Deno.listen({ hostname: "127.0.0.1", port: server.addr.port + 1 });
    } catch {
      await server.shutdown();
      continue;
    }
    const serving = (async () => {
      for (;;) {
        let conn: Deno.TcpConn;
        try {
          conn = await raw.accept();
        } catch (error) {
          if (error instanceof Deno.errors.BadResource) return; // closed by shutdown()
          // A connection reset before it was accepted (ENOTCONN): `for await` would end here.
          continue;
        }
        conn.write(new TextEncoder().encode(`raw ${name}`)).catch(() => 0).finally(() => {
          try {
            conn.close();
          } catch { /* closed already */ }
        });
      }
    })();
    let closed: Promise<void> | undefined;
    return {
      port: server.addr.port,
      setHealthy(value: boolean) {
        healthy = value;
      },
      shutdown() {
        closed ??= (async () => {
          raw.close();
          await serving;
          await server.shutdown();
        })();
        return closed;
      },
    };
  }
}

/** What a connection to `port` reads until it closes. */
async function rawAsk(port: number): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  // A hang fails the test with a reason rather than at the runner's limit.
  const timer = setTimeout(() => conn.close(), 5_000);
  try {
    const chunks: string[] = [];
    for await (const chunk of conn.readable.pipeThrough(new TextDecoderStream())) {
      chunks.push(chunk);
    }
    return chunks.join("");
  } catch (error) {
    throw new Error(`no answer on port ${port} in 5 s (${error})`);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether 127.0.0.1:`port` accepts a connection. */
async function accepts(port: number): Promise<boolean> {
  try {
    (await Deno.connect({ hostname: "127.0.0.1", port })).close();
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `run`, taking the uncaught `read ECONNRESET` that @nats-io/transport-node (3.4.0) lets
 * escape under Deno in about one refused login of four: the server answers -ERR and closes
 * while the client's PING is unread, and the reset reaches a socket that has no error listener
 * left (`connect` itself has already rejected). Any other uncaught error still fails the test.
 */
async function strayResetsCaught(run: () => Promise<void>): Promise<void> {
  const resetOnly = (event: ErrorEvent) => {
    if ((event.error as { code?: string } | undefined)?.code === "ECONNRESET") {
      event.preventDefault();
    }
  };
  globalThis.addEventListener("error", resetOnly);
  try {
    await run();
    // The reset comes right after the rejection, from the same socket's last read.
    await new Promise((resolve) => setTimeout(resolve, 100));
  } finally {
    globalThis.removeEventListener("error", resetOnly);
  }
}

/**
 * A file of /proc/`pid`, or undefined once the process is gone. Read by `cat`: Deno lets only
 * --allow-all read /proc/<pid>, which the tests are not given.
 */
async function procFile(pid: number, name: string): Promise<string | undefined> {
  const output = await new Deno.Command("cat", { args: [`/proc/${pid}/${name}`], stderr: "null" })
    .output();
  return output.success ? new TextDecoder().decode(output.stdout) : undefined;
}

/** Whether process `pid` runs (a zombie waiting for a parent that never reaps counts as ended). */
async function alive(pid: number): Promise<boolean> {
  const stat = await procFile(pid, "stat");
  return stat !== undefined && stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
}
