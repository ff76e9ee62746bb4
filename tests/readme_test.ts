/**
 * The README and docs/ run as written: every ```sh block (and ```ts block, with Deno) of each
 * file of WALKTHROUGH_FILES, in order, each file in a bash of its own (so no snippet can lean on
 * a variable another file set) with a fresh HOME, against the node the README's first block
 * starts (`npx -y deno@2.9.6 task start`), with the `edgenode` command its install step puts on
 * the PATH. The harness only points the docs at this machine: the model source and the hub's
 * public name become servers the test starts, and where port 8083 is taken the node uses another
 * (and the text follows). `edgenode serve` and `edgenode hub` in a block (re)start that process
 * in the background; it keeps running for the next files. A block that cannot run here is listed
 * below with the reason; a new block runs unless it is listed, and a listed block that no longer
 * exists fails the test.
 *
 * A request answered 5xx fails the walkthrough; one answered 4xx fails it unless the block
 * says that status in a comment (the microservices page's "409 while a container uses it").
 */
import assert from "node:assert/strict";
import * as v from "valibot";
import { NodeConfigSchema } from "../gen/config/validators.ts";
import { DENO_DIR } from "./helpers/cli_env.ts";
import { startFileServer } from "../testing/file_server.ts";
import { ggufBytes, withTempDir } from "../testing/node.ts";
import { startHfHub } from "../testing/hf_hub.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";
import { ensureTestEngine, TEST_ENGINE_DIR } from "../testing/engine.ts";
import {
  type ShellBlock,
  shellBlocks,
  type Substitution,
  WALKTHROUGH_FILES,
  type WalkthroughScript,
  walkthroughScript,
} from "./helpers/readme_blocks.ts";

const REPO = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

/** Blocks not run, each found by a piece of its text, with the reason. */
const NOT_RUN: { containing: string; why: string }[] = [
  {
    containing: "sudo sh deploy/install.sh",
    why:
      "installs a system service: tests/deploy_test.ts runs install.sh staged and as root in a " +
      "mount namespace, and the unit's ExecStart as written",
  },
  { containing: "deno task compile --all", why: "deno compile cannot download denort here" },
  {
    containing: "head -c 32 /dev/urandom > cluster.key",
    why: "names a NATS server and hubs on other machines: tests/hub_cluster_test.ts runs the " +
      "same (nats-server with JetStream and a password, hubs with the key in the data dir and " +
      "--nats, their health, deploy/haproxy-hub.cfg in front)",
  },
  {
    containing: "sudo userdel edgenode",
    why:
      "removes a system service: tests/deploy_test.ts installs one, as root in a mount namespace",
  },
  {
    containing: "edgenode completion fish > ~/.config/fish",
    why: "writes into the user's shell start-up files, for zsh and fish too: " +
      "tests/cli_commands_test.ts completes with the bash script and has zsh and fish parse theirs",
  },
  {
    containing: "deno task bundle                       # writes",
    why: "tests/bundle_test.ts runs the bundle with exactly these flags, offline",
  },
];

/** Where the README's URLs that leave this machine go instead. */
function substitutions(port: number, modelSource: string, hubPort: number) {
  return [
    ...(port === 8083 ? [] : [{ from: /\b8083\b/g, to: String(port) }]),
    { from: "https://huggingface.co", to: modelSource },
    { from: "https://hub.example.com", to: `http://127.0.0.1:${hubPort}` },
  ];
}

/** `wanted` when it is free, else any free port. */
function freePort(wanted = 0): number {
  let listener: Deno.Listener;
  try {
    listener = Deno.listen({ hostname: "127.0.0.1", port: wanted });
  } catch {
    listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  }
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

function blockChosen(block: ShellBlock): boolean {
  return !NOT_RUN.some((skip) => block.text.includes(skip.containing));
}

/** Every block of the walkthrough's files, in their order. */
async function allBlocks(): Promise<ShellBlock[]> {
  const blocks: ShellBlock[] = [];
  for (const file of WALKTHROUGH_FILES) {
    blocks.push(...shellBlocks(await Deno.readTextFile(`${REPO}/${file}`), file));
  }
  return blocks;
}

/** What a file's run printed, and which of its requests were answered with what. */
interface FileRun {
  file: string;
  code: number;
  out: string;
  walkthrough: WalkthroughScript;
  statuses: string;
}

/** What runFile needs: the walkthrough's folder, prelude and environment, and one file's blocks. */
interface FileToRun {
  work: string;
  prelude: string;
  env: Record<string, string>;
  file: string;
  blocks: ShellBlock[];
  subs: Substitution[];
  index: number;
}

/** One file's blocks as one script, run by a bash of its own (nothing of another file's shell). */
async function runFile(
  { work, prelude, env, file, blocks, subs, index }: FileToRun,
): Promise<FileRun> {
  const walkthrough = walkthroughScript(prelude, blocks, subs);
  await Deno.writeTextFile(`${work}/walkthrough-${index}.sh`, walkthrough.script);
  const statuses = `${work}/statuses-${index}`;
  await Deno.writeTextFile(statuses, "");
  const run = await new Deno.Command("bash", {
    args: [`${work}/walkthrough-${index}.sh`],
    env: { ...env, STATUSES: statuses },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const out = new TextDecoder().decode(run.stdout) + new TextDecoder().decode(run.stderr);
  return { file, code: run.code, out, walkthrough, statuses };
}

Deno.test("a file's blocks never see a variable another file set: the failure names file and line", () =>
  withTempDir(async (work) => {
    await Deno.mkdir(`${work}/cwd`);
    const prelude = await Deno.readTextFile(
      new URL("./helpers/walkthrough_prelude.sh", import.meta.url),
    );
    const env = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", WORK: work };
    const run = (file: string, markdown: string, index: number) =>
      runFile({ work, prelude, env, file, blocks: shellBlocks(markdown, file), subs: [], index });
    const first = await run("docs/a.md", '# A\n\n```sh\nexport N=1 && M=2\necho "$N$M"\n```\n', 0);
    assert.equal(first.code, 0, first.out);
    const second = await run("docs/b.md", '# B\n\n```sh\ntrue\necho "$N"\n```\n', 1);
    assert.notEqual(second.code, 0);
    assert.match(second.out, /N: unbound variable/);
    assert.match(failedWhere(second), /^docs\/b\.md:5/);
  }));

/** The first line of the file that a failure report points at (`docs/hub.md:21: CMD`). */
function failedWhere(run: FileRun): string {
  // The failing command's line, then its callers' (a failure inside a harness function); or
  // where bash itself stopped the script, which no ERR trap sees (an unset variable under -u).
  const failedAt = /::failed at script lines ([\d ]+): (.*)/.exec(run.out) ??
    /walkthrough-\d+\.sh: line (\d+): (.*)/.exec(run.out);
  const line = failedAt?.[1].trim().split(/\s+/).map((n) => run.walkthrough.readmeLine(+n))
    .find((n) => n !== undefined);
  return `${run.file}:${line ?? "?"}${failedAt ? `: ${failedAt[2]}` : ""}`;
}

/** Requests answered 5xx, or 4xx where the block does not say that status. */
async function refusedRequests(run: FileRun): Promise<string[]> {
  const refused: string[] = [];
  for (const line of (await Deno.readTextFile(run.statuses)).trim().split("\n").filter(Boolean)) {
    const [scriptLine, status] = line.split(" ").map(Number);
    const block = run.walkthrough.blockOf(scriptLine);
    const said = block?.text.split("\n").some((text) =>
      text.includes("#") && text.slice(text.indexOf("#")).includes(String(status))
    );
    if (status >= 500 || (status >= 400 && !said)) {
      refused.push(`${run.file}:${run.walkthrough.readmeLine(scriptLine)}: answered ${status}`);
    }
  }
  return refused;
}

/** A comment that is a whole JSON value, nothing abridged ("..."), is what the command prints. */
function checkShownJson(blocks: ShellBlock[], out: string) {
  for (const block of blocks) {
    for (const shown of block.text.matchAll(/^# (\{.*\})$/gm)) {
      if (shown[1].includes("...")) continue;
      const value = (() => {
        try {
          return JSON.stringify(JSON.parse(shown[1]));
        } catch {
          return undefined; // abridged ("...") or annotated: only shows the shape
        }
      })();
      if (value) assert.ok(out.includes(value), `${block.file}:${block.line}ff shows ${value}`);
    }
  }
}

Deno.test("every page of docs/ is in the walkthrough's list, and every listed file exists", async () => {
  const pages = [];
  for await (const entry of Deno.readDir(`${REPO}/docs`)) {
    if (entry.name.endsWith(".md")) pages.push(`docs/${entry.name}`);
  }
  const unlisted = pages.filter((page) => !WALKTHROUGH_FILES.includes(page));
  assert.deepEqual(unlisted, [], "add these to WALKTHROUGH_FILES (tests/helpers/readme_blocks.ts)");
  for (const file of WALKTHROUGH_FILES) await Deno.stat(`${REPO}/${file}`);
});

Deno.test("the README's and docs' shell blocks run as written, in order, against a fresh node", () =>
  withTempDir(async (work) => {
    const blocks = await allBlocks();
    for (const skip of NOT_RUN) {
      const found = blocks.filter((block) => block.text.includes(skip.containing));
      assert.equal(found.length, 1, `NOT_RUN entry '${skip.containing}' matches ${found.length}`);
    }
    await ensureTestEngine();
    await using source = startFileServer();
    // `edgenode pull hf.co/USER/REPO:QUANT` asks the stand-in Hub (HF_ENDPOINT), which serves the
    // tiny model as that repository's file of that quantisation.
    await using hfHub = startHfHub();
    const chosen = blocks.filter(blockChosen);
    for (const block of chosen) {
      for (const [, repo, quant] of block.text.matchAll(/hf\.co\/([\w.-]+\/[\w.-]+):(\w+)/g)) {
        hfHub.repository(repo, { [`${repo.split("/")[1]}-${quant}.gguf`]: tinyLlamaGguf() });
      }
      for (const match of block.text.matchAll(/https:\/\/huggingface\.co(\/[^"'\s]+)/g)) {
        // A real model, however large the one named: the walkthrough chats with it.
        source.serve(match[1], tinyLlamaGguf());
      }
    }
    await Deno.mkdir(`${work}/cwd`, { recursive: true });
    await Deno.mkdir(`${work}/home`);
    await Deno.writeFile(`${work}/cwd/Qwen3-1.7B-Q4_K_M.gguf`, ggufBytes(8192, 2));
    await new Deno.Command("cp", { args: ["-r", `${REPO}/examples`, `${work}/cwd/`] }).output();
    // The README's own port, so the CLI's default node is this one; another where it is taken.
    const port = freePort(8083);
    if (port !== 8083) console.log(`port 8083 is taken: the walkthrough's node uses ${port}`);
    const hubPort = freePort();
    const prelude = await Deno.readTextFile(
      new URL("./helpers/walkthrough_prelude.sh", import.meta.url),
    );
    const env = {
      HOME: `${work}/home`,
      // The README's install step puts edgenode in ~/.local/bin: on the PATH of every later file.
      PATH: `${work}/home/.local/bin:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
      DENO_DIR, // the cache in use: a fresh HOME does not download every package again
      // Likewise the inference engine (npm, 85 MB): the one the tests share.
      EDGENODE_ENGINE_DIR: TEST_ENGINE_DIR,
      HF_ENDPOINT: hfHub.url,
      DENO: Deno.execPath(),
      REPO,
      WORK: work,
      PORT: String(port),
      HUB_PORT: String(hubPort),
      NO_COLOR: "1",
      ...(port === 8083 ? {} : { EDGENODE_NODE: `http://127.0.0.1:${port}` }),
    };
    const runs: FileRun[] = [];
    try {
      for (const [i, file] of WALKTHROUGH_FILES.entries()) {
        const own = chosen.filter((block) => block.file === file);
        const subs = substitutions(port, source.url, hubPort);
        const fileRun = await runFile({ work, prelude, env, file, blocks: own, subs, index: i });
        const { out } = fileRun;
        runs.push(fileRun);
        const log = await Deno.readTextFile(`${work}/node.log`).catch(() => "(none)");
        assert.equal(
          fileRun.code,
          0,
          `the walkthrough stopped at ${failedWhere(fileRun)}\n--- output (end)\n` +
            `${out.slice(-6000)}\n--- node log (end)\n${log.slice(-3000)}`,
        );
        assert.deepEqual(
          await refusedRequests(fileRun),
          [],
          `requests ${file} does not expect to fail:\n${out}`,
        );
        checkShownJson(own, out);
      }
    } finally {
      await new Deno.Command("bash", {
        args: ["-c", `${prelude}\n__stop_all`],
        env: { ...env, STATUSES: "/dev/null" },
      }).output();
    }
    if (chosen.some((block) => /edgenode pull hf\.co\//.test(block.text))) {
      assert.ok(
        hfHub.requests.some((path) => path.includes("/resolve/")),
        `no pull reached the Hub:\n${runs.map((run) => run.out).join("\n")}`,
      );
    }
  }));

Deno.test("the docs' config.json examples are valid config files", async () => {
  let examples = 0;
  for (const file of WALKTHROUGH_FILES) {
    const markdown = await Deno.readTextFile(`${REPO}/${file}`);
    for (const [, example] of markdown.matchAll(/```json\n([\s\S]*?)\n```/g)) {
      examples++;
      const result = v.safeParse(NodeConfigSchema, JSON.parse(example));
      assert.ok(result.success, `${file}: ${example}\n${JSON.stringify(result.issues)}`);
    }
  }
  assert.ok(examples > 0, "the docs show a config.json");
});
