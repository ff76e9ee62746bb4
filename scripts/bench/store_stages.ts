/**
 * The CPU time each stage of an upload costs in the node, for `deno task bench --only store`:
 * the threads of the node's process are sampled (`/proc/<pid>/task/<tid>/stat`, utime + stime)
 * while a transfer runs, and their CPU time is summed by the stage that thread runs:
 * - the main thread (`deno`) receives the body and reads it into the file sink's buffers
 *   (receive + copy: HTTP, the BYOB read's copy out of the socket buffer, the JavaScript);
 * - the file-sink worker (`worker-N`) hashes (SHA-256), and writes too below 4 cores;
 * - Tokio's blocking threads (`tokio-runtime-w`) run the writes into the page cache from 4 cores
 *   on, and the background `fdatasync` calls (flush);
 * - V8's helper threads (`V8 DefaultWorke`): garbage collection and compilation.
 *
 * Threads are read every half second, since a blocking thread that idles for 10 s ends and
 * takes its figures with it.
 *
 * @module
 */

/** CPU seconds of one process's threads, by stage, over a span of work. */
export type StageCpu = Record<string, number>;

/** Which stage a thread's name (`/proc/.../comm`) stands for. */
function stageOf(name: string): string {
  if (name === "deno") return "main";
  if (name.startsWith("worker-")) return "worker";
  if (name.startsWith("tokio-runtime")) return "blocking";
  if (name.startsWith("V8 ")) return "v8";
  return "other";
}

const TICKS_PER_SECOND = 100;
/** How often the threads are read: often enough to see a thread that ends, not more (a cat). */
const SAMPLE_MS = 500;

/** Every thread of `pid`: its id, name and CPU seconds so far (none once the process ended). */
async function threads(pid: number): Promise<Array<{ tid: string; name: string; cpu: number }>> {
  // Reading /proc needs --allow-all in Deno; cat does not (one cat reads every thread's).
  const output = await new Deno.Command("sh", {
    args: ["-c", `cat /proc/${pid}/task/*/stat`],
    stdout: "piped",
    stderr: "null",
  }).output();
  const found = [];
  for (const stat of new TextDecoder().decode(output.stdout).split("\n")) {
    // The name is in parentheses and may hold spaces: the fields after the last ')' count.
    const close = stat.lastIndexOf(")");
    if (close < 0) continue;
    const tid = stat.slice(0, stat.indexOf(" "));
    const name = stat.slice(stat.indexOf("(") + 1, close);
    const fields = stat.slice(close + 2).split(" ");
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    const cpu = (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
    found.push({ tid, name, cpu });
  }
  return found;
}

/**
 * Runs `work` and returns what it returned with the CPU seconds the threads of `pid` spent
 * meanwhile, by stage (and `total`).
 */
export async function stageCpu<T>(
  pid: number,
  work: () => Promise<T>,
): Promise<{ result: T; cpu: StageCpu }> {
  const start = new Map((await threads(pid)).map((thread) => [thread.tid, thread.cpu]));
  const last = new Map<string, { name: string; cpu: number }>();
  const sample = async () => {
    for (const thread of await threads(pid)) last.set(thread.tid, thread);
  };
  let sampling = Promise.resolve();
  const timer = setInterval(() => sampling = sampling.then(sample), SAMPLE_MS);
  try {
    const result = await work();
    clearInterval(timer);
    await sampling;
    await sample();
    const cpu: StageCpu = { total: 0 };
    for (const [tid, { name, cpu: seconds }] of last) {
      const spent = seconds - (start.get(tid) ?? 0);
      const stage = stageOf(name);
      cpu[stage] = (cpu[stage] ?? 0) + spent;
      cpu.total += spent;
    }
    return { result, cpu };
  } finally {
    clearInterval(timer);
  }
}

/**
 * `cpu` as CPU µs per MB of `mb` megabytes, one stage after another; `overlapped`: whether the
 * sink's worker left the writes to the blocking threads (src/storage/file_sinks.ts: from 4
 * cores on), else they are in the worker's figure.
 */
export function formatStageCpu(cpu: StageCpu, mb: number, overlapped: boolean): string {
  const labels: Array<[string, string]> = [
    ["main", "main thread (receive, copy)"],
    ["worker", overlapped ? "sink worker (hash)" : "sink worker (hash, write)"],
    ["blocking", overlapped ? "blocking threads (write, flush)" : "blocking threads (flush)"],
    ["v8", "V8 helpers (GC)"],
    ["other", "other"],
    ["total", "total"],
  ];
  return labels.filter(([stage]) => cpu[stage] !== undefined)
    .map(([stage, label]) => `${label} ${Math.round((cpu[stage] * 1e6) / mb)}`)
    .join(", ") + " CPU µs/MB";
}
