/**
 * The CLI run with exactly the environment a test gives it: no HOME, so no API key is found in
 * a config file by chance, and only the EDGENODE_* variables the test sets.
 *
 * @module
 */
import { LAUNCHER_PERMISSIONS, MAIN } from "./node.ts";

/** The Deno cache in use: the commands below run without HOME, so they are told where it is. */
export const DENO_DIR = JSON.parse(
  new TextDecoder().decode(
    (await new Deno.Command(Deno.execPath(), { args: ["info", "--json"] }).output()).stdout,
  ),
).denoDir as string;

/** `edgenode ARGS` with only `env` (no HOME: no key found in a config file by chance). */
export async function edgenode(
  args: string[],
  env: Record<string, string>,
  stdin?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...LAUNCHER_PERMISSIONS, MAIN, ...args],
    clearEnv: true,
    env: {
      NO_COLOR: "1",
      HOME: "/nonexistent",
      DENO_DIR,
      PATH: Deno.env.get("PATH") ?? "",
      ...env,
    },
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
  const text = new TextDecoder();
  return {
    code: output.code,
    stdout: text.decode(output.stdout),
    stderr: text.decode(output.stderr),
  };
}
