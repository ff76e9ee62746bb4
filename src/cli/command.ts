/**
 * A command of the program as data. Each `cli/*` module exports its commands as values of this
 * type; `main.ts` lists them in one table, and dispatch, `edgenode help`, `edgenode CMD --help`
 * and "did you mean" are all made from that table (src/cli/command_line.ts).
 *
 * @example
 * ```ts
 * import type { Command } from "./command.ts";
 *
 * const hello: Command = {
 *   name: "hello",
 *   help: "  edgenode hello        Prints hello.",
 *   local: true,
 *   run: () => Promise.resolve((console.log("hello"), 0)),
 * };
 * ```
 *
 * @module
 */
import type { Env } from "./cli_context.ts";

/** One command: what the user types, its usage, and what runs it. */
export interface Command {
  /** The word that selects it (`models`); "did you mean" offers it. */
  readonly name: string;
  /** Other words for it (`--version`), never offered by "did you mean". */
  readonly aliases?: readonly string[];
  /**
   * Its usage blocks as `edgenode help` prints them: lines `  edgenode NAME ...`, each followed by
   * its explanation indented further. None for the program's own entries (`__node`), which
   * the help and "did you mean" leave out.
   */
  readonly help?: string;
  /**
   * Runs on this machine alone, not against a node: its `--help` leaves out the client
   * commands' global flags.
   */
  readonly local?: boolean;
  /** Runs it with the arguments after its name; resolves to the exit code. */
  run(args: string[], env: Env): Promise<number>;
}
