/**
 * The edgenode program: `edgenode serve` runs a node; other subcommands are clients and tools.
 * This is the composition root of the command line: the one table of commands, with the node's
 * and the hub's launchers given to the commands that start them.
 *
 * @module
 */
import meta from "../deno.json" with { type: "json" };
import {
  ACCOUNT_TOKEN_COMMAND,
  type Command,
  completionCommand,
  CONTAINERS_COMMAND,
  DEPLOY_COMMAND,
  helpCommand,
  hubCommand,
  IMAGE_COMMANDS,
  ISSUER_COMMANDS,
  MODELS_COMMAND,
  NODE_COMMANDS,
  processEnv,
  programHelp,
  PS_COMMAND,
  PULL_COMMAND,
  RUN_COMMAND,
  runCommandLine,
  serveCommand,
  STATUS_COMMAND,
  versionCommand,
} from "./cli/mod.ts";
import { launchHub, runHub } from "./hub/hub_launcher.ts";
import { launch, runNode } from "./node/launcher.ts";
import { runContainerProcess } from "./mcm/sandbox/host/container_workers.ts";

/** The program's version, from deno.json. */
export const VERSION: string = meta.version;

/** Every command, in the order `edgenode help` lists them; the `__` ones are the program's own. */
export const COMMANDS: readonly Command[] = [
  serveCommand(launch),
  hubCommand(launchHub),
  ...ISSUER_COMMANDS,
  STATUS_COMMAND,
  ...NODE_COMMANDS,
  PULL_COMMAND,
  MODELS_COMMAND,
  RUN_COMMAND,
  ACCOUNT_TOKEN_COMMAND,
  ...IMAGE_COMMANDS,
  DEPLOY_COMMAND,
  CONTAINERS_COMMAND,
  PS_COMMAND,
  versionCommand(VERSION),
  completionCommand(() => COMMANDS),
  helpCommand(() => programHelp(VERSION, COMMANDS)),
  // The processes the launchers start (src/program/self_program.ts).
  { name: "__node", run: runNode },
  { name: "__hub", run: runHub },
  { name: "__container", run: runContainerProcess },
];

/** Runs the program with these arguments and returns the exit code. */
export function main(args: string[]): Promise<number> {
  return runCommandLine(COMMANDS, args, processEnv);
}

if (import.meta.main) Deno.exit(await main(Deno.args));
