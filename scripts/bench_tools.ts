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

/** Requests/s of GET `url` with wrk on one core (-c50, 5 s), after a 2 s warm-up. */
export async function wrk(url: string, headers: Record<string, string> = {}): Promise<number> {
  const headerArgs = Object.entries(headers).flatMap((
    [name, value],
  ) => ["-H", `${name}: ${value}`]);
  const load = (seconds: number) =>
    run("taskset", ["-c", "1", "wrk", "-t1", "-c50", `-d${seconds}s`, ...headerArgs, url]);
  await load(2);
  return Math.round(Number(/Requests\/sec:\s+([\d.]+)/.exec(await load(5))?.[1]));
}
