/**
 * Small tools shared by the benchmark scripts.
 *
 * @module
 */

/** Runs a command to completion; its standard output, or an error with its standard error. */
export async function run(command: string, args: string[]): Promise<string> {
  const output = await new Deno.Command(command, { args, stdout: "piped", stderr: "piped" })
    .output();
  if (!output.success) {
    throw new Error(
      `${command} ${args.join(" ")} failed: ${new TextDecoder().decode(output.stderr)}`,
    );
  }
  return new TextDecoder().decode(output.stdout);
}

function headerArgs(headers: Record<string, string>): string[] {
  return Object.entries(headers).flatMap(([name, value]) => ["-H", `${name}: ${value}`]);
}

/** Requests/s of GET `url` with wrk on one core (-c50, 5 s), after a 2 s warm-up. */
export async function wrk(url: string, headers: Record<string, string> = {}): Promise<number> {
  const load = (seconds: number) =>
    run("taskset", ["-c", "1", "wrk", "-t1", "-c50", `-d${seconds}s`, ...headerArgs(headers), url]);
  await load(2);
  return Math.round(Number(/Requests\/sec:\s+([\d.]+)/.exec(await load(5))?.[1]));
}

/** Median wall time of three runs of a command, in seconds: single transfers are noisy. */
export async function timed(command: string, args: string[]): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    await run(command, args);
    times.push((performance.now() - start) / 1000);
  }
  return times.sort((a, b) => a - b)[1];
}

/** Writes a GGUF-headed file of `mib` MiB of random bytes. */
export async function makeModelFile(path: string, mib: number): Promise<void> {
  using file = await Deno.open(path, { write: true, create: true, truncate: true });
  const block = new Uint8Array(1 << 20);
  for (let i = 0; i < block.length; i += 65536) {
    crypto.getRandomValues(block.subarray(i, i + 65536));
  }
  block.set([0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0]);
  for (let i = 0; i < mib; i++) {
    await file.write(block);
    block[8] = i & 0xff; // GGUF header only in the first block; later blocks differ a little.
  }
}

/** Resident memory of a process in MiB: now (VmRSS) or its peak so far (VmHWM). */
export async function rssMib(pid: number, field: "VmRSS" | "VmHWM" = "VmRSS"): Promise<number> {
  // Reading /proc needs --allow-all in Deno; cat does not.
  const status = await run("cat", [`/proc/${pid}/status`]);
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1]) / 1024;
}

/** The peak resident memory of a process so far, in whole MiB. */
export async function peakRssMib(pid: number): Promise<number> {
  return Math.round(await rssMib(pid, "VmHWM"));
}

/** p99 latency in ms of GET `url` for 3 s (wrk -c10). */
export async function p99(url: string, headers: Record<string, string> = {}): Promise<number> {
  const out = await run("wrk", ["-t1", "-c10", "-d3s", "--latency", ...headerArgs(headers), url]);
  const [, value, unit] = /99%\s+([\d.]+)(us|ms|s)/.exec(out) ?? [];
  return Number(value) * ({ us: 0.001, ms: 1, s: 1000 }[unit as "us" | "ms" | "s"] ?? NaN);
}
