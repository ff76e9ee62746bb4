/**
 * The words a command takes, read from its help text (src/cli/command.ts): its subcommands (the
 * lower-case word after its name in a usage line, `edgenode models ls ...`) and the flags each
 * usage block names (`--kind`, `-o`). The help is the one list of them, so the shell completion
 * and "did you mean" for a mistyped flag stay in step with it: a command added to the table gets
 * both for free.
 *
 * @example
 * ```ts
 * import { commandWords } from "./command_words.ts";
 *
 * const words = commandWords({
 *   name: "models",
 *   help: "  edgenode models ls [--kind K]\n  edgenode models rm ID",
 *   run: () => Promise.resolve(0),
 * });
 * words.subcommands; // ["ls", "rm"]
 * words.flags.get("ls"); // ["--kind"]
 * ```
 *
 * @module
 */
import { GLOBAL_OPTIONS, splitSubcommand } from "./cli_context.ts";
import type { Command } from "./command.ts";

/** What a command takes, as its help says. */
export interface CommandWords {
  /** Its subcommands, in the help's order (none for a command without). */
  readonly subcommands: readonly string[];
  /**
   * The flags of each subcommand, and under "" those of the command itself (its usage lines
   * without a subcommand); each list holds the global flags too when the command is a client
   * command, and `--help`.
   */
  readonly flags: ReadonlyMap<string, readonly string[]>;
}

/** A flag as help writes it: `--name` or `-x`, after a space, `[`, `(` or `|`. */
const FLAG = /(?<=^|[\s[(|])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?=$|[\s\]=)|,.])/g;

/** The usage part of a usage line: up to a gap of two spaces (the explanation column). */
function usagePart(line: string): string {
  return line.trim().split(/\s{2,}/)[0];
}

/** The help's usage blocks: a `  edgenode ...` line and the lines indented under it. */
function blocks(help: string): string[][] {
  const found: string[][] = [];
  for (const line of help.split("\n")) {
    if (/^ {2}\S/.test(line)) found.push([line]);
    else found.at(-1)?.push(line);
  }
  return found;
}

/**
 * The subcommands a usage line names after `edgenode NAME`: a lower-case word, or several
 * joined by `|` (`completion bash|zsh|fish`); none when the next word is an argument or a flag.
 */
function subcommandsOf(line: string, name: string): string[] {
  const words = usagePart(line).split(/\s+/);
  const subs = words[1] === name ? (words[2] ?? "").split("|") : [];
  return subs.every((sub) => /^[a-z][a-z0-9-]*$/.test(sub)) ? subs : [];
}

/** The subcommands and flags `command`'s help names. */
export function commandWords(command: Command): CommandWords {
  const flags = new Map<string, Set<string>>();
  const subcommands: string[] = [];
  for (const [first, ...rest] of blocks(command.help ?? "")) {
    const named = [first, ...rest].flatMap((line) => [...line.matchAll(FLAG)].map(([f]) => f));
    const subs = subcommandsOf(first, command.name);
    for (const sub of subs.length > 0 ? subs : [""]) {
      if (sub && !subcommands.includes(sub)) subcommands.push(sub);
      flags.set(sub, new Set([...flags.get(sub) ?? [], ...named]));
    }
  }
  const common = [
    ...(command.local ? [] : Object.keys(GLOBAL_OPTIONS).map((flag) => `--${flag}`)),
    "--help",
  ];
  return {
    subcommands,
    flags: new Map(
      [...(flags.size > 0 ? flags : new Map([["", new Set<string>()]]))].map((
        [sub, named],
      ) => [sub, [...new Set([...named, ...common])]]),
    ),
  };
}

/**
 * The subcommand of `command` that `args` (its arguments so far) name, after any global flags
 * (splitSubcommand); undefined when they name none.
 */
export function subcommandIn(command: Command, args: readonly string[]): string | undefined {
  const { sub } = splitSubcommand(args);
  return sub !== undefined && commandWords(command).subcommands.includes(sub) ? sub : undefined;
}

/** The flags `command` takes after `args` (its arguments so far): its subcommand's, else its own. */
export function flagsAfter(command: Command, args: readonly string[]): readonly string[] {
  const words = commandWords(command);
  return words.flags.get(subcommandIn(command, args) ?? "") ?? words.flags.get("") ?? [];
}
