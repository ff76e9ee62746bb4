/**
 * The inference engine the tests share: installed once per machine (npm, about 85 MB) under
 * EDGENODE_ENGINE_DIR or the system's temporary folder, and handed to every test node through
 * that variable, so that each test's fresh data directory does not install it again.
 *
 * @module
 */
import { join } from "node:path";
import { tmpdir } from "node:os";
import { installFolder, isInstalled } from "../src/inference/engine_install.ts";
import { runToEnd } from "./run.ts";

/** The engine folder of the test nodes. */
export const TEST_ENGINE_DIR: string = Deno.env.get("EDGENODE_ENGINE_DIR") ??
  join(tmpdir(), "edgenode-test-engine");

const INSTALLER = new URL("../src/inference/engine_install.ts", import.meta.url).pathname;

let installing: Promise<string> | undefined;

/**
 * The install folder of the test engine (holding node_modules/node-llama-cpp), installed now if
 * it is not yet, as a node would on first use.
 */
export function ensureTestEngine(): Promise<string> {
  installing ??= (async () => {
    const folder = installFolder(TEST_ENGINE_DIR);
    if (await isInstalled(folder)) return folder;
    const done = await runToEnd(Deno.execPath(), {
      args: [
        "run",
        "--no-config",
        "--allow-run",
        "--allow-env",
        "--allow-read",
        `--allow-write=${TEST_ENGINE_DIR}`,
        INSTALLER,
        folder,
      ],
    });
    if (done.code !== 0) throw new Error(`installing the test engine failed: ${done.stderr}`);
    return folder;
  })();
  return installing;
}
