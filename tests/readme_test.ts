/**
 * The README runs as written: every ```sh block (and ```ts block, with Deno), in order, in one
 * bash session with a fresh HOME, against the node its first block starts
 * (`npx -y deno@2.9.6 task start`), with the `edgenode` command its install step puts on the PATH. The harness only
 * points the README at this machine: the model source and the hub's public name become servers
 * the test starts, and where port 8083 is taken the node uses another (and the text follows).
 * `edgenode serve` and `edgenode hub` in a block (re)start that process in the background. A
 * block that cannot run here is listed below with the reason; a new block runs unless it is
 * listed, and a listed block that no longer exists fails the test.
 *
 * A request answered 5xx fails the walkthrough; one answered 4xx fails it unless the block
 * says that status in a comment (the README's own "409 while a container uses it").
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
import { type ShellBlock, shellBlocks, walkthroughScript } from "./helpers/readme_blocks.ts";

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
    containing: "deno task bundle                       # writes",
    why: "tests/bundle_test.ts runs the bundle with exactly these flags, offline",
  },
];

/** What the harness defines before the README's blocks. */
const PRELUDE = String.raw`set -eEuo pipefail
trap 'echo "::failed at script lines $LINENO ${"${BASH_LINENO[*]}"}: $BASH_COMMAND" >&2' ERR
curl() {
  local headers rc=0
  headers=$(mktemp)
  command curl -D "$headers" "$@" || rc=$?
  awk -v l="${"${BASH_LINENO[0]}"}" 'toupper($1) ~ /^HTTP\// {s=$2} END {if (s) print l, s}' \
    "$headers" >> "$STATUSES"
  rm -f "$headers"
  return $rc
}
__wait_for() { # URL PID: until the URL answers, while the process lives
  for _ in $(seq 1 300); do
    command curl -s -o /dev/null "$1" && return 0
    kill -0 "$2" 2>/dev/null || { echo "it exited before answering at $1" >&2; return 1; }
    sleep 0.1
  done
  echo "nothing answers at $1" >&2; return 1
}
__stop() { # a process group started by __start
  [ -n "${"${1:-}"}" ] || return 0
  kill -TERM -- "-$1" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 -- "-$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL -- "-$1" 2>/dev/null || true
}
__node_pid=""
__hub_pid=""
__serve() {
  __stop "$__node_pid"
  setsid "$@" --host 127.0.0.1 --port "$PORT" >> "$WORK/node.log" 2>&1 &
  __node_pid=$!
  __wait_for "http://127.0.0.1:$PORT/mds/v1/nodes?ping=true" "$__node_pid"
}
__hub() {
  __stop "$__hub_pid"
  setsid "$@" --host 127.0.0.1 --port "$HUB_PORT" >> "$WORK/hub.log" 2>&1 &
  __hub_pid=$!
  __wait_for "http://127.0.0.1:$HUB_PORT/" "$__hub_pid"
}
trap '__stop "$__node_pid"; __stop "$__hub_pid"' EXIT
npx() { # "npx -y deno@2.9.6 task T", as typed in the checkout
  case "$*" in
    "-y deno@2.9.6 task start"*) shift 4; __serve "$DENO" task --config "$REPO/deno.json" start "$@" ;;
    "-y deno@2.9.6 task test"*) echo "(the test suite itself: not run from inside it)" ;;
    "-y deno@2.9.6 task "*) shift 3; "$DENO" task --config "$REPO/deno.json" "$@" ;;
    *) command npx "$@" ;;
  esac
}
runTs() { # the SDK as a program beside the checkout imports it (by its package name)
  "$DENO" run --no-prompt --config "$REPO/deno.json" --allow-net --allow-env --allow-read "$1"
}
edgenode() {
  case "${"${1:-}"}" in
    serve) shift; __serve "$(command -v edgenode)" serve "$@" ;;
    hub) shift; __hub "$(command -v edgenode)" hub "$@" ;;
    *) command edgenode "$@" ;;
  esac
}
cd "$WORK/cwd"`;

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

Deno.test("the README's shell blocks run as written, in order, against a fresh node", () =>
  withTempDir(async (work) => {
    const blocks = shellBlocks(await Deno.readTextFile(`${REPO}/README.md`));
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
    }
    for (const block of chosen) {
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
    const walkthrough = walkthroughScript(
      PRELUDE,
      chosen,
      substitutions(port, source.url, hubPort),
    );
    await Deno.writeTextFile(`${work}/walkthrough.sh`, walkthrough.script);
    const statuses = `${work}/statuses`;
    await Deno.writeTextFile(statuses, "");
    const run = await new Deno.Command("bash", {
      args: [`${work}/walkthrough.sh`],
      env: {
        HOME: `${work}/home`,
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", // the README's install step adds edgenode
        DENO_DIR, // the cache in use: a fresh HOME does not download every package again
        // Likewise the inference engine (npm, 85 MB): the one the tests share.
        EDGENODE_ENGINE_DIR: TEST_ENGINE_DIR,
        HF_ENDPOINT: hfHub.url,
        DENO: Deno.execPath(),
        REPO,
        WORK: work,
        PORT: String(port),
        HUB_PORT: String(hubPort),
        STATUSES: statuses,
        NO_COLOR: "1",
        ...(port === 8083 ? {} : { EDGENODE_NODE: `http://127.0.0.1:${port}` }),
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(run.stdout) + new TextDecoder().decode(run.stderr);
    if (chosen.some((block) => /edgenode pull hf\.co\//.test(block.text))) {
      assert.ok(
        hfHub.requests.some((path) => path.includes("/resolve/")),
        `no pull reached the Hub:\n${out}`,
      );
    }
    // The failing command's line, then its callers' (a failure inside a harness function).
    const failedAt = /::failed at script lines ([\d ]+): (.*)/.exec(out);
    const readmeLine = failedAt?.[1].trim().split(/\s+/).map((n) => walkthrough.readmeLine(+n))
      .find((n) => n !== undefined);
    const where = failedAt && `README.md:${readmeLine ?? "?"}: ${failedAt[2]}`;
    const logs = async (name: string) =>
      await Deno.readTextFile(`${work}/${name}`).catch(() => "(none)");
    assert.equal(
      run.code,
      0,
      `the walkthrough stopped at ${where ?? "?"}\n--- output (end)\n${out.slice(-6000)}\n` +
        `--- node log (end)\n${(await logs("node.log")).slice(-3000)}`,
    );
    const refused: string[] = [];
    for (const line of (await Deno.readTextFile(statuses)).trim().split("\n").filter(Boolean)) {
      const [scriptLine, status] = line.split(" ").map(Number);
      const block = walkthrough.blockOf(scriptLine);
      const said = block?.text.split("\n").some((text) =>
        text.includes("#") && text.slice(text.indexOf("#")).includes(String(status))
      );
      if (status >= 500 || (status >= 400 && !said)) {
        refused.push(`README.md:${walkthrough.readmeLine(scriptLine)}: answered ${status}`);
      }
    }
    assert.deepEqual(refused, [], `requests the README does not expect to fail:\n${out}`);
    // A comment that is a whole JSON value, nothing abridged ("..."), is what the command prints.
    for (const block of chosen) {
      for (const shown of block.text.matchAll(/^# (\{.*\})$/gm)) {
        if (shown[1].includes("...")) continue;
        const value = (() => {
          try {
            return JSON.stringify(JSON.parse(shown[1]));
          } catch {
            return undefined; // abridged ("...") or annotated: only shows the shape
          }
        })();
        if (value) assert.ok(out.includes(value), `README.md:${block.line}ff shows ${value}`);
      }
    }
  }));

Deno.test("the README's config.json examples are valid config files", async () => {
  const markdown = await Deno.readTextFile(`${REPO}/README.md`);
  const examples = [...markdown.matchAll(/```json\n([\s\S]*?)\n```/g)].map((m) => m[1]);
  assert.ok(examples.length > 0, "the README shows a config.json");
  for (const example of examples) {
    const result = v.safeParse(NodeConfigSchema, JSON.parse(example));
    assert.ok(result.success, `${example}\n${JSON.stringify(result.issues)}`);
  }
});
