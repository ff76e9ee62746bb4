/**
 * `edgenode version` (and `--version`, `-v`): the program's version, the Deno it runs on, the
 * machine's OS and architecture, and the git commit it was built from. A bundle written by
 * `deno task bundle` (scripts/bundle.ts) carries its commit in {@link BUILT_FROM}; a checkout's
 * is read from its `.git` beside the source, without running git; else it is "unknown".
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
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

function readText(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path).trim();
  } catch {
    return undefined;
  }
}

/** The git directory of the checkout holding `dir` (a worktree's `.git` file followed). */
function gitDirAbove(dir: string): string | undefined {
  for (let at = dir;; at = dirname(at)) {
    const dotGit = join(at, ".git");
    const file = readText(dotGit);
    if (file?.startsWith("gitdir: ")) return resolve(at, file.slice("gitdir: ".length));
    if (readText(join(dotGit, "HEAD")) !== undefined) return dotGit;
    if (dirname(at) === at) return undefined;
  }
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
 * The commit checked out in the git checkout holding the module at `moduleUrl`, read from its
 * files (HEAD, the ref, packed-refs); undefined when there is none or it cannot be read.
 */
export function checkoutCommit(moduleUrl: string = import.meta.url): string | undefined {
  if (!moduleUrl.startsWith("file:")) return undefined;
  const gitDir = gitDirAbove(dirname(fileURLToPath(moduleUrl)));
  const head = gitDir && readText(join(gitDir, "HEAD"));
  if (!gitDir || !head) return undefined;
  if (COMMIT.test(head)) return head; // A detached HEAD.
  const ref = /^ref: (\S+)$/.exec(head)?.[1];
  return ref ? refCommit(gitDir, ref) : undefined;
}

/** The version facts of this program. */
export function versionInfo(version: string): VersionInfo {
  return {
    edgenode: version,
    deno: Deno.version.deno,
    os: Deno.build.os,
    arch: Deno.build.arch,
    commit: COMMIT.test(BUILT_FROM) ? BUILT_FROM : checkoutCommit() ?? "unknown",
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
