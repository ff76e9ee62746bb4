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

/** The whole environment of a CLI run: `env`, with no HOME, and what Deno itself needs. */
export function cliEnv(env: Record<string, string>): Record<string, string> {
  return {
    NO_COLOR: "1",
    HOME: "/nonexistent",
    DENO_DIR,
    PATH: Deno.env.get("PATH") ?? "",
    ...env,
  };
}

/** `edgenode ARGS` with only `env` (no HOME: no key found in a config file by chance). */
export function edgenode(
  args: string[],
  env: Record<string, string>,
  stdin?: string,
): Promise<Finished> {
  return runToEnd(Deno.execPath(), {
    args: ["run", ...LAUNCHER_PERMISSIONS, MAIN, ...args],
    clearEnv: true,
    env: cliEnv(env),
  }, stdin);
}

/** Whether util-linux's `script` is here, to give a command a pseudo-terminal. */
export const HAS_SCRIPT = Deno.build.os === "linux" &&
  await new Deno.Command("script", { args: ["--version"], stdout: "null", stderr: "null" })
    .output().then((output) => output.success, () => false);

/**
 * `edgenode ARGS` on a pseudo-terminal (`script`), as a user at a terminal runs it, with `env`
 * added to this process's: its exit code and what the terminal showed.
 */
export async function edgenodeOnTerminal(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; text: string }> {
  const command = [Deno.execPath(), "run", ...LAUNCHER_PERMISSIONS, MAIN, ...args];
  const output = await new Deno.Command("script", {
    args: ["-qec", command.join(" "), "/dev/null"],
    env,
    stdout: "piped",
  }).output();
  return { code: output.code, text: new TextDecoder().decode(output.stdout) };
}
