import assert from "node:assert/strict";
import { checkoutCommit } from "./version_command.ts";
import { withTempDir } from "../../testing/node.ts";

const A = "a".repeat(40);
const B = "b".repeat(40);
const C = "c".repeat(40);

Deno.test("checkoutCommit reads HEAD, the loose ref, packed-refs, a worktree's .git file", () =>
  withTempDir(async (dir) => {
    const root = `${dir}/repo`;
    assert.equal(checkoutCommit(root), undefined, "no checkout: none");
    await Deno.mkdir(`${root}/.git/refs/heads`, { recursive: true });
    await Deno.writeTextFile(`${root}/.git/HEAD`, "ref: refs/heads/main\n");
    await Deno.writeTextFile(
      `${root}/.git/packed-refs`,
      `# pack-refs with: peeled fully-peeled sorted\n${A} refs/heads/main\n${C} refs/tags/v1\n`,
    );
    assert.equal(checkoutCommit(root), A, "packed");
    await Deno.writeTextFile(`${root}/.git/refs/heads/main`, `${B}\n`);
    assert.equal(checkoutCommit(root), B, "a loose ref wins over the packed one");
    assert.equal(checkoutCommit(new URL(`file://${root}/`)), B, "a file: URL");
    // A worktree: `.git` is a file naming its git dir, whose commondir holds the refs.
    await Deno.mkdir(`${root}/.git/worktrees/wt`, { recursive: true });
    await Deno.writeTextFile(`${root}/.git/worktrees/wt/HEAD`, "ref: refs/tags/v1\n");
    await Deno.writeTextFile(`${root}/.git/worktrees/wt/commondir`, "../..\n");
    await Deno.mkdir(`${dir}/wt/src`, { recursive: true });
    await Deno.writeTextFile(`${dir}/wt/.git`, `gitdir: ${root}/.git/worktrees/wt\n`);
    assert.equal(checkoutCommit(`${dir}/wt`), C);
    await Deno.writeTextFile(`${root}/.git/HEAD`, `${C}\n`);
    assert.equal(checkoutCommit(root), C, "a detached HEAD");
    assert.equal(checkoutCommit(new URL("https://example.com/")), undefined);
  }));

Deno.test("checkoutCommit reads only the root's .git, never one above it", () =>
  withTempDir(async (dir) => {
    // A .git planted above the root (as /tmp/.git could be) is not the checkout's.
    await Deno.mkdir(`${dir}/.git`, { recursive: true });
    await Deno.writeTextFile(`${dir}/.git/HEAD`, `${A}\n`);
    await Deno.mkdir(`${dir}/build/src/cli`, { recursive: true });
    assert.equal(checkoutCommit(`${dir}/build`), undefined);
    assert.equal(checkoutCommit(dir), A);
  }));

Deno.test("checkoutCommit reads regular files only: a FIFO for a ref does not hang it", () =>
  withTempDir(async (dir) => {
    const hasMkfifo = await new Deno.Command("mkfifo", { args: [`${dir}/probe`] }).output()
      .then((o) => o.success, () => false);
    if (!hasMkfifo) return console.log("skipped: no mkfifo");
    await Deno.mkdir(`${dir}/repo/.git/refs/heads`, { recursive: true });
    await Deno.writeTextFile(`${dir}/repo/.git/HEAD`, "ref: refs/heads/main\n");
    await new Deno.Command("mkfifo", { args: [`${dir}/repo/.git/refs/heads/main`] }).output();
    // In a process of its own: a read of the FIFO would block it for good, not this test.
    const module = new URL("./version_command.ts", import.meta.url).href;
    const code = `import { checkoutCommit } from ${JSON.stringify(module)};\n` +
      `console.log(checkoutCommit(${JSON.stringify(`${dir}/repo`)}) ?? "none");`;
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--no-check", code],
      signal: AbortSignal.timeout(20_000),
      stdout: "piped",
    }).output();
    assert.equal(output.success, true, "it answers, the FIFO unread");
    assert.equal(new TextDecoder().decode(output.stdout).trim(), "none");
  }));
