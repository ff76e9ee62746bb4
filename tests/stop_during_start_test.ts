/**
 * A stop signal that comes while the node starts (systemd stopping a slow start, a script that
 * stops at once) waits for the start and shuts the node down cleanly: exit 0 and its database
 * closed, with no -wal file left beside it. Before, the served process died of the signal with
 * its database open, and the -wal file it left covered whatever was written over the database.
 */
import assert from "node:assert/strict";
import {
  LAUNCHER_PERMISSIONS,
  MAIN,
  waitFor,
  withPrivateGroup,
  withTempDir,
} from "../testing/node.ts";

Deno.test("a SIGTERM while the node starts: it starts, then stops cleanly with its database closed", () =>
  withTempDir(async (dataDir) => {
    const config = withPrivateGroup({ apiKey: "a-test-key-of-enough-length" });
    await Deno.writeTextFile(`${dataDir}/config.json`, JSON.stringify(config), { mode: 0o600 });
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", ...LAUNCHER_PERMISSIONS, MAIN, "serve", "--port", "0", "--data-dir", dataDir],
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const output = child.output();
    // The served process has opened its database (in WAL mode) and is still starting.
    await waitFor(() => exists(`${dataDir}/edgenode.db-wal`), "the database opened", 30_000);
    child.kill("SIGTERM");
    const { code, stdout, stderr } = await output;
    const printed = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
    assert.equal(code, 0, printed);
    assert.match(printed, /stopping \(SIGTERM\)/);
    assert.equal(await exists(`${dataDir}/edgenode.db-wal`), false, "the database was closed");
  }));

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}
