import assert from "node:assert/strict";
import { commandsOf, shellBlocks, walkthroughScript } from "./readme_blocks.ts";

const PAGE = [
  "# Page", //  1
  "", //        2
  "```sh", //   3
  "N=1", //     4
  "echo $N", // 5
  "```", //     6
  "## Part", // 7
  "```json", // 8
  "{}", //      9
  "```", //     10
  "```sh", //   11
  "$ edgenode version", // 12
  "edgenode 0.1.0", // 13
  "```", //     14
].join("\n");

Deno.test("shellBlocks: sh and ts blocks with their file, first line and heading", () => {
  const blocks = shellBlocks(PAGE, "docs/page.md");
  assert.deepEqual(blocks.map(({ file, line, heading }) => ({ file, line, heading })), [
    { file: "docs/page.md", line: 4, heading: "Page" },
    { file: "docs/page.md", line: 12, heading: "Part" },
  ]);
  assert.equal(commandsOf(blocks[1]), "edgenode version\n");
});

Deno.test("walkthroughScript: script lines map back to the file's lines", () => {
  const blocks = shellBlocks(PAGE, "docs/page.md");
  const walk = walkthroughScript("set -eu\ncd /tmp", blocks, [{ from: "echo", to: "printf" }]);
  const lines = walk.script.split("\n");
  const at = lines.indexOf("printf $N") + 1;
  assert.equal(walk.readmeLine(at), 5);
  assert.equal(walk.blockOf(at)?.file, "docs/page.md");
  assert.equal(walk.readmeLine(lines.indexOf("edgenode version") + 1), 12);
  assert.equal(walk.readmeLine(1), undefined, "the prelude's lines are no file's");
});
