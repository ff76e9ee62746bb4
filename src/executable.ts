/**
 * The single executable's entry point: `deno task compile` builds it with EXECUTABLE_FLAGS baked
 * in, and `deno task bundle` writes it as one JavaScript file that CI runs with the same flags.
 * Its permissions cannot be narrowed per run from outside, so the node, the hub and container
 * hosts narrow themselves in workers of this module (src/program/self_program.ts).
 *
 * The program proper (main.ts and every service) is imported only where it runs: a container
 * process and its workers load just the sandbox, which keeps their start fast and small.
 *
 * @module
 */
import { EXECUTABLE_FLAGS } from "./program/executable_flags.ts";
import { runAsExecutable } from "./program/self_program.ts";
import { runContainerProcess } from "./mcm/sandbox/host/container_workers.ts";
import { acceptRole, inWorker } from "./program/worker_roles.ts";

async function main(args: string[]): Promise<number> {
  return await (await import("./main.ts")).main(args);
}

runAsExecutable(import.meta.url, EXECUTABLE_FLAGS);
if (import.meta.main) {
  if (inWorker()) acceptRole(main);
  else if (Deno.args[0] === "__container") Deno.exit(await runContainerProcess(Deno.args.slice(1)));
  else Deno.exit(await main(Deno.args));
}
