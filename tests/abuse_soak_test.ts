/**
 * Abuse: two hostile clients run every attack of issue 34 at once (outbound floods, detached
 * generations without end and a crafted model loaded again and again, WebAssembly and Intl
 * memory, the runtime's globals replaced, CPU loops, a heap filled faster than any report),
 * while a well-behaved client's microservice and the key holder's chat completions are timed.
 * The bystanders are never restarted and every one of their requests is answered.
 *
 * A short run here; EDGENODE_ABUSE_SECONDS makes it longer and also holds the bystanders' p99
 * within 3× of the same run's idle figure (`deno task soak --abuse` runs it for 120 s).
 * EDGENODE_ABUSE_ONLY names the attacks to run (default all).
 */
import assert from "node:assert/strict";
import { GOOD_SERVICE, hostileServices, zeroHeads } from "./helpers/abuse_services.ts";
import { ensureTestEngine } from "../testing/engine.ts";
import { containerRecord, deployScript } from "../testing/mcm.ts";
import { startTestNode } from "../testing/node.ts";
import { createModel, uploadRaw } from "./helpers/store.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";

const SOAK_SECONDS = Number(Deno.env.get("EDGENODE_ABUSE_SECONDS") ?? 0);
const ATTACK_SECONDS = SOAK_SECONDS || 15;
const IDLE_SECONDS = SOAK_SECONDS ? 20 : 5;
const HOSTILE_CLIENTS = ["mallory", "trudy"];
/** EDGENODE_ABUSE_ONLY=flood,cpu runs only those attacks (to see what each one costs). */
const ONLY = Deno.env.get("EDGENODE_ABUSE_ONLY")?.split(",");

/** A TCP server that accepts and never answers (the outbound floods' target). */
function silentServer() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  (async () => {
    for await (const conn of listener) held.push(conn);
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${listener.addr.port}`,
    close() {
      listener.close();
      for (const conn of held) conn.close();
    },
  };
}

/** Latencies of a loop of calls until `until`, with the failures seen. */
async function timeLoop(call: () => Promise<void>, until: number, pauseMs: number) {
  const latencies: number[] = [];
  const failures: string[] = [];
  while (Date.now() < until) {
    const started = performance.now();
    try {
      await call();
      latencies.push(performance.now() - started);
    } catch (error) {
      failures.push((error as Error).message);
    }
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  return { latencies, failures };
}

/** CPU seconds so far of `root`'s process tree, by role: node, engine, containers, others. */
async function cpuByRole(root: number): Promise<Record<string, number>> {
  const output = await new Deno.Command("ps", { args: ["-e", "-o", "pid=,ppid=,times=,args="] })
    .output();
  const rows = new TextDecoder().decode(output.stdout).split("\n").flatMap((line) => {
    const match = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(.*)$/.exec(line);
    return match ? [{ pid: +match[1], ppid: +match[2], seconds: +match[3], args: match[4] }] : [];
  });
  const roles: Record<string, number> = { node: 0, engine: 0, containers: 0 };
  for (const row of rows) {
    if (row.pid === root) roles.node += row.seconds;
    else if (row.ppid !== root) continue;
    else if (row.args.includes("engine_main")) roles.engine += row.seconds;
    else if (row.args.includes("container_host")) roles.containers += row.seconds;
  }
  return roles;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
}

const record = containerRecord;

Deno.test("abuse: hostile clients cost only themselves", async () => {
  await ensureTestEngine();
  const sink = silentServer();
  await using node = await startTestNode({
    config: {
      apiKey: "an-abuse-test-key-of-enough-length",
      discovery: { mdns: false },
      mcm: { outboundNetworks: ["public", "private", "loopback"] },
      inference: {},
    },
  });
  try {
    await createModel(node, "tiny", "llm");
    assert.equal((await uploadRaw(node, "tiny", tinyLlamaGguf())).status, 200);
    await createModel(node, "crafted", "llm");
    // Refusing the crafted file at upload is a defence too; the attack names it either way.
    const crafted = await uploadRaw(node, "crafted", zeroHeads(tinyLlamaGguf({ seed: 2 })));
    await crafted.body?.cancel();

    const good = await deployScript(node, "good", GOOD_SERVICE, {}, "alice");
    const chat = async () => {
      const response = await fetch(`${node.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${node.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "tiny",
          max_tokens: 8,
          temperature: 0,
          messages: [{ role: "user", content: "hello" }],
        }),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`chat: ${response.status} ${text}`);
    };
    let boot: string | undefined;
    const visit = async () => {
      const response = await fetch(good.url, { signal: AbortSignal.timeout(30_000) });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`good: ${response.status} ${text}`);
      const body = JSON.parse(text);
      boot ??= body.boot;
      if (body.boot !== boot) throw new Error("the good microservice was restarted");
    };
    const measure = async (seconds: number) => {
      const until = Date.now() + seconds * 1000;
      const [service, completions] = await Promise.all([
        timeLoop(visit, until, 50),
        timeLoop(chat, until, 100),
      ]);
      return { service, completions };
    };
    await measure(2); // warm: the model loaded, the first requests paid
    const idle = await measure(IDLE_SECONDS);

    const hostile: { client: string; name: string; id: string; url: string }[] = [];
    for (const client of HOSTILE_CLIENTS) {
      for (const [name, script] of Object.entries(hostileServices(sink.url, "tiny", "crafted"))) {
        if (ONLY && !ONLY.includes(name)) continue;
        const { container, url } = await deployScript(node, name, script, {
          "MCM.MEMORY_MB": "128",
        }, client);
        hostile.push({ client, name, id: container.id, url });
      }
    }
    // The attacks are armed again after each restart, until the run ends.
    const attackUntil = Date.now() + ATTACK_SECONDS * 1000;
    const arming = (async () => {
      while (Date.now() < attackUntil) {
        await Promise.all(hostile.map(async ({ url }) => {
          await fetch(`${url}/go`, { signal: AbortSignal.timeout(5000) })
            .then((response) => response.body?.cancel()).catch(() => {});
        }));
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    })();
    const cpuBefore = await cpuByRole(node.pid);
    const attacked = await measure(ATTACK_SECONDS);
    await arming;
    // Where the machine's time went (ps counts whole seconds; processes that ended are gone).
    const cpuAfter = await cpuByRole(node.pid);
    const cpu = Object.keys(cpuAfter).map((role) =>
      `${role} ${Math.max(0, cpuAfter[role] - cpuBefore[role])} s`
    ).join(", ");

    const goodRecord = await record(node, good.container.id);
    const ends: string[] = [];
    for (const { client, name, id } of hostile) {
      const { restarts, lastError, state } = await record(node, id);
      ends.push(`${client}-${name} ${state} ${restarts}×: ${lastError ?? "-"}`.slice(0, 240));
    }
    const figure = (label: string, idleMs: number[], attackedMs: number[]) => {
      const [a, b] = [percentile(idleMs, 0.99), percentile(attackedMs, 0.99)];
      return `${label} p99 ${a.toFixed(1)} ms idle, ${b.toFixed(1)} ms attacked (${
        (b / a).toFixed(2)
      }×, ${attackedMs.length} requests)`;
    };
    console.log(
      `abuse: ${ATTACK_SECONDS} s, ${hostile.length} hostile containers of ` +
        `${HOSTILE_CLIENTS.length} clients; ${
          figure("good microservice", idle.service.latencies, attacked.service.latencies)
        }; ${
          figure("key holder's chat", idle.completions.latencies, attacked.completions.latencies)
        }; good restarts ${goodRecord.restarts}; CPU of the ${ATTACK_SECONDS} s ` +
        `(${navigator.hardwareConcurrency} cores): ${cpu}\n  ${ends.join("\n  ")}`,
    );

    assert.deepEqual(idle.service.failures.slice(0, 5), []);
    assert.deepEqual(attacked.service.failures.slice(0, 5), []);
    assert.deepEqual(attacked.completions.failures.slice(0, 5), []);
    assert.equal(goodRecord.restarts, 0, `the good container restarted: ${goodRecord.lastError}`);
    assert.equal(goodRecord.lastError, undefined);
    if (SOAK_SECONDS) {
      for (
        const [idleMs, attackedMs] of [
          [idle.service.latencies, attacked.service.latencies],
          [idle.completions.latencies, attacked.completions.latencies],
        ]
      ) {
        assert.ok(percentile(attackedMs, 0.99) <= 3 * percentile(idleMs, 0.99));
      }
    }
  } finally {
    sink.close();
  }
});
