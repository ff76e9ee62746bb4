/**
 * The program's one table of commands (src/main.ts) holds together: each word selects one
 * command, and each command's help holds only its own usage blocks, which `CMD --help` prints.
 */
import assert from "node:assert/strict";
import { COMMANDS } from "../src/main.ts";

Deno.test("every word of the command table selects one command", () => {
  const words = COMMANDS.flatMap((command) => [command.name, ...(command.aliases ?? [])]);
  assert.deepEqual(words.filter((word, i) => words.indexOf(word) !== i), []);
});

Deno.test("each command's help is usage blocks of that command only", () => {
  for (const command of COMMANDS) {
    if (command.help === undefined) {
      assert.match(command.name, /^__/, `${command.name} has no help`);
      continue;
    }
    for (const line of command.help.split("\n")) {
      if (/^ {2}\S/.test(line)) assert.match(line, new RegExp(`^ {2}edgenode ${command.name}\\b`));
      else assert.match(line, /^ {4}/, `${command.name}: ${line}`);
    }
  }
});

Deno.test("help lines fit a 100-column terminal", () => {
  for (const command of COMMANDS) {
    for (const line of command.help?.split("\n") ?? []) {
      assert.ok(line.length <= 100, `${command.name}: ${line.length} columns: ${line}`);
    }
  }
});
