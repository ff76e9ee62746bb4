/**
 * The program's one table of commands (src/main.ts) holds together: each word selects one
 * command, and each command's help holds only its own usage blocks, which `CMD --help` prints.
 * What is made from the table runs as users run it: the shell completion scripts, `version`,
 * and "did you mean" for a mistyped flag.
 */
import assert from "node:assert/strict";
import meta from "../deno.json" with { type: "json" };
import { COMMANDS } from "../src/main.ts";
import { debianPackage } from "../testing/debian.ts";
import { runEdgenode, withTempDir } from "../testing/node.ts";

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

/** Whether `program` runs here (`program --version`). */
function runs(program: string): Promise<boolean> {
  return new Deno.Command(program, { args: ["--version"], stdout: "null", stderr: "null" })
    .output().then((output) => output.success, () => false);
}

/** The shell `program` from Debian, installed when missing; false (and why, printed) if not. */
async function installed(program: "zsh" | "fish"): Promise<boolean> {
  const shell = await debianPackage(program, () => runs(program));
  if (shell !== true) console.log(`skipped the ${program} check: ${shell.missing}`);
  return shell === true;
}

/** Runs `script` in bash and prints COMPREPLY after `_edgenode` for `words`. */
async function bashCompletes(script: string, words: string[]): Promise<string[]> {
  const program = `source ${script}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); ` +
    `COMP_CWORD=${words.length - 1}; _edgenode; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const output = await new Deno.Command("bash", { args: ["--norc", "-c", program] }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  return new TextDecoder().decode(output.stdout).split("\n").filter(Boolean);
}

Deno.test("completion: bash completes commands, subcommands and flags; zsh and fish parse", () =>
  withTempDir(async (dir) => {
    for (const shell of ["bash", "zsh", "fish"]) {
      const printed = await runEdgenode(["completion", shell]);
      assert.equal(printed.code, 0, printed.stderr);
      await Deno.writeTextFile(`${dir}/edgenode.${shell}`, printed.stdout);
    }
    const bash = `${dir}/edgenode.bash`;
    assert.deepEqual(await bashCompletes(bash, ["edgenode", "con"]), ["containers"]);
    assert.deepEqual(await bashCompletes(bash, ["edgenode", "models", "p"]), ["push", "pull"]);
    assert.deepEqual(await bashCompletes(bash, ["edgenode", "models", "pull", "x", "--fo"]), [
      "--force",
    ]);
    assert.deepEqual(await bashCompletes(bash, ["edgenode", "serve", "--p"]), ["--port"]);
    // Every command of the table, read from its help: the new ones too.
    const all = await bashCompletes(bash, ["edgenode", ""]);
    for (const command of COMMANDS.filter((c) => c.help)) assert.ok(all.includes(command.name));
    assert.ok(!all.some((word) => word.startsWith("__")), "the program's own entries stay out");

    for (const [shell, check] of [["zsh", ["-n"]], ["fish", ["-n"]]] as const) {
      if (!await installed(shell)) continue;
      const parsed = await new Deno.Command(shell, { args: [...check, `${dir}/edgenode.${shell}`] })
        .output();
      assert.ok(parsed.success, `${shell}: ${new TextDecoder().decode(parsed.stderr)}`);
    }
    if (await installed("fish")) {
      const fish = await new Deno.Command("fish", {
        args: ["-c", `source ${dir}/edgenode.fish; complete -C 'edgenode models pu'`],
      }).output();
      assert.deepEqual(new TextDecoder().decode(fish.stdout).trim().split("\n"), ["pull", "push"]);
    }
    const wrong = await runEdgenode(["completion", "powershell"]);
    assert.equal(wrong.code, 2);
    assert.equal(wrong.stderr, "edgenode: usage: edgenode completion bash|zsh|fish\n");
  }));

Deno.test("version, --version and -v: edgenode, deno, the machine and the commit", async () => {
  const head = new TextDecoder().decode(
    (await new Deno.Command("git", { args: ["rev-parse", "HEAD"], stderr: "null" }).output()
      .catch(() => ({ stdout: new Uint8Array() }))).stdout,
  ).trim();
  for (const args of [["version"], ["--version"], ["-v"]]) {
    const shown = await runEdgenode(args);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^edgenode \d+\.\d+\.\d+\ndeno {5}\d+\.\d+\.\d+\nos {7}\w+ \w+\n/);
  }
  const json = await runEdgenode(["version", "--json"]);
  const info = JSON.parse(json.stdout);
  assert.equal(info.deno, Deno.version.deno);
  assert.deepEqual([info.os, info.arch], [Deno.build.os, Deno.build.arch]);
  // This checkout's commit, read from .git without git (a worktree's .git file followed).
  assert.equal(info.commit, head || "unknown");
  const bad = await runEdgenode(["version", "--jsno"]);
  assert.equal(bad.code, 2);
  assert.equal(bad.stderr, "edgenode: unknown option --jsno; did you mean --json?\n");
});

Deno.test("serve --prot: did you mean --port, exit 2", async () => {
  const typo = await runEdgenode(["serve", "--prot", "9000"]);
  assert.equal(typo.code, 2);
  assert.equal(typo.stderr, "edgenode: unknown option --prot; did you mean --port?\n");
});

Deno.test("the bundle (deno task bundle) carries the commit it was built from", () =>
  withTempDir(async (dir) => {
    const head = new TextDecoder().decode(
      (await new Deno.Command("git", { args: ["rev-parse", "HEAD"], stderr: "null" }).output()
        .catch(() => ({ stdout: new Uint8Array() }))).stdout,
    ).trim();
    // The task's own command, writing into the temporary folder, outside any checkout.
    const task = meta.tasks.bundle.replace("dist/edgenode.js", `${dir}/edgenode.js`);
    const bundled = await new Deno.Command(Deno.execPath(), {
      args: task.split(" ").slice(1),
      cwd: new URL("../", import.meta.url).pathname,
      stderr: "piped",
    }).output();
    assert.ok(bundled.success, new TextDecoder().decode(bundled.stderr));
    const shown = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `${dir}/edgenode.js`, "version", "--json"],
      cwd: dir,
      stdout: "piped",
    }).output();
    assert.equal(JSON.parse(new TextDecoder().decode(shown.stdout)).commit, head || "unknown");
  }));

Deno.test("a bundle not stamped says 'unknown', whatever .git lies above it", () =>
  withTempDir(async (dir) => {
    // A .git a local user could plant (/tmp/.git, /.git): the old walk upwards read it.
    await Deno.mkdir(`${dir}/.git`);
    await Deno.writeTextFile(`${dir}/.git/HEAD`, `${"a".repeat(40)}\n`);
    const bundle = `${dir}/src/cli/edgenode.js`;
    const bundled = await new Deno.Command(Deno.execPath(), {
      args: ["bundle", "--node-modules-dir=none", "--platform=deno", "-o", bundle]
        .concat(["src/executable.ts"]),
      cwd: new URL("../", import.meta.url).pathname,
      stderr: "piped",
    }).output();
    assert.ok(bundled.success, new TextDecoder().decode(bundled.stderr));
    const shown = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", bundle, "version", "--json"],
      cwd: dir,
      stdout: "piped",
    }).output();
    assert.equal(JSON.parse(new TextDecoder().decode(shown.stdout)).commit, "unknown");
  }));

Deno.test("each models subcommand takes its own flags; global flags may come first", async () => {
  const refused = async (args: string[], message: string) => {
    const run = await runEdgenode(args, { EDGENODE_NODE: "http://127.0.0.1:9" });
    assert.equal(run.code, 2, `${args.join(" ")}: ${run.stderr}`);
    assert.equal(run.stderr, `edgenode: ${message}\n`);
  };
  // Flags of another subcommand: refused before any request, not silently ignored.
  await refused(
    ["models", "ls", "--context", "5"],
    "unknown option --context ('edgenode models ls --help' lists its flags)",
  );
  await refused(
    ["models", "load", "x", "--kind", "llm"],
    "unknown option --kind ('edgenode models load --help' lists its flags)",
  );
  // The subcommand after global flags: it runs, and the suggestions are its own.
  await refused(
    ["models", "--json", "--node", "http://127.0.0.1:9", "load", "x", "--contxt", "5"],
    "unknown option --contxt; did you mean --context?",
  );
  await refused(
    ["containers", "--node=http://127.0.0.1:9", "logs", "x", "--folow"],
    "unknown option --folow; did you mean --follow?",
  );
  const found = await runEdgenode(["containers", "--node", "http://127.0.0.1:9", "ls"], {
    EDGENODE_KEY: "k".repeat(32),
  });
  assert.equal(found.code, 1, "the subcommand ran");
  assert.match(found.stderr, /^edgenode: cannot reach the node at http:\/\/127\.0\.0\.1:9/);
});
