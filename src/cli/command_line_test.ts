import assert from "node:assert/strict";
import { parseArgs } from "node:util";
import { ConfigError } from "../config/config_error.ts";
import type { Command } from "./command.ts";
import { helpCommand, programHelp, runCommandLine } from "./command_line.ts";
import { versionCommand } from "./version_command.ts";

/** Runs the command line on `commands`, with what it printed. */
async function run(commands: readonly Command[], args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const { log, error } = console;
  console.log = (line: string) => void out.push(line);
  console.error = (line: string) => void err.push(line);
  try {
    const code = await runCommandLine(commands, args, () => undefined);
    return { code, stdout: out.join("\n"), stderr: err.join("\n") };
  } finally {
    Object.assign(console, { log, error });
  }
}

const ran: string[][] = [];
const COMMANDS: readonly Command[] = [
  {
    name: "models",
    help: "  edgenode models ls\n      Lists them.",
    run: (args) => Promise.resolve((ran.push(args), 0)),
  },
  {
    name: "issuer",
    help: "  edgenode issuer init",
    local: true,
    run: () => Promise.reject(new ConfigError("unknown issuer command")),
  },
  { name: "crash", help: "  edgenode crash", run: () => Promise.reject(new Error("boom")) },
  versionCommand("9.9.9"),
  helpCommand(() => programHelp("9.9.9", COMMANDS)),
  { name: "__own", run: () => Promise.resolve(7) },
];

Deno.test("the command line runs the command its first word names, with the rest", async () => {
  ran.length = 0;
  assert.equal((await run(COMMANDS, ["models", "ls", "--ready"])).code, 0);
  assert.deepEqual(ran, [["ls", "--ready"]]);
  assert.equal((await run(COMMANDS, ["__own"])).code, 7);
  const version = await run(COMMANDS, ["--version"]);
  assert.equal(version.code, 0);
  assert.match(version.stdout, /^edgenode 9\.9\.9\ndeno {5}\d/);
});

Deno.test("the program's help lists every command with help, in the table's order", async () => {
  for (const args of [[], ["help"], ["--help"], ["-h"]]) {
    const { code, stdout } = await run(COMMANDS, args);
    assert.equal(code, 0);
    assert.match(stdout, /^edgenode 9\.9\.9: /);
    assert.match(stdout, /Usage:\n {2}edgenode models ls\n {6}Lists them\.\n {2}edgenode issuer/);
    assert.doesNotMatch(stdout, /__own/);
  }
});

Deno.test("CMD --help prints its usage, with the global flags unless it is local", async () => {
  const client = await run(COMMANDS, ["models", "ls", "--help"]);
  assert.equal(client.code, 0);
  assert.match(client.stdout, /^Usage:\n {2}edgenode models ls\n {6}Lists them\.\n\nGlobal flags/);
  const local = await run(COMMANDS, ["issuer", "-h"]);
  assert.equal(local.stdout, "Usage:\n  edgenode issuer init");
});

Deno.test("a mistyped command gets 'did you mean' from the names with help; errors exit 2 or 1", async () => {
  const typo = await run(COMMANDS, ["modles"]);
  assert.equal(typo.code, 2);
  assert.equal(
    typo.stderr,
    "edgenode: unknown command 'modles'; did you mean 'models'? ('edgenode help' lists the commands)",
  );
  assert.doesNotMatch((await run(COMMANDS, ["__ow"])).stderr, /did you mean/);
  assert.deepEqual(await run(COMMANDS, ["issuer"]), {
    code: 2,
    stdout: "",
    stderr: "edgenode: unknown issuer command",
  });
  assert.deepEqual(await run(COMMANDS, ["crash"]), {
    code: 1,
    stdout: "",
    stderr: "edgenode: boom",
  });
});

Deno.test("an unknown flag: the nearest the command or its subcommand takes, exit 2", async () => {
  const commands: Command[] = [{
    name: "models",
    help: "  edgenode models pull ID URL [--force]\n  edgenode models ls [--ready]",
    run: (args) => {
      parseArgs({ args, options: { force: { type: "boolean" } }, allowPositionals: true });
      return Promise.resolve(0);
    },
  }];
  assert.deepEqual(await run(commands, ["models", "pull", "a", "--forse"]), {
    code: 2,
    stdout: "",
    stderr: "edgenode: unknown option --forse; did you mean --force?",
  });
  // --jsno is near --json, a global flag of every client command.
  assert.equal(
    (await run(commands, ["models", "pull", "--jsno"])).stderr,
    "edgenode: unknown option --jsno; did you mean --json?",
  );
  assert.equal(
    (await run(commands, ["models", "ls", "--colour"])).stderr,
    "edgenode: unknown option --colour ('edgenode models ls --help' lists its flags)",
  );
});
