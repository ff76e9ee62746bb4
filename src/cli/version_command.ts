/**
 * `edgenode version` (and `--version`, `-v`): the program's version, the Deno it runs on, the
 * machine's OS and architecture, and the git commit it was built from. A bundle written by
 * `deno task bundle` (scripts/bundle.ts) carries its commit in {@link BUILT_FROM}, as does the
 * executable `deno task compile` builds from it; a checkout's is read from the `.git` at its root,
 * without running git; else (a bundle or an executable not stamped) it is "unknown".
 *
 * @module
 */
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { Command } from "./command.ts";
import { printJson } from "./output.ts";

/**
 * The commit a bundle was built from: scripts/bundle.ts replaces this string in the bundle it
 * writes. Anything but 40 hex digits means "not built that way".
 */
export const BUILT_FROM = "edgenode-build-commit";

/** What `edgenode version --json` prints. */
export interface VersionInfo {
  edgenode: string;
  deno: string;
  os: string;
  arch: string;
  /** The git commit, 40 hex digits, or "unknown". */
  commit: string;
}

const COMMIT = /^[0-9a-f]{40}$/;

/** Git's files are small: anything larger is not one. */
const MAX_GIT_FILE = 16 << 20;

/** The trimmed text of the regular file at `path` (never a FIFO, which would block the read). */
function readText(path: string): string | undefined {
  try {
    const info = Deno.statSync(path);
    if (!info.isFile || info.size > MAX_GIT_FILE) return undefined;
    return Deno.readTextFileSync(path).trim();
  } catch {
    return undefined;
  }
}

/** The git directory of the checkout at `root` (a worktree's `.git` file followed), if any. */
function gitDirAt(root: string): string | undefined {
  const dotGit = join(root, ".git");
  const file = readText(dotGit);
  if (file?.startsWith("gitdir: ")) return resolve(root, file.slice("gitdir: ".length));
  if (readText(join(dotGit, "HEAD")) !== undefined) return dotGit;
  return undefined;
}

/** The commit `ref` names in `gitDir` (or its common dir): a loose ref, else packed-refs. */
function refCommit(gitDir: string, ref: string): string | undefined {
  const common = resolve(gitDir, readText(join(gitDir, "commondir")) ?? ".");
  for (const dir of [gitDir, common]) {
    const loose = readText(join(dir, ref));
    if (loose && COMMIT.test(loose)) return loose;
  }
  for (const line of (readText(join(common, "packed-refs")) ?? "").split("\n")) {
    const [commit, name] = line.split(" ");
    if (name === ref && COMMIT.test(commit)) return commit;
  }
  return undefined;
}

/**
 * The commit checked out in the git checkout whose root is `root` (a path or a file: URL), read
 * from its files (HEAD, the ref, packed-refs); undefined when there is none or it cannot be
 * read. Only `root/.git` is read: never a directory above, where anyone could plant one.
 */
export function checkoutCommit(root: string | URL): string | undefined {
  if (root instanceof URL && root.protocol !== "file:") return undefined;
  const gitDir = gitDirAt(root instanceof URL ? fileURLToPath(root) : root);
  const head = gitDir && readText(join(gitDir, "HEAD"));
  if (!gitDir || !head) return undefined;
  if (COMMIT.test(head)) return head; // A detached HEAD.
  const ref = /^ref: (\S+)$/.exec(head)?.[1];
  return ref ? refCommit(gitDir, ref) : undefined;
}

/**
 * The root of the source checkout this module runs from (it sits in src/cli/ there); undefined
 * in a bundle or a compiled executable, whose path says nothing about a checkout.
 */
function sourceCheckoutRoot(moduleUrl: string = import.meta.url): URL | undefined {
  if (Deno.build.standalone || !moduleUrl.endsWith("/src/cli/version_command.ts")) {
    return undefined;
  }
  return new URL("../../", moduleUrl);
}

/** The commit of the source checkout this module runs from, if it runs from one. */
function commitOfSource(): string | undefined {
  const root = sourceCheckoutRoot();
  return root && checkoutCommit(root);
}

/** The version facts of this program. */
export function versionInfo(version: string): VersionInfo {
  return {
    edgenode: version,
    deno: Deno.version.deno,
    os: Deno.build.os,
    arch: Deno.build.arch,
    commit: COMMIT.test(BUILT_FROM) ? BUILT_FROM : commitOfSource() ?? "unknown",
  };
}

/** `edgenode version [--json]`, for the program at `version`. */
export function versionCommand(version: string): Command {
  return {
    name: "version",
    aliases: ["--version", "-v"],
    help: `  edgenode version [--json]
      Prints the edgenode version, the Deno version it runs on, the OS and architecture, and
      the git commit it was built from ("unknown" outside a checkout or a built bundle).`,
    local: true,
    run: (args) => {
      const { values } = parseArgs({ args, options: { json: { type: "boolean" } }, strict: true });
      const info = versionInfo(version);
      if (values.json) printJson(info);
      else {
        console.log(`edgenode ${info.edgenode}`);
        console.log(`deno     ${info.deno}`);
        console.log(`os       ${info.os} ${info.arch}`);
        console.log(`commit   ${info.commit}`);
      }
      return Promise.resolve(0);
    },
  };
}
