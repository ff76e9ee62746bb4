/**
 * Warm spares (mcm.spareContainers) in `deno task bench --only mcm`: a deploy's cold start, a
 * redeploy and a restart after a crash, each with the default spare and with none, on nodes of
 * the same run; as a script and as the single executable (its bundle); and what an idle spare
 * costs in memory.
 *
 * @module
 */
import { containerProcesses } from "../../testing/container_processes.ts";
import { postImage, serviceUrl, startContainer } from "../../testing/mcm.ts";
import { startTestNode } from "../../testing/node.ts";
import { helloImage, median, pssMib, run } from "./tools.ts";

const ROUNDS = 5;
const CRASHES = 3;
/** Between two measurements: the refill of the spare and the previous process settle. */
const SETTLE_MS = 700;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What one node measured. */
interface Figures {
  colds: number[];
  redeploys: number[];
  restarts: number[];
  /** PSS of an idle spare, MiB (NaN without spares). */
  sparePss: number;
}

/** Polls `url` until it answers 200. */
async function firstAnswer(url: string): Promise<void> {
  for (;;) {
    const response = await fetch(url).catch(() => undefined);
    await response?.body?.cancel();
    if (response?.status === 200) return;
    await sleep(2);
  }
}

/** Deploys, redeploys and crashes containers on a node with `spares` spares. */
async function figures(
  dataDir: string,
  image: Uint8Array,
  spares: number,
  bundle?: string,
): Promise<Figures> {
  await Deno.mkdir(dataDir);
  await using node = await startTestNode({
    dataDir,
    config: {
      apiKey: "a-bench-key-of-enough-length",
      discovery: { mdns: false },
      mcm: { spareContainers: spares, containerProcess: "per-container" },
    },
    bundle,
  });
  await (await postImage(node, image, "hello.tar")).body?.cancel();
  const colds: number[] = [];
  const pids: number[] = [];
  const assigned = new Set<number>();
  for (let i = 0; i < ROUNDS; i++) {
    await sleep(SETTLE_MS);
    const before = await containerProcesses(dataDir);
    const start = performance.now();
    const container = await startContainer(node, { name: `cold-${i}`, image: "hello" });
    await (await fetch(`${serviceUrl(node, container)}/`)).text();
    colds.push(performance.now() - start);
    // Its process: the spare that waited, or the one process started for it.
    const after = await containerProcesses(dataDir);
    const known = new Set(before.map((p) => p.pid));
    const pid = after.find((p) =>
      !assigned.has(p.pid) && (known.has(p.pid) ? p.spare : !p.spare)
    )!.pid;
    assigned.add(pid);
    pids.push(pid);
  }
  await sleep(SETTLE_MS);
  const idle = (await containerProcesses(dataDir)).find((p) => p.spare && !assigned.has(p.pid));
  const sparePss = idle ? await pssMib(idle.pid) : NaN;
  const redeploys: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    await sleep(SETTLE_MS);
    const start = performance.now();
    const container = await startContainer(node, {
      name: "cold-0",
      image: "hello",
      env: { ROUND: String(i) },
    }, 200);
    await (await fetch(`${serviceUrl(node, container)}/`)).text();
    redeploys.push(performance.now() - start);
  }
  const restarts: number[] = [];
  for (let i = 1; i <= CRASHES; i++) {
    await sleep(SETTLE_MS);
    const container = await (await fetch(`${node.url}/mcm/v1/containers/cold-${i}`, {
      headers: { authorization: `Bearer ${node.apiKey}` },
    })).json();
    const start = performance.now();
    Deno.kill(pids[i], "SIGKILL");
    await firstAnswer(`${serviceUrl(node, container)}/`);
    restarts.push(performance.now() - start);
  }
  return { colds, redeploys, restarts, sparePss };
}

/** The rows: each figure with a spare beside the same figure without, from the same run. */
export async function spareRows(): Promise<string[][]> {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-spares-" });
  try {
    return await spareRowsIn(dir, await helloImage());
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

async function spareRowsIn(dir: string, image: Uint8Array): Promise<string[][]> {
  const bundle = `${dir}/edgenode-spares.js`;
  await run(Deno.execPath(), ["bundle", "--platform=deno", "-o", bundle, "src/executable.ts"]);
  const warm = await figures(`${dir}/spare-1`, image, 1);
  const cold = await figures(`${dir}/spare-0`, image, 0);
  const warmExe = await figures(`${dir}/spare-exe-1`, image, 1, bundle);
  const coldExe = await figures(`${dir}/spare-exe-0`, image, 0, bundle);
  const ms = (values: number[]) => `${median(values).toFixed(0)} ms`;
  const all = (values: number[]) => values.map((v) => v.toFixed(0)).join("/");
  return [
    [
      `cold start with a warm spare (mcm.spareContainers 1): POST /mcm/v1/containers to the first answer (median of ${ROUNDS})`,
      ms(warm.colds),
      `without a spare (0), same run: ${ms(cold.colds)}; all: ${all(warm.colds)}; ${
        all(cold.colds)
      }`,
    ],
    [
      `redeploy (POST of an existing name, new env) to the new process's first answer (median of ${ROUNDS})`,
      ms(warm.redeploys),
      `without a spare, same run: ${ms(cold.redeploys)}`,
    ],
    [
      `restart after a crash (SIGKILL of the container process to its next answer, median of ${CRASHES}; includes the 250 ms back-off)`,
      ms(warm.restarts),
      `without a spare, same run: ${ms(cold.restarts)}`,
    ],
    [
      "the same as the single executable (its bundle): cold start; redeploy; restart",
      `${ms(warmExe.colds)}; ${ms(warmExe.redeploys)}; ${ms(warmExe.restarts)}`,
      `without a spare, same run: ${ms(coldExe.colds)}; ${ms(coldExe.redeploys)}; ${
        ms(coldExe.restarts)
      }; as a script with a spare: ${ms(warm.colds)} (${
        (median(warmExe.colds) / median(warm.colds)).toFixed(2)
      }×)`,
    ],
    [
      "memory of an idle warm spare (PSS)",
      `${warm.sparePss.toFixed(1)} MiB; executable: ${warmExe.sparePss.toFixed(1)} MiB`,
      `${(warmExe.sparePss / warm.sparePss).toFixed(2)}× of the script's`,
    ],
  ];
}

if (import.meta.main) {
  for (const row of await spareRows()) console.log(row.join(" | "));
}
