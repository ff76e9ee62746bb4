import assert from "node:assert/strict";
import { invocation, isThisMachine, splitSubcommand } from "./cli_context.ts";

Deno.test("only a node on this machine counts as local", () => {
  for (const url of ["http://127.0.0.1:8083", "http://127.1.2.3", "http://localhost:9"]) {
    assert.ok(isThisMachine(url), url);
  }
  assert.ok(isThisMachine("http://[::1]:8083"));
  assert.ok(isThisMachine("http://LOCALHOST:8083"));
  for (
    const url of [
      "http://10.0.0.5:8083",
      "http://pi3.local:8083",
      "http://127.0.0.1.example.com",
      "http://[::ffff:10.0.0.1]",
      "https://hub.example.com",
    ]
  ) {
    assert.equal(isThisMachine(url), false, url);
  }
});

Deno.test("the local node's key from its config file goes only to a node on this machine", async () => {
  const dataDir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dataDir}/config.json`,
      JSON.stringify({ apiKey: "local-key-0123456789" }),
    );
    const env = (name: string) => ({ EDGENODE_DATA_DIR: dataDir } as Record<string, string>)[name];
    const local = invocation(["--node", "http://127.0.0.1:8083"], {}, env);
    assert.equal(local.connection.credential, "local-key-0123456789");
    const remote = invocation(["--node", "http://10.0.0.5:8083"], {}, env);
    assert.equal(remote.connection.credential, undefined);
    const given = invocation(["--node", "http://10.0.0.5:8083", "--api-key", "k"], {}, env);
    assert.equal(given.connection.credential, "k", "a key the user gives goes where they say");
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("splitSubcommand: the subcommand after the global flags, the rest in order", () => {
  for (
    const [args, sub, rest] of [
      [["ls", "--kind", "llm"], "ls", ["--kind", "llm"]],
      [["--node", "http://n:1", "stop", "x"], "stop", ["--node", "http://n:1", "x"]],
      [["--node=http://n:1", "--json", "ls"], "ls", ["--node=http://n:1", "--json"]],
      [["--api-key", "k", "--json"], undefined, ["--api-key", "k", "--json"]],
      [["--key-file", "/k", "stop", "x"], "stop", ["--key-file", "/k", "x"]],
      [["--frce", "rm"], "--frce", ["rm"]],
      [[], undefined, []],
    ] as const
  ) assert.deepEqual(splitSubcommand(args), { sub, rest }, args.join(" "));
});
