/**
 * The command line made from one table of commands (src/cli/command.ts): which command runs,
 * the program's help and each command's, "did you mean" for a mistyped name, and the exit code
 * of an error (2 for what the user must fix, 1 otherwise).
 *
 * @example
 * ```ts
 * import { helpCommand, programHelp, runCommandLine } from "./command_line.ts";
 * import type { Command } from "./command.ts";
 *
 * const commands: Command[] = [helpCommand(() => programHelp("1.0.0", commands))];
 * await runCommandLine(commands, ["help"], () => undefined); // prints the help, resolves to 0
 * ```
 *
 * @module
 */
import { closestName } from "../config/closest_name.ts";
import { ConfigError } from "../config/config_error.ts";
import { type Env, GLOBAL_HELP } from "./cli_context.ts";
import type { Command } from "./command.ts";
import { flagsAfter, subcommandIn } from "./command_words.ts";

/** Reads an environment variable of this process (undefined when unset or not allowed). */
export function processEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined; // Not allowed to read it: as if unset.
  }
}

/** `edgenode help`: every command's usage, in the table's order. */
export function programHelp(version: string, commands: readonly Command[]): string {
  const usage = commands.flatMap((command) => command.help ?? []).join("\n");
  return `edgenode ${version}: turns this machine into an edge node.

Usage:
${usage}

${GLOBAL_HELP}

Environment: EDGENODE_API_KEY overrides the config file's key; EDGENODE_DATA_DIR sets the data
directory. Exit codes: 0 done, 1 failed, 2 bad usage or configuration, 130 interrupted.`;
}

/** `edgenode CMD --help`: the command's usage, with the global flags unless it is local. */
export function commandHelp(command: Command & { help: string }): string {
  const usage = `Usage:\n${command.help}`;
  return command.local ? usage : `${usage}\n\n${GLOBAL_HELP}`;
}

/** `edgenode help` (and `--help`, `-h`, and no command at all), printing `text()`. */
export function helpCommand(text: () => string): Command {
  return {
    name: "help",
    aliases: ["--help", "-h"],
    help: "  edgenode help         Prints this help.",
    local: true,
    run: () => Promise.resolve((console.log(text()), 0)),
  };
}

function unknownCommand(name: string, commands: readonly Command[]): number {
  const names = commands.filter((command) => command.help).map((command) => command.name);
  const near = closestName(name, names);
  console.error(
    `edgenode: unknown command '${name}'${
      near ? `; did you mean '${near}'?` : ""
    } ('edgenode help' lists the commands)`,
  );
  return 2;
}

/**
 * Runs the command `args[0]` names (`help` when none) with the rest, and resolves to the exit
 * code: `NAME --help` prints its usage instead, and an error is printed and exits 2 when the
 * user must fix something (a ConfigError or a bad flag), 1 otherwise.
 */
export async function runCommandLine(
  commands: readonly Command[],
  args: string[],
  env: Env,
): Promise<number> {
  const [name = "help", ...rest] = args;
  const command = commands.find((each) => each.name === name || each.aliases?.includes(name));
  if (!command) return unknownCommand(name, commands);
  if (command.help && name === command.name && (rest.includes("--help") || rest.includes("-h"))) {
    console.log(commandHelp({ ...command, help: command.help }));
    return 0;
  }
  try {
    return await command.run(rest, env);
  } catch (error) {
    const code = String((error as { code?: unknown }).code ?? "");
    const usage = error instanceof ConfigError || code.startsWith("ERR_PARSE_ARGS");
    const message = code === "ERR_PARSE_ARGS_UNKNOWN_OPTION"
      ? unknownOption(command, rest, (error as Error).message)
      : (error as Error).message;
    console.error(`edgenode: ${message}`);
    return usage ? 2 : 1;
  }
}

/**
 * What to say for an unknown flag (node:util's parseArgs names it in its message): the flag,
 * and the nearest one the command or its subcommand takes, as its help lists them.
 */
function unknownOption(command: Command, args: string[], message: string): string {
  const flag = /'(-[^'=\s]*)/.exec(message)?.[1];
  if (!flag) return message;
  const known = flagsAfter(command, args);
  const near = flag.startsWith("--")
    ? closestName(flag.slice(2), known.filter((f) => f.startsWith("--")).map((f) => f.slice(2)))
    : undefined;
  const sub = subcommandIn(command, args);
  const named = sub ? ` ${sub}` : "";
  return near
    ? `unknown option ${flag}; did you mean --${near}?`
    : `unknown option ${flag} ('edgenode ${command.name}${named} --help' lists its flags)`;
}
