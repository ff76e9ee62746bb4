/**
 * The CLI run with exactly the environment a test gives it: no HOME, so no API key is found in
 * a config file by chance, and only the EDGENODE_* variables the test sets.
 *
 * @module
 */
import { LAUNCHER_PERMISSIONS, MAIN } from "../../testing/node.ts";
import { type Finished, runToEnd } from "../../testing/run.ts";

/** The Deno cache in use: the commands below run without HOME, so they are told where it is. */
export const DENO_DIR = JSON.parse(
  new TextDecoder().decode(
    (await new Deno.Command(Deno.execPath(), { args: ["info", "--json"] }).output()).stdout,
  ),
).denoDir as string;

/** `edgenode ARGS` with only `env` (no HOME: no key found in a config file by chance). */
export function edgenode(
  args: string[],
  env: Record<string, string>,
  stdin?: string,
): Promise<Finished> {
  return runToEnd(Deno.execPath(), {
    args: ["run", ...LAUNCHER_PERMISSIONS, MAIN, ...args],
    clearEnv: true,
    env: {
      NO_COLOR: "1",
      HOME: "/nonexistent",
      DENO_DIR,
      PATH: Deno.env.get("PATH") ?? "",
      ...env,
    },
  }, stdin);
}
