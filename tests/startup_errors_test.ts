/**
 * A start that cannot work stops at once with one line that names the file and the fix, exit 2:
 * a data directory (or its database, or its model store) that cannot be written, a node key or a
 * database that is not one, a config file that is not JSON; for the node and for the hub. A key
 * file others may read is warned about. Read-only is made with permission bits, or, as root
 * (whom they do not stop), with a read-only bind mount in a mount namespace of its own.
 */
import assert from "node:assert/strict";
import { makeIssuer } from "../testing/identity.ts";
import { LAUNCHER_PERMISSIONS, MAIN, startTestNode, withTempDir } from "../testing/node.ts";
import { type Finished, runToEnd } from "../testing/run.ts";

const CONFIG = { apiKey: "a-test-key-of-enough-length", discovery: { mdns: false } };

/** Whether this test runs as root. */
const ROOT_USER = new TextDecoder().decode(
  (await new Deno.Command("id", { args: ["-u"], stdout: "piped" }).output()).stdout,
).trim() === "0";

/** Whether `unshare -m` works here (a mount namespace for the read-only bind mounts). */
const CAN_UNSHARE = await new Deno.Command("unshare", { args: ["-m", "true"], stderr: "null" })
  .output().then((output) => output.success, () => false);

/** How a path is made read-only for the next start: undefined when it cannot be here. */
const READ_ONLY_MEANS = !ROOT_USER ? "chmod" : CAN_UNSHARE ? "bind mount" : undefined;

/** What `edgenode ARGS` printed and its exit code; killed (and failed) after 30 s. */
async function edgenode(
  args: string[],
  readOnly: string[] = [],
): Promise<Finished> {
  let command = [Deno.execPath(), "run", ...LAUNCHER_PERMISSIONS, MAIN, ...args];
  if (readOnly.length > 0 && READ_ONLY_MEANS === "bind mount") {
    const mounts = readOnly.map((_, i) => `mount --bind -o ro "$${i + 1}" "$${i + 1}"`);
    command = [
      "unshare",
      "-m",
      "sh",
      "-c",
      `${mounts.join(" && ")} && shift ${readOnly.length} && exec "$@"`,
      "sh",
      ...readOnly,
      ...command,
    ];
  }
  const modes = new Map<string, number>();
  if (READ_ONLY_MEANS === "chmod") {
    for (const path of readOnly) {
      const mode = (await Deno.stat(path)).mode! & 0o777;
      modes.set(path, mode);
      await Deno.chmod(path, mode & 0o555);
    }
  }
  try {
    return await runToEnd(command[0], {
      args: command.slice(1),
      env: { NO_COLOR: "1" },
      signal: AbortSignal.timeout(30_000),
    });
  } finally {
    for (const [path, mode] of modes) await Deno.chmod(path, mode);
  }
}

/** Asserts one line on stderr matching `pattern`, and exit 2. */
function assertOneLine(result: { code: number; stderr: string }, pattern: RegExp): void {
  const lines = result.stderr.trim().split("\n");
  assert.equal(lines.length, 1, result.stderr);
  assert.match(lines[0], pattern);
  assert.equal(result.code, 2, result.stderr);
}

/** A data directory a node has run in (database, key, model store), with CONFIG. */
async function usedDataDir(dataDir: string): Promise<void> {
  await Deno.writeTextFile(`${dataDir}/config.json`, JSON.stringify(CONFIG), { mode: 0o600 });
  await using _node = await startTestNode({ dataDir });
}

const serve = (
  dataDir: string,
) => ["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", dataDir];

/** The fix a read-only path is named with, by how it was made read-only. */
const READ_ONLY_FIX = READ_ONLY_MEANS === "chmod"
  ? "cannot be written \\(Permission denied\\): give it to the user edgenode runs as"
  : "is on a read-only file system: mount it read-write, or pass another --data-dir";

Deno.test({
  name: "a data directory, database or model store that cannot be written: one line, exit 2",
  ignore: READ_ONLY_MEANS === undefined,
  fn: () =>
    withTempDir(async (dir) => {
      const dataDir = await Deno.realPath(dir);
      await usedDataDir(dataDir);
      await Deno.mkdir(`${dataDir}/models/m`, { recursive: true });
      for (const path of [dataDir, `${dataDir}/edgenode.db`, `${dataDir}/models/m`]) {
        const result = await edgenode(serve(dataDir), [path]);
        assertOneLine(result, new RegExp(`^edgenode: ${path} ${READ_ONLY_FIX}`));
        assert.doesNotMatch(result.stdout, /listening/);
      }
      const hubDir = `${dataDir}/hub`;
      const issuer = await makeIssuer(`${dataDir}/issuer`);
      const hub = ["hub", "--host", "127.0.0.1", "--port", "0", "--data-dir", hubDir];
      await Deno.mkdir(hubDir);
      assertOneLine(
        await edgenode([...hub, "--trust", issuer.trustFile], [hubDir]),
        new RegExp(`^edgenode: ${hubDir} ${READ_ONLY_FIX}`),
      );
    }),
});
if (READ_ONLY_MEANS === undefined) {
  console.log("note: running as root without unshare -m: read-only data directories not tested");
}

Deno.test("a data directory that a file stands in the way of: named, and not 'make it for the user'", () =>
  withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/file`, "");
    for (
      const [dataDir, reason] of [[`${dir}/file`, "File exists"], [
        `${dir}/file/sub`,
        "Not a directory",
      ]]
    ) {
      assertOneLine(
        await edgenode(serve(dataDir)),
        new RegExp(
          `^edgenode: cannot make the data directory ${dataDir} \\(${reason}\\): pass another --data-dir$`,
        ),
      );
    }
  }));

Deno.test("a node key that is not one: one line naming it and the way out, nothing of it shown", () =>
  withTempDir(async (dir) => {
    const dataDir = await Deno.realPath(dir);
    await usedDataDir(dataDir);
    const keyFile = `${dataDir}/identity/node-key.json`;
    const key = JSON.parse(await Deno.readTextFile(keyFile));
    const other = { ...key, x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" };
    const cases: [string, string][] = [
      ["garbage" + key.d, "the file is not JSON"],
      ["", "the file is empty"],
      [JSON.stringify({ kty: "RSA" }), "it holds no Ed25519 private key"],
      [JSON.stringify(other), "its public and private halves do not match"],
    ];
    for (const [text, reason] of cases) {
      await Deno.writeTextFile(keyFile, text);
      const result = await edgenode(serve(dataDir));
      assertOneLine(
        result,
        new RegExp(
          `^edgenode: ${keyFile} is not a valid node key \\(${reason}\\): restore it from a ` +
            "backup, or move it away to make a new identity \\(the node id will change\\)$",
        ),
      );
      assert.ok(!result.stderr.includes(key.d), "the private key is never printed");
    }
    await Deno.writeTextFile(keyFile, JSON.stringify(key), { mode: 0o644 });
    await Deno.chmod(keyFile, 0o644);
    await using node = await startTestNode({ dataDir });
    assert.match(
      node.output(),
      new RegExp(`warning: ${keyFile} is readable by others \\(mode 644\\); run chmod 600 on it`),
    );
  }));

Deno.test("a database that is not one, and a config file that is not JSON: one line, exit 2", () =>
  withTempDir(async (dir) => {
    const dataDir = await Deno.realPath(dir);
    await usedDataDir(dataDir);
    const junk = "this is not an SQLite database, whatever its name says. ".repeat(100);
    // The -wal file goes too: a WAL left by a node that stopped without closing the database
    // (its 10 s grace ran out on a loaded machine) holds page 1, which SQLite reads there.
    for (const file of ["-wal", "-shm"]) {
      await Deno.remove(`${dataDir}/edgenode.db${file}`).catch(() => {});
    }
    await Deno.writeTextFile(`${dataDir}/edgenode.db`, junk);
    assertOneLine(
      await edgenode(serve(dataDir)),
      new RegExp(
        `^edgenode: ${dataDir}/edgenode.db is not a usable SQLite database \\(file is not a ` +
          "database\\): restore it \\(with its -wal file\\) from a backup, or start over with " +
          "another --data-dir$",
      ),
    );
    await Deno.writeTextFile(`${dataDir}/config.json`, "{ apiKey: 'single quotes' }");
    assertOneLine(
      await edgenode(serve(dataDir)),
      new RegExp(`^edgenode: ${dataDir}/config.json is not valid JSON`),
    );

    const hubDir = `${dataDir}/hub`;
    const issuer = await makeIssuer(`${dataDir}/issuer`);
    await Deno.mkdir(hubDir);
    await Deno.writeTextFile(`${hubDir}/hub.db`, junk);
    assertOneLine(
      await edgenode([
        "hub",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--data-dir",
        hubDir,
        "--trust",
        issuer.trustFile,
      ]),
      new RegExp(`^edgenode: ${hubDir}/hub.db is not a usable SQLite database`),
    );
  }));

Deno.test("an issuer key that is not one: edgenode token names it and the way out", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const keyFile = `${issuer.dir}/issuer-key.json`;
    const key = JSON.parse(await Deno.readTextFile(keyFile));
    await Deno.writeTextFile(keyFile, JSON.stringify(key).slice(0, 60));
    const token = ["token", "--dir", issuer.dir, "--account", "a1", "--scope", "edge:mcm"];
    const result = await edgenode(token);
    assertOneLine(
      result,
      new RegExp(
        `^edgenode: ${keyFile} is not a valid issuer key \\(the file is not JSON\\): restore it ` +
          "from a backup, or make a new issuer in another --dir",
      ),
    );
    assert.ok(!result.stderr.includes(key.privateJwk.d.slice(0, 8)), "the key is never printed");
    for (const [text, reason] of [["null", "it names no issuer"], ["{}", "it names no issuer"]]) {
      await Deno.writeTextFile(keyFile, text);
      assertOneLine(
        await edgenode(token),
        new RegExp(`^edgenode: ${keyFile} is not a valid issuer key \\(${reason}\\): `),
      );
    }
    await Deno.writeTextFile(keyFile, JSON.stringify({ ...key, privateJwk: undefined }));
    assertOneLine(
      await edgenode(token),
      new RegExp(`is not a valid issuer key \\(it holds no Ed25519 private key\\): `),
    );
  }));
