/**
 * The shell blocks of the README and of docs/, read as a user reads them, and turned into one
 * bash script per file that runs its blocks in order (variables set in one block are used by the
 * next, as in a terminal; never by another file's).
 *
 * @module
 */

/**
 * The files the walkthrough runs, in this order: the README first (its first block starts the
 * node the others use), then every page of docs/ (a page not listed fails the test, so none is
 * left unrun). Uninstall is last: it removes what the others use.
 */
export const WALKTHROUGH_FILES = [
  "README.md",
  "docs/README.md",
  "docs/model-registry.md",
  "docs/models-api.md",
  "docs/identity-and-accounts.md",
  "docs/insight.md",
  "docs/discovery.md",
  "docs/hub.md",
  "docs/microservices.md",
  "docs/dashboard.md",
  "docs/cli.md",
  "docs/sdk.md",
  "docs/configuration.md",
  "docs/security.md",
  "docs/operations.md",
  "docs/troubleshooting.md",
  "docs/benchmarks.md",
  "docs/development.md",
  "docs/uninstall.md",
];

/** A fenced ```sh (or ```ts) block of a Markdown file. */
export interface ShellBlock {
  /** The file it is in, relative to the repository (`docs/hub.md`). */
  file: string;
  /** `sh`, or `ts` for TypeScript run with Deno. */
  lang: "sh" | "ts";
  /** The file's line of its first command line (1-based). */
  line: number;
  /** The heading it stands under. */
  heading: string;
  /** Its lines, as written. */
  text: string;
}

/** Every ```sh and ```ts block of a Markdown text, the text of `file`. */
export function shellBlocks(markdown: string, file = "README.md"): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  let heading = "";
  let open: { line: number; lang: string; lines: string[] } | undefined;
  markdown.split("\n").forEach((text, i) => {
    if (open) {
      if (text.trim() === "```") {
        if (open.lang === "sh" || open.lang === "ts") {
          blocks.push({
            file,
            line: open.line,
            lang: open.lang,
            heading,
            text: open.lines.join("\n"),
          });
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

/** The generated script and how its lines map back to its file. */
export interface WalkthroughScript {
  script: string;
  /** The file's line of a script line (1-based both), for lines that come from the file. */
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
