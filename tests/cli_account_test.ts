/**
 * `edgenode account-token` against a real node, and how every command added with it and with
 * the microservice commands refuses bad usage (exit 2), shows its help and corrects typos.
 */
import assert from "node:assert/strict";
import { edgenode } from "./helpers/cli_env.ts";
import { cliToken, makeIssuer } from "../testing/identity.ts";
import { startTestNode, withTempDir } from "../testing/node.ts";

const KEY = "an-api-key-nobody-may-see";
const CONFIG = { apiKey: KEY, discovery: { mdns: false } };

Deno.test("account-token stores the token from a file, stdin or an argument, and clears it", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    await using node = await startTestNode({ config: CONFIG, args: ["--trust", issuer.trustFile] });
    const env = { EDGENODE_NODE: node.url, EDGENODE_API_KEY: KEY };
    const run = async (args: string[], code: number, stdin?: string) => {
      const result = await edgenode(["account-token", ...args], env, stdin);
      assert.equal(result.code, code, `${args.join(" ")}: ${result.stdout}${result.stderr}`);
      return result;
    };
    const accountNodes =
      async () => (await fetch(`${node.url}/mesh/insight/v1/nodes?type=account`, {
        headers: { Authorization: `Bearer ${KEY}` },
      }).then((r) => (r.body?.cancel(), r.status)));
    assert.equal(
      (await edgenode(
        ["associate", await cliToken(issuer, "acct-7", "edge:account:associate")],
        env,
      )).code,
      0,
    );
    const token = await cliToken(issuer, "acct-7", "edge:clusters");
    await Deno.writeTextFile(`${dir}/token`, `${token}\n`, { mode: 0o600 });

    assert.equal(await accountNodes(), 403, "no token yet");
    const stored = await run(["--token-file", `${dir}/token`], 0);
    assert.match(
      stored.stdout,
      /^stored the account token \(account acct-7, expires \d{4}-\d\d-\d\d \d\d:\d\d UTC\)$/m,
    );
    assert.equal(await accountNodes(), 503, "stored: only the hub is missing");
    assert.equal((await run(["--clear"], 0)).stdout, "cleared the account token\n");
    assert.equal(await accountNodes(), 403, "cleared");
    assert.deepEqual(JSON.parse((await run(["-", "--json"], 0, `${token}\n`)).stdout), {
      status: "ok",
    });
    assert.equal(await accountNodes(), 503, "stored from stdin");
    await run(["--clear"], 0);
    await run([token], 0);
    assert.equal(await accountNodes(), 503, "stored from the argument");

    const other = await cliToken(issuer, "acct-8", "edge:clusters");
    const refused = await run([other], 1);
    assert.match(refused.stderr, /^edgenode: storing the account token: 400 .*acct-8/);
    for (const result of [stored, refused]) {
      assert.ok(
        !`${result.stdout}${result.stderr}`.includes(token.split(".")[2]),
        "no token printed",
      );
    }
    for (const bad of [[], ["a", "b"], ["--clear", token], ["--token-file", `${dir}/token`, "-"]]) {
      const result = await run(bad, 2);
      assert.equal(
        result.stderr,
        "edgenode: usage: edgenode account-token --token-file FILE | - | TOKEN, or --clear\n",
      );
    }
    const empty = await run(["-"], 2, "\n");
    assert.equal(empty.stderr, "edgenode: standard input holds no token\n");
  }));

Deno.test("the new commands: usage errors exit 2, --help shows their usage, typos get 'did you mean'", async () => {
  const cases: [string[], RegExp][] = [
    [
      ["containers"],
      /^edgenode: usage: edgenode containers ls\|logs NAME \[-f\]\|stop NAME\|restart NAME\|rm NAME \[--purge\]\n$/,
    ],
    [["containers", "lss"], /^edgenode: unknown containers command 'lss'; did you mean 'ls'\?/],
    [
      ["containers", "logs"],
      /^edgenode: usage: edgenode containers logs NAME\|ID \[-f\|--follow\]\n$/,
    ],
    [
      ["containers", "rm", "a", "b"],
      /^edgenode: usage: edgenode containers rm NAME\|ID \[--purge\]\n$/,
    ],
    [["containers", "ls", "--bogus"], /^edgenode: unknown option --bogus/],
    [["images", "rm"], /^edgenode: usage: edgenode images rm NAME\|ID\n$/],
    [["images", "lx"], /^edgenode: unknown image command 'lx'; did you mean 'ls'\?/],
    [["deploy"], /^edgenode: usage: edgenode deploy DIR\|FILE\|IMAGE\.tar /],
    [
      ["deploy", "x.tar", "--env", "A=1", "--env", "=hunter2"],
      /^edgenode: --env takes KEY=VALUE: --env #2 has no key\n$/,
    ],
    [
      ["deploy", "x.tar", "--env", "hunter2"],
      /^edgenode: --env takes KEY=VALUE: --env #1 has no '='\n$/,
    ],
    [["containres"], /^edgenode: unknown command 'containres'; did you mean 'containers'\?/],
    [["acount-token"], /^edgenode: unknown command 'acount-token'; did you mean 'account-token'\?/],
    [["models", "lss"], /^edgenode: unknown models command 'lss'; did you mean 'ls'\?/],
    [
      ["models"],
      /^edgenode: usage: edgenode models ls\|show\|add\|push\|pull\|set\|rm\|cat\|load\|unload /,
    ],
  ];
  for (const [args, expected] of cases) {
    const result = await edgenode(args, { EDGENODE_KEY: KEY });
    assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
    assert.match(result.stderr, expected);
  }
  for (
    const [command, usage] of [
      ["containers", /^ {2}edgenode containers logs NAME\|ID \[-f\|--follow\]$/m],
      ["images", /^ {2}edgenode images rm NAME\|ID$/m],
      ["image", /^ {2}edgenode image push IMAGE\.tar .*\n.*deploy's credential[^]*--node URL/m],
      ["account-token", /^ {2}edgenode account-token --clear$/m],
      ["deploy", /--key-file FILE/],
    ] as const
  ) {
    const help = await edgenode([command, "--help"], {});
    assert.equal(help.code, 0);
    assert.match(help.stdout, usage);
  }
});
