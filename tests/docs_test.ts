/**
 * The README leads and docs/ holds together: the quickstart near the top and short, a link to
 * every page, links and anchors that resolve, and `code spans` that never wrap in the raw text
 * (where a wrapped span reads as two broken ones). What the blocks do is tests/readme_test.ts's.
 */
import assert from "node:assert/strict";
import { dirname, join, normalize } from "node:path";
import { WALKTHROUGH_FILES } from "./helpers/readme_blocks.ts";

const REPO = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

async function text(file: string): Promise<string> {
  return await Deno.readTextFile(`${REPO}/${file}`);
}

/** The lines outside fenced blocks, with their 1-based numbers. */
function proseLines(markdown: string): { line: number; text: string }[] {
  let fenced = false;
  const lines: { line: number; text: string }[] = [];
  markdown.split("\n").forEach((text, i) => {
    if (text.trimStart().startsWith("```")) fenced = !fenced;
    else if (!fenced) lines.push({ line: i + 1, text });
  });
  return lines;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes. */
export function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replaceAll(" ", "-");
}

function anchorsOf(markdown: string): Set<string> {
  return new Set(
    proseLines(markdown).filter(({ text }) => /^#{1,6} /.test(text))
      .map(({ text }) => anchorOf(text.replace(/^#+ /, ""))),
  );
}

Deno.test("anchorOf: GitHub's anchors", () => {
  assert.equal(anchorOf("Models by name: `edgenode pull`"), "models-by-name-edgenode-pull");
  assert.equal(anchorOf("The hub: nodes across networks"), "the-hub-nodes-across-networks");
  assert.equal(anchorOf("Microservices (mcm)"), "microservices-mcm");
});

Deno.test("the README: the quickstart within its first 100 lines, under 60 lines long", async () => {
  const lines = (await text("README.md")).split("\n");
  const start = lines.findIndex((line) => line === "## Quickstart");
  assert.ok(start >= 0 && start < 100, `## Quickstart at line ${start + 1}`);
  const length = lines.slice(start + 1).findIndex((line) => line.startsWith("## ")) + 1;
  assert.ok(length > 0 && length < 60, `the quickstart is ${length} lines`);
  assert.ok(lines.length < 250, `the README has ${lines.length} lines: the reference is docs/'s`);
});

Deno.test("the README links every page of docs/", async () => {
  const readme = await text("README.md");
  const pages = WALKTHROUGH_FILES.filter((file) => file.startsWith("docs/"));
  const missing = pages.filter((page) => !readme.includes(`](${page})`));
  assert.deepEqual(missing, [], "the README's table of contents lacks these");
});

Deno.test("every relative link of the README and docs/ reaches a file, and its anchor", async () => {
  const broken: string[] = [];
  for (const file of WALKTHROUGH_FILES) {
    for (const { line, text: prose } of proseLines(await text(file))) {
      for (const [, target] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target)) continue; // http(s), mailto
        const [path, anchor] = target.split("#");
        const linked = path ? normalize(join(dirname(file), path)) : file;
        const found = await Deno.stat(`${REPO}/${linked}`).then(() => true, () => false);
        if (!found) broken.push(`${file}:${line}: ${target} (no ${linked})`);
        else if (anchor && linked.endsWith(".md") && !anchorsOf(await text(linked)).has(anchor)) {
          broken.push(`${file}:${line}: ${target} (no heading #${anchor} in ${linked})`);
        }
      }
    }
  }
  assert.deepEqual(broken, []);
});

Deno.test("no code span wraps across lines in the README and docs/", async () => {
  const wrapped: string[] = [];
  for (const file of WALKTHROUGH_FILES) {
    for (const { line, text: prose } of proseLines(await text(file))) {
      if ((prose.match(/`/g) ?? []).length % 2 === 1) wrapped.push(`${file}:${line}: ${prose}`);
    }
  }
  assert.deepEqual(wrapped, [], "a `code span` opened on one line and closed on the next");
});
