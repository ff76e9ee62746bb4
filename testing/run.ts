/**
 * A command run to its end, as tests run the CLI and other tools: its exit code and what it
 * printed, with a given input or none (a test never waits on the runner's terminal).
 *
 * @module
 */

/** What a finished command printed, and its exit code. */
export interface Finished {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `command` with `options` to its end; `stdin` is written to it, else it reads nothing. */
export async function runToEnd(
  command: string,
  options: Omit<Deno.CommandOptions, "stdin" | "stdout" | "stderr"> = {},
  stdin?: string,
): Promise<Finished> {
  const child = new Deno.Command(command, {
    ...options,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(stdin));
    await writer.close();
  }
  const output = await child.output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}
