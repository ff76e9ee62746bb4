/**
 * The README's shell blocks, read as a user reads them, and turned into one bash script that
 * runs them in order (variables set in one block are used by the next, as in a terminal).
 *
 * @module
 */

/** A fenced ```sh (or ```ts) block of the README. */
export interface ShellBlock {
  /** `sh`, or `ts` for TypeScript run with Deno. */
  lang: "sh" | "ts";
  /** The README line of its first command line (1-based). */
  line: number;
  /** The heading it stands under. */
  heading: string;
  /** Its lines, as written. */
  text: string;
}

/** Every ```sh and ```ts block of a Markdown text. */
export function shellBlocks(markdown: string): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  let heading = "";
  let open: { line: number; lang: string; lines: string[] } | undefined;
  markdown.split("\n").forEach((text, i) => {
    if (open) {
      if (text.trim() === "```") {
        if (open.lang === "sh" || open.lang === "ts") {
          blocks.push({ line: open.line, lang: open.lang, heading, text: open.lines.join("\n") });
        }
        open = undefined;
      } else open.lines.push(text);
    } else if (text.startsWith("```")) {
      open = { line: i + 2, lang: text.slice(3).trim(), lines: [] };
    } else if (text.startsWith("#")) heading = text.replace(/^#+\s*/, "");
  });
  return blocks;
}

/**
 * The commands of a block: a terminal transcript (`$ cmd` lines followed by output) keeps only
 * its commands; other blocks are run whole. Line count is kept, so script lines map back.
 */
export function commandsOf(block: ShellBlock): string {
  const lines = block.text.split("\n");
  if (!lines.some((line) => line.startsWith("$ "))) return block.text;
  return lines.map((line) => line.startsWith("$ ") ? line.slice(2) : "").join("\n");
}

/** A replacement applied to every run block: where the README points at the world. */
export interface Substitution {
  from: string | RegExp;
  to: string;
}

/** The generated script and how its lines map back to the README. */
export interface WalkthroughScript {
  script: string;
  /** The README line of a script line (1-based both), for lines that come from the README. */
  readmeLine(scriptLine: number): number | undefined;
  /** The block a script line belongs to. */
  blockOf(scriptLine: number): ShellBlock | undefined;
}

/**
 * One bash script: the `prelude` (functions the harness provides), then each block after a
 * line recording which block runs, with `substitutions` applied. A TypeScript block is written
 * to a file and run by `runTs FILE` (a function the prelude defines).
 */
export function walkthroughScript(
  prelude: string,
  blocks: ShellBlock[],
  substitutions: Substitution[],
): WalkthroughScript {
  const lines = prelude.split("\n");
  const spans: { start: number; block: ShellBlock; count: number }[] = [];
  for (const block of blocks) {
    const ts = block.lang === "ts";
    lines.push(`__block_line=${block.line}${ts ? "; cat > snippet.ts <<'END_OF_SNIPPET'" : ""}`);
    let text = commandsOf(block);
    for (const { from, to } of substitutions) text = text.replaceAll(from, to);
    const own = text.split("\n");
    spans.push({ start: lines.length + 1, block, count: own.length });
    lines.push(...own);
    if (ts) lines.push("END_OF_SNIPPET", "runTs snippet.ts");
  }
  const spanOf = (scriptLine: number) =>
    spans.find((s) => scriptLine >= s.start && scriptLine < s.start + s.count);
  return {
    script: lines.join("\n") + "\n",
    readmeLine(scriptLine) {
      const span = spanOf(scriptLine);
      return span && span.block.line + (scriptLine - span.start);
    },
    blockOf: (scriptLine) => spanOf(scriptLine)?.block,
  };
}
