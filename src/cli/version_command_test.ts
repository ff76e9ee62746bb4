import assert from "node:assert/strict";
import { checkoutCommit } from "./version_command.ts";
import { withTempDir } from "../../testing/node.ts";

const A = "a".repeat(40);
const B = "b".repeat(40);
const C = "c".repeat(40);

/** The URL of a module at `path`, as import.meta.url gives it. */
const moduleAt = (path: string) => new URL(`file://${path}`).href;

Deno.test("checkoutCommit reads HEAD, the loose ref, packed-refs, a worktree's .git file", () =>
  withTempDir(async (dir) => {
    const source = `${dir}/repo/src/cli/version_command.ts`;
    assert.equal(checkoutCommit(moduleAt(source)), undefined, "no checkout above: none");
    await Deno.mkdir(`${dir}/repo/.git/refs/heads`, { recursive: true });
    await Deno.writeTextFile(`${dir}/repo/.git/HEAD`, "ref: refs/heads/main\n");
    await Deno.writeTextFile(
      `${dir}/repo/.git/packed-refs`,
      `# pack-refs with: peeled fully-peeled sorted\n${A} refs/heads/main\n${C} refs/tags/v1\n`,
    );
    assert.equal(checkoutCommit(moduleAt(source)), A, "packed");
    await Deno.writeTextFile(`${dir}/repo/.git/refs/heads/main`, `${B}\n`);
    assert.equal(checkoutCommit(moduleAt(source)), B, "a loose ref wins over the packed one");
    // A worktree: `.git` is a file naming its git dir, whose commondir holds the refs.
    await Deno.mkdir(`${dir}/repo/.git/worktrees/wt`, { recursive: true });
    await Deno.writeTextFile(`${dir}/repo/.git/worktrees/wt/HEAD`, "ref: refs/tags/v1\n");
    await Deno.writeTextFile(`${dir}/repo/.git/worktrees/wt/commondir`, "../..\n");
    await Deno.mkdir(`${dir}/wt/src`, { recursive: true });
    await Deno.writeTextFile(`${dir}/wt/.git`, `gitdir: ${dir}/repo/.git/worktrees/wt\n`);
    assert.equal(checkoutCommit(moduleAt(`${dir}/wt/src/x.ts`)), C);
    await Deno.writeTextFile(`${dir}/repo/.git/HEAD`, `${C}\n`);
    assert.equal(checkoutCommit(moduleAt(source)), C, "a detached HEAD");
    assert.equal(checkoutCommit("https://example.com/src/main.ts"), undefined);
  }));
